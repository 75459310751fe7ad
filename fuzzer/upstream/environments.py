"""Cached environments, each holding one build of a target (a SPEC, :mod:`~.spec`).

An environment is a virtual environment of this interpreter, made with ``uv`` (``python -m
venv`` and pip where uv is missing), in ``<cache>/envs/<key>/`` (``$XDG_CACHE_HOME/optfuzz``,
``$OPTFUZZ_CACHE_DIR`` or ``--env-cache DIR``). It installs the SPEC alone (``--no-deps``)
and sees this process's import path behind its own packages (a ``.pth`` file that adds those
folders, last): so onnx, onnxruntime, numpy, optfuzz and the target's other dependencies are
the very installs this process uses, and only the target differs. A source checkout of a
project :mod:`fuzzer.builds` knows how to build (onnxoptimizer) is built by that offline
build, not by the installer. Where the target needs a
dependency that is missing here or too old, that one is installed into the environment too,
with onnx, onnxruntime and numpy pinned to this process's versions (an old release that
needs another onnx cannot be installed: it would not be the same test).

The key hashes the SPEC (with a file's sha256 or a checkout's HEAD commit), the interpreter,
the pinned versions, the import path and where packages come from, so a changed setup gets
an environment of its own. An environment is built in a temporary folder and renamed into
place when complete (``env.json`` written), so a killed build leaves nothing half-made and
two processes never share one under construction. The user's own environment is only read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fuzzer.builds import checkout_builder
from fuzzer.cache import cache_root
from fuzzer.errors import InputError
from fuzzer.store.versions import environment_versions, utc_now
from fuzzer.upstream.spec import Spec

#: the manifest of a finished environment.
MANIFEST = "env.json"
#: packages pinned to this process's versions where a target dependency is installed.
SHARED = ("onnx", "onnxruntime", "numpy")
#: seconds one installer run may take (a source build of a C++ optimizer takes minutes).
INSTALL_TIMEOUT = 1800.0
#: seconds a probe inside an environment may take.
PROBE_TIMEOUT = 300.0
#: the file that puts this process's import path behind the environment's own packages.
OVERLAY = "_optfuzz_overlay.pth"
#: what a new environment's python prints: its import path and its site folder.
_SITE = ("import json, sys, sysconfig; "
         "print(json.dumps([sys.path, sysconfig.get_paths()['purelib']]))")


class InstallError(Exception):
    """A SPEC that cannot be installed into an environment; the message is one line."""


@dataclass(frozen=True)
class Environment:
    """A finished environment (the contents of its ``env.json`` and its folder).

    Attributes:
        folder: the environment's folder.
        spec: the SPEC text it holds.
        project: the canonical name of the distribution the SPEC installed.
        version: that distribution's version.
        created: ISO UTC time it was made.
        pins: the pinned packages' versions (:data:`SHARED`).
    """

    folder: Path
    spec: str
    project: str
    version: str
    created: str
    pins: dict[str, str]

    @property
    def python(self) -> Path:
        """The environment's interpreter."""
        return self.folder / "bin" / "python"

    def run(self, args: list[str], timeout: float = PROBE_TIMEOUT,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run the environment's python with ``args`` in ``cwd`` (default: the
        environment's folder, where whatever a target writes on import stays); output
        captured as text.

        Raises:
            subprocess.TimeoutExpired: it outlived ``timeout`` seconds.
            OSError: the interpreter cannot be started.
        """
        return subprocess.run([str(self.python), *args], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd or self.folder, env=clean_environ())

    def probe(self, *args: str) -> Any:
        """The JSON that :mod:`fuzzer.upstream.probe` prints for ``args`` here.

        Raises:
            InstallError: the probe failed or printed no JSON.
        """
        try:
            proc = self.run(["-m", "fuzzer.upstream.probe", *args])
        except (OSError, subprocess.SubprocessError) as exc:
            raise InstallError(f"{self.spec}: the environment does not run: {exc}") from None
        lines = proc.stdout.strip().splitlines()
        try:
            if proc.returncode == 0 and lines:
                return json.loads(lines[-1])
        except ValueError:
            pass
        raise InstallError(f"{self.spec}: the environment's probe failed: "
                           f"{one_line(proc.stderr or proc.stdout)}")


def one_line(text: str, limit: int = 400) -> str:
    """``text`` (an installer's message, box drawings and all) as one line of at most
    ``limit`` characters."""
    words = " ".join(line.strip(" \t×╰─▶│├┬┴┼╭╮╯╴╶").strip()
                     for line in text.splitlines()).split()
    line = " ".join(words) or "(no message)"
    return line if len(line) <= limit else line[:limit - 3] + "..."


def uv_binary() -> str | None:
    """The ``uv`` executable: the one the ``uv`` package ships, else one on PATH, else
    None."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def default_root() -> Path:
    """``<optfuzz cache>/envs``."""
    return cache_root() / "envs"


class EnvironmentCache:
    """The environments of SPECs under one folder, each made once.

    Args:
        root: the cache folder (created on first use).
        find_links: a folder of wheels and sdists to install from instead of the index.
        timeout: seconds one installer run may take.
    """

    def __init__(self, root: Path | None = None, find_links: Path | None = None,
                 timeout: float = INSTALL_TIMEOUT) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.find_links = find_links.resolve() if find_links is not None else None
        self.timeout = timeout
        self.uv = uv_binary()
        self._keys: dict[Spec, str] = {}

    def pins(self, project: str | None = None) -> dict[str, str]:
        """This process's versions of :data:`SHARED` (not ``project``'s own)."""
        versions = environment_versions()
        return {name: versions[name] for name in SHARED
                if versions.get(name, "missing") != "missing" and name != project}

    def key(self, spec: Spec) -> str:
        """The folder name of ``spec``'s environment (see the module docstring), worked out
        once per SPEC."""
        if spec not in self._keys:
            self._keys[spec] = self._key(spec)
        return self._keys[spec]

    def _key(self, spec: Spec) -> str:
        setup = {"spec": spec.text, "build": spec.fingerprint(), "python": sys.version,
                 "executable": sys.executable, "pins": self.pins(), "path": overlay_path(),
                 "find_links": str(self.find_links or ""), "installer": bool(self.uv)}
        digest = hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()
        return digest[:20]

    def cached(self, spec: Spec) -> Environment | None:
        """``spec``'s finished environment, or None where it is not made yet."""
        folder = self.root / self.key(spec)
        try:
            data = json.loads((folder / MANIFEST).read_text())
            return Environment(folder=folder, **{k: data[k] for k in (
                "spec", "project", "version", "created", "pins")})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def ensure(self, spec: Spec, say: Callable[[str], None] | None = None) -> Environment:
        """``spec``'s environment, made first where it is not cached.

        Args:
            spec: the build to install.
            say: where the progress lines of a long step (a C++ source build) go.

        Raises:
            InstallError: the environment cannot be made or the SPEC not installed there
                (one line, naming the SPEC).
        """
        found = self.cached(spec)
        if found is not None:
            return found
        folder = self.root / self.key(spec)
        building: Path | None = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=f".building-{folder.name}-",
                                             dir=self.root))
            made = self._build(spec, building, say or (lambda text: None))
            try:
                os.rename(building, folder)
            except OSError:
                found = self.cached(spec)  # another process finished the same one first
                if found is not None:
                    return found
                shutil.rmtree(folder, ignore_errors=True)  # a leftover without env.json
                os.rename(building, folder)
            return Environment(**{**asdict(made), "folder": folder})
        except OSError as exc:
            raise InstallError(f"cannot create the environment of {spec.text} in "
                               f"{self.root}: {exc.strerror or exc}") from None
        finally:
            if building is not None:
                shutil.rmtree(building, ignore_errors=True)

    def _build(self, spec: Spec, folder: Path, say: Callable[[str], None]) -> Environment:
        self._command(spec, self._venv(folder), "cannot create the environment")
        env = Environment(folder, spec.text, "", "", "", {})
        site = _write_overlay(env)
        own_build = checkout_builder(spec.project) \
            if spec.kind == "source" and spec.project else None
        if own_build is not None:
            # a C++ optimizer's own setup.py would fetch its build tools and dependencies
            # and compile more than the extension; optfuzz's offline build does neither
            try:
                made = own_build(spec.path, Path(site), jobs=os.cpu_count() or 1, say=say)
            except InputError as exc:
                raise InstallError(f"cannot build {spec.text}: {exc}") from None
            project = (made.target, made.version)
            unmet: list[str] = []
        else:
            self._install(spec, env, ["--no-deps", *self._binary_only(spec), spec.text])
            names = env.probe("installed", site)
            project = _installed_project(spec, names)
            unmet = env.probe("unmet", project[0])
        pins = self.pins(project[0])
        if unmet:
            constraints = folder / "pins.txt"
            constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()))
            self._install(spec, env, ["--constraint", str(constraints), *unmet])
        made = Environment(folder, spec.text, project[0], project[1], utc_now(), pins)
        (folder / MANIFEST).write_text(json.dumps(
            {k: v for k, v in asdict(made).items() if k != "folder"}, indent=2) + "\n")
        return made

    def _venv(self, folder: Path) -> list[str]:
        if self.uv:
            return [self.uv, "venv", "--quiet", "--python", sys.executable, str(folder)]
        return [sys.executable, "-m", "venv", "--without-pip", str(folder)]

    def _binary_only(self, spec: Spec) -> list[str]:
        """A released version installs from a wheel only (see :mod:`~.releases`)."""
        return ["--only-binary", spec.project or ":all:"] if spec.kind == "release" else []

    def _install(self, spec: Spec, env: Environment, args: list[str]) -> None:
        source = ["--find-links", str(self.find_links), "--no-index"] if self.find_links \
            else []
        if self.uv:
            command = [self.uv, "pip", "install", "--quiet", "--python", str(env.python)]
        else:
            command = [sys.executable, "-m", "pip", "--python", str(env.python), "install",
                       "--quiet", "--disable-pip-version-check"]
        self._command(spec, [*command, *source, *args], "cannot install")

    def _command(self, spec: Spec, command: list[str], what: str) -> None:
        try:
            proc = subprocess.run(command, capture_output=True, text=True,
                                  timeout=self.timeout, env=clean_environ())
        except subprocess.TimeoutExpired:
            raise InstallError(f"{what} {spec.text}: the installer did not finish in "
                               f"{self.timeout:g} s") from None
        except OSError as exc:
            raise InstallError(f"{what} {spec.text}: {exc}") from None
        if proc.returncode != 0:
            raise InstallError(f"{what} {spec.text}: {one_line(proc.stderr or proc.stdout)}")


