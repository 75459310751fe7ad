"""A SPEC: one build of a target's package to install into an environment of its own.

Four kinds: a released version (``onnxslim==0.1.80``, from the package index), a wheel file,
an sdist file, or a source checkout folder (built by the installer, or by optfuzz's own
offline build where :mod:`fuzzer.builds` has one for the project). A released version's
project and version are known before it is installed; a file's come from its name (the
wheel and sdist naming rules); a checkout's project from its ``pyproject.toml`` where it
declares one, its version only from what its build installs.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from fuzzer.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KINDS = ("release", "wheel", "sdist", "source")
#: endings of an sdist file name.
SDIST_ENDINGS = (".tar.gz", ".zip")


@dataclass(frozen=True)
class Spec:
    """One build of a package.

    Attributes:
        text: the SPEC as the installer takes it: ``name==version`` or an absolute path.
        kind: one of :data:`KINDS`.
        project: the canonical distribution name where known before installing, else None.
        version: the version where known before installing, else None.
    """

    text: str
    kind: str
    project: str | None = None
    version: str | None = None

    @property
    def path(self) -> Path | None:
        """The file or folder of a wheel, sdist or source SPEC; None for a release."""
        return None if self.kind == "release" else Path(self.text)

    def fingerprint(self) -> str:
        """What, beside :attr:`text`, decides the build: a file's sha256; for a checkout,
        its git HEAD commit with a digest of its uncommitted changes (a patch applied but
        not committed is another build), or outside git a digest of every file's path, size
        and modification time; "" for a release."""
        path = self.path
        if path is None:
            return ""
        if path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()
        head = _git(path, "rev-parse", "HEAD")
        if head is None:
            return _tree_digest(path)
        changes = _git(path, "diff", "HEAD", "--binary") or ""
        untracked = _git(path, "ls-files", "--others", "--exclude-standard") or ""
        if not changes and not untracked:
            return head.strip()
        digest = hashlib.sha256(changes.encode())
        for name in sorted(untracked.split()):
            file = path / name
            digest.update(name.encode() + (file.read_bytes() if file.is_file() else b""))
        return f"{head.strip()}+{digest.hexdigest()[:16]}"


def _git(folder: Path, *args: str) -> str | None:
    """``git -C folder ARGS``'s output, or None where git fails (no git, not a checkout)."""
    try:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _tree_digest(folder: Path) -> str:
    """A digest of the path, size and modification time (ns) of every file under
    ``folder`` but hidden folders and build output (``build*``)."""
    digest = hashlib.sha256()
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
        for name in sorted(files):
            stat = (Path(top) / name).stat()
            rel = os.path.relpath(Path(top) / name, folder)
            digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def release(project: str, version: str) -> Spec:
    """The SPEC of ``project`` at released ``version``."""
    name = canonicalize_name(project)
    return Spec(f"{name}=={version}", "release", name, version)


def parse_spec(text: str) -> Spec:
    """The SPEC ``text`` names: ``NAME==VERSION``, a wheel (``.whl``) or sdist
    (``.tar.gz``, ``.zip``) file, or a source checkout folder (with pyproject.toml or
    setup.py).

    Raises:
        InputError: none of these (a missing path, a file not named like a wheel or sdist,
            a folder that is no Python project, a requirement that pins no one version).
    """
    path = Path(text).expanduser()
    if path.exists() or "/" in text or text.endswith((".whl", *SDIST_ENDINGS)):
        return _path_spec(text, path)
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        requirement = None
    pins = list(requirement.specifier) if requirement else []
    if requirement is None or requirement.url or requirement.marker or requirement.extras \
            or len(pins) != 1 or pins[0].operator != "==" or "*" in pins[0].version:
        raise InputError(f"{text}: expected NAME==VERSION, a wheel or sdist file, or a "
                         "source checkout folder")
    return release(requirement.name, pins[0].version)


def _checkout_project(folder: Path) -> str | None:
    """The canonical distribution name a checkout's ``pyproject.toml`` declares, or None
    (no such file, or a name only ``setup.py`` knows)."""
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    name = data.get("project", {}).get("name")
    return canonicalize_name(name) if isinstance(name, str) else None


def _path_spec(text: str, path: Path) -> Spec:
    if not path.exists():
        raise InputError(f"{text}: no such file or folder")
    path = path.resolve()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("pyproject.toml", "setup.py")):
            raise InputError(f"{text}: a folder without pyproject.toml or setup.py is no "
                             "source checkout")
        return Spec(str(path), "source", _checkout_project(path))
    try:
        if path.name.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(path.name)
            return Spec(str(path), "wheel", name, str(version))
        if path.name.endswith(SDIST_ENDINGS):
            name, version = parse_sdist_filename(path.name)
            return Spec(str(path), "sdist", name, str(version))
    except (InvalidWheelFilename, InvalidSdistFilename) as exc:
        raise InputError(f"{text}: {exc}") from None
    raise InputError(f"{text}: not a wheel (.whl) or an sdist ({', '.join(SDIST_ENDINGS)})")
