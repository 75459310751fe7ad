"""An instrumented build on disk: its folder, its manifest (``build.json``) and how a
process puts it to use.

A build lives in ``<cache>/builds/<target>-<version>-<kind>/``: ``src/`` (the unpacked sdist;
gcov reads the sources from there), ``obj/`` (the compiler's objects and gcov's notes files),
``site/`` (an import folder that shadows the installed package), ``build.log`` and
``build.json``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from fuzzer.builds.kinds import KINDS, BuildKind, check_kind
from fuzzer.cache import cache_root
from fuzzer.errors import InputError

MANIFEST = "build.json"


def builds_root() -> Path:
    """``<optfuzz cache>/builds`` (``$OPTFUZZ_CACHE_DIR`` moves the cache)."""
    return cache_root() / "builds"


def build_folder(target: str, version: str, kind: str) -> Path:
    """The folder of the ``kind`` build of ``target`` at ``version``."""
    return builds_root() / f"{target}-{version}-{kind}"


@dataclass(frozen=True)
class Build:
    """A finished instrumented build (the contents of ``build.json``).

    Attributes:
        target: target name (``"onnxoptimizer"``).
        version: the version built (the installed one when it was built).
        kind: a :data:`fuzzer.builds.kinds.KINDS` name.
        folder: the build's folder (absolute).
        source: the unpacked sdist the objects were compiled from.
        objects: the CMake build folder (objects, ``.gcno`` notes).
        site: the folder to put first on ``sys.path``.
        passes_dir: the optimizer's pass sources, relative to ``source``.
        seconds: wall time the build took.
    """

    target: str
    version: str
    kind: str
    folder: str
    source: str
    objects: str
    site: str
    passes_dir: str
    seconds: float

    @property
    def build_kind(self) -> BuildKind:
        """The :class:`BuildKind` record of :attr:`kind`."""
        return KINDS[self.kind]

    def save(self) -> None:
        """Write ``build.json`` (atomically)."""
        path = Path(self.folder) / MANIFEST
        tmp = path.with_name(MANIFEST + ".part")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        os.replace(tmp, path)

    def activate(self) -> None:
        """Make this process import the build: its ``site`` first on ``sys.path``.

        Raises:
            InputError: the target's package was imported already from elsewhere (the
                build would not take effect).
        """
        module = sys.modules.get(self.target.replace("-", "_"))
        if module is not None and not str(getattr(module, "__file__", "")).startswith(
                self.site):
            raise InputError(f"{self.target} is already imported from {module.__file__}; "
                             f"the {self.kind} build must be activated first")
        if self.site not in sys.path:
            sys.path.insert(0, self.site)


def load_build(target: str, kind: str, version: str) -> Build:
    """The finished ``kind`` build of ``target`` at ``version``.

    Raises:
        InputError: unknown kind, or no finished build (the message gives the command that
            makes one).
    """
    check_kind(kind)
    path = build_folder(target, version, kind) / MANIFEST
    try:
        data = json.loads(path.read_text())
        return Build(**data)
    except (OSError, ValueError, TypeError):
        raise InputError(f"no {kind} build of {target} {version}; make one with "
                         f"`optfuzz target build {target} --{kind}`") from None