def overlay_path() -> list[str]:
    """The folders of this process's import path an environment adds behind its own: every
    existing folder on ``sys.path`` but the working folder (which ``python -m`` puts there),
    and the folder optfuzz's own packages are in wherever it is not among them."""
    import fuzzer

    here = os.getcwd()
    own = str(Path(fuzzer.__file__).resolve().parent.parent)
    paths = [p for p in dict.fromkeys(sys.path) if p and p != here and Path(p).is_dir()]
    return paths if own in {str(Path(p).resolve()) for p in paths} else [own, *paths]


def _write_overlay(env: Environment) -> str:
    """Write :data:`OVERLAY` into ``env``'s site folder (the folders of
    :func:`overlay_path` it does not have already, each as a site folder, so that their own
    ``.pth`` files count); return that site folder.

    Raises:
        InstallError: the new interpreter does not run.
    """
    try:
        proc = env.run(["-c", _SITE])
        own, site = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise InstallError(f"{env.spec}: the new environment does not run: {exc}") from None
    extra = [p for p in overlay_path() if p not in own]
    Path(site).mkdir(parents=True, exist_ok=True)
    (Path(site) / OVERLAY).write_text(
        f"import site; list(map(site.addsitedir, {extra!r}))\n")
    return site


def _installed_project(spec: Spec, names: list[list[str]]) -> tuple[str, str]:
    """(canonical name, version) of the distribution the SPEC installed.

    Raises:
        InstallError: it installed none, or another project than the SPEC names.
    """
    from packaging.utils import canonicalize_name

    found = {canonicalize_name(name): version for name, version in names}
    if spec.project is not None:
        if spec.project in found:
            return spec.project, found[spec.project]
        raise InstallError(f"{spec.text}: installed {sorted(found) or 'nothing'}, not "
                           f"{spec.project}")
    if len(found) != 1:
        raise InstallError(f"{spec.text}: installed {sorted(found) or 'nothing'}, not one "
                           "project")
    return next(iter(found.items()))


def clean_environ() -> dict[str, str]:
    """The process environment of an installer or a child in an environment: this one's,
    without ``PYTHONPATH`` and ``PYTHONHOME`` (the folders of ``PYTHONPATH`` are on an
    environment's own path, behind the target; before it, they could hide it)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}

