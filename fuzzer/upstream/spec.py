"""A SPEC: one build of a target's package to install into an environment of its own.

Four kinds: a released version (``onnxslim==0.1.80``, from the package index), a wheel file,
an sdist file, or a source checkout folder (built by the installer). A released version's
project and version are known before it is installed; a file's come from its name (the
wheel and sdist naming rules); a checkout's only from what its build installs.
"""

from __future__ import annotations

import hashlib
import subprocess
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
        """What, beside :attr:`text`, decides the build: a file's sha256, a git checkout's
        HEAD commit ("" for a release, or a checkout outside git)."""
        path = self.path
        if path is None:
            return ""
        if path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()
        try:
            head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return ""
        return head.stdout.strip() if head.returncode == 0 else ""


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


def _path_spec(text: str, path: Path) -> Spec:
    if not path.exists():
        raise InputError(f"{text}: no such file or folder")
    path = path.resolve()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("pyproject.toml", "setup.py")):
            raise InputError(f"{text}: a folder without pyproject.toml or setup.py is no "
                             "source checkout")
        return Spec(str(path), "source")
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
