"""The released versions of a package that can be installed here, oldest first.

The files come from the package index (its JSON simple API, as pip and uv read it) or from a
folder of wheels and sdists (``--find-links``). Pre-releases, development releases and yanked
files are left out, as an installer leaves them out; a version with no wheel for this Python
and platform is kept aside with that reason (building a C++ optimizer from its sdist for
each probe would take many minutes: pass the sdist to ``--against`` to build one).
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from fuzzer.errors import InputError
from fuzzer.upstream.spec import SDIST_ENDINGS

#: why a version is left aside that has files but no wheel for this interpreter.
NO_WHEEL = "no wheel for Python {python} on this platform"


@dataclass
class Releases:
    """A package's released versions.

    Attributes:
        versions: those with a wheel this interpreter can install, oldest first.
        skipped: version -> why it cannot be installed here.
    """

    versions: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def between(self, text: str | None) -> Releases:
        """The releases in the inclusive range ``A..B`` (either end may be left out:
        ``0.1.70..``, ``..0.3.13``); all of them for None.

        Raises:
            InputError: ``text`` is not of that form, names no valid version, or ends
                before it starts.
        """
        if not text:
            return self
        low, sep, high = text.partition("..")
        try:
            ends = [Version(v) if v.strip() else None for v in (low, high)]
        except InvalidVersion as exc:
            raise InputError(f"--target-versions {text}: {exc}") from None
        if not sep or ends == [None, None]:
            raise InputError(f"--target-versions {text}: expected A..B, A.. or ..B")
        if ends[0] and ends[1] and ends[0] > ends[1]:
            raise InputError(f"--target-versions {text}: {low} is newer than {high}")

        def inside(version: str) -> bool:
            v = Version(version)
            return (ends[0] is None or v >= ends[0]) and (ends[1] is None or v <= ends[1])

        return Releases([v for v in self.versions if inside(v)],
                        {v: why for v, why in self.skipped.items() if inside(v)})


def _entry(filename: str) -> tuple[str, Version, bool] | None:
    """(project, version, whether a wheel this interpreter installs) of a file name, or
    None for a name that is neither a wheel nor an sdist."""
    try:
        if filename.endswith(".whl"):
            name, version, _, tags = parse_wheel_filename(filename)
            return name, version, bool(tags & _here())
        if filename.endswith(SDIST_ENDINGS):
            name, version = parse_sdist_filename(filename)
            return name, version, False
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        pass
    return None


@functools.lru_cache(maxsize=1)
def _here() -> frozenset[Any]:
    """The wheel tags this interpreter installs."""
    return frozenset(sys_tags())


def _python_ok(requires: Any) -> bool:
    try:
        return not requires or platform.python_version() in SpecifierSet(str(requires))
    except InvalidSpecifier:
        return True


def releases_of(project: str, files: Iterable[dict[str, Any]]) -> Releases:
    """The :class:`Releases` of ``project`` among index file entries (``filename``,
    optional ``yanked`` and ``requires-python``)."""
    wanted = canonicalize_name(project)
    usable: dict[Version, bool] = {}
    for entry in files:
        parsed = _entry(str(entry.get("filename", "")))
        if parsed is None or parsed[0] != wanted or entry.get("yanked"):
            continue
        name, version, wheel = parsed
        if version.is_prerelease or version.is_devrelease:
            continue
        usable[version] = usable.get(version, False) or \
            (wheel and _python_ok(entry.get("requires-python")))
    why = NO_WHEEL.format(python=platform.python_version())
    return Releases([str(v) for v in sorted(usable) if usable[v]],
                    {str(v): why for v in sorted(usable) if not usable[v]})


def folder_files(folder: Path) -> list[dict[str, Any]]:
    """Index file entries of the wheels and sdists in ``folder`` (a ``--find-links``
    folder).

    Raises:
        InputError: ``folder`` is not a readable folder.
    """
    try:
        return [{"filename": p.name} for p in sorted(folder.iterdir()) if p.is_file()]
    except OSError as exc:
        raise InputError(f"{folder}: {exc.strerror or exc}") from None


def list_releases(project: str, find_links: Path | None = None) -> Releases:
    """The released versions of ``project``: from ``find_links`` (a folder of wheels and
    sdists) where given, else from the package index.

    Raises:
        InputError: the index cannot be reached, or the folder cannot be read.
    """
    from fuzzer.builds.sdist import index_files

    files = folder_files(find_links) if find_links else index_files(project)
    return releases_of(project, files)
