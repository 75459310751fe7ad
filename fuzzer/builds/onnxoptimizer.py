"""Instrumented builds of onnxoptimizer from its source distribution.

The sdist carries onnx, protobuf and nanobind as ``third_party``; onnx's CMake would fetch
pybind11 and, without a system protobuf, abseil from GitHub. The build therefore uses the
system protobuf (``ONNX_OPT_USE_SYSTEM_PROTOBUF``, shared libraries: Debian's static
``libprotobuf-lite.a`` is not position-independent) and the pybind11 of the ``builds`` extra,
with downloads switched off so that a missing piece fails at once with its name. Only the
Python extension (``onnx_opt_cpp2py_export``) is built; the package's Python files are copied
beside it into the build's ``site`` folder.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

from fuzzer.builds.install import record_distribution
from fuzzer.builds.kinds import KINDS, check_kind
from fuzzer.builds.record import Build, build_folder
from fuzzer.builds.sdist import fetch_sdist, unpack
from fuzzer.errors import InputError

PROJECT = "onnxoptimizer"
EXTENSION = "onnx_opt_cpp2py_export"
#: the pass sources, relative to the sdist's top folder.
PASSES_DIR = "onnxoptimizer/passes"
#: system packages the build needs (Debian names), by the file that shows each is there.
SYSTEM_NEEDS: dict[str, str] = {
    "protoc": "protobuf-compiler",
    "/usr/include/google/protobuf/message_lite.h": "libprotobuf-dev",
    "g++": "g++",
    "cmake": "cmake",
}


def _missing_system() -> list[str]:
    return [pkg for need, pkg in SYSTEM_NEEDS.items()
            if not (Path(need).exists() if need.startswith("/") else shutil.which(need))]


def _pybind11_dir() -> str:
    try:
        import pybind11
    except ImportError:
        raise InputError("building onnxoptimizer needs pybind11: "
                         "pip install 'optfuzz[builds]'") from None
    return pybind11.get_cmake_dir()


def _run(cmd: list[str], log: Path, step: str, cwd: Path | None = None) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
    if proc.returncode != 0:
        raise InputError(f"the build failed at {step} (exit {proc.returncode}); see {log}")


def configure_args(source: Path, objects: Path, kind: str) -> list[str]:
    """The ``cmake`` configure command line of a ``kind`` build of ``source`` into
    ``objects``.

    Raises:
        InputError: pybind11 is missing.
    """
    k = KINDS[kind]
    own = f".*/{source.name}/onnxoptimizer/.*"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    return ["cmake", "-S", str(source), "-B", str(objects), *generator,
            "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
            f"-Dpybind11_DIR={_pybind11_dir()}",
            "-DONNX_BUILD_PYTHON=ON", "-DONNX_USE_LITE_PROTO=ON", "-DONNX_NAMESPACE=onnx",
            "-DONNX_ML=1", "-DONNX_OPT_USE_SYSTEM_PROTOBUF=ON",
            "-DONNX_USE_PROTOBUF_SHARED_LIBS=ON",
            f"-DCMAKE_BUILD_TYPE={k.build_type}",
            f"-DCMAKE_CXX_FLAGS={k.cxx_flags.replace('{source}', own)}",
            f"-DCMAKE_MODULE_LINKER_FLAGS={k.link_flags}",
            f"-DCMAKE_SHARED_LINKER_FLAGS={k.link_flags}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DPY_EXT_SUFFIX={sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"]


def _assemble(source: Path, objects: Path, site: Path, version: str) -> None:
    package = site / PROJECT
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for py in (source / PROJECT).glob("*.py"):
        shutil.copy2(py, package / py.name)
    built = sorted(objects.glob(f"{EXTENSION}*.so"))
    if not built:
        raise InputError(f"the build made no {EXTENSION} module in {objects}")
    shutil.copy2(built[0], package / built[0].name)
    (package / "version.py").write_text(f"version = {version!r}\ngit_version = ''\n")


def build(kind: str, jobs: int = 2, sdist: Path | None = None,
          pip_options: Sequence[str] = (), say: Callable[[str], None] = print) -> Build:
    """Build the installed onnxoptimizer version as a ``kind`` build (see
    :data:`fuzzer.builds.kinds.KINDS`) into its cache folder; return its record.

    Args:
        kind: ``"coverage"`` or ``"sanitize"``.
        jobs: parallel compile jobs.
        sdist: a local sdist archive; None fetches it with pip
            (:func:`fuzzer.builds.sdist.fetch_sdist`).
        pip_options: more options for that pip, e.g. ``["--index-url", URL]``.
        say: where progress lines go.

    Raises:
        InputError: unknown kind, missing system packages or pybind11, no sdist, or a failed
            step (the message names the log).
    """
    _check(kind)
    version = metadata.version(PROJECT)
    folder = build_folder(PROJECT, version, kind)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "build.log"
    log.write_text("")
    start = time.monotonic()
    archive = sdist or fetch_sdist(PROJECT, version, folder.parent / "sdists", pip_options)
    say(f"unpacking {archive.name}")
    shutil.rmtree(folder / "src", ignore_errors=True)
    source = unpack(archive, folder / "src")
    objects = folder / "obj"
    shutil.rmtree(objects, ignore_errors=True)
    _compile(source, objects, kind, log, jobs, say)
    _assemble(source, objects, folder / "site", version)
    record = Build(target=PROJECT, version=version, kind=kind, folder=str(folder),
                   source=str(source), objects=str(objects), site=str(folder / "site"),
                   passes_dir=PASSES_DIR, seconds=round(time.monotonic() - start, 1))
    record.save()
    return record


def build_checkout(checkout: Path, site: Path, jobs: int = 2,
                   say: Callable[[str], None] = print) -> Build:
    """Build a source checkout of onnxoptimizer (a clone or an unpacked sdist, patched or
    not) as the package's own ``setup.py`` would, offline, and put the package into
    ``site`` as an installed distribution
    (:func:`fuzzer.builds.install.record_distribution`).

    The objects stay in the cache (one folder per checkout path, beside the instrumented
    builds), so building the same checkout again after a patch recompiles only what the
    patch touched.

    Args:
        checkout: the checkout's top folder (with ``CMakeLists.txt`` and
            ``onnxoptimizer/``).
        site: an import folder (an environment's site-packages) to put the package in.
        jobs: parallel compile jobs.
        say: where progress lines go.

    Returns:
        The record of the build (kind ``release``; ``version`` from ``VERSION_NUMBER``).

    Raises:
        InputError: not an onnxoptimizer checkout, missing system packages or pybind11, or
            a failed step (the message names the log).
    """
    _check("release")
    checkout = checkout.resolve()
    if not (checkout / "CMakeLists.txt").is_file() or not (checkout / PROJECT).is_dir():
        raise InputError(f"{checkout}: no CMakeLists.txt and {PROJECT}/ folder; not an "
                         f"{PROJECT} checkout")
    version_file = checkout / "VERSION_NUMBER"
    version = version_file.read_text().strip() if version_file.is_file() else "0+unknown"
    digest = hashlib.sha256(str(checkout).encode()).hexdigest()[:12]
    folder = build_folder(PROJECT, f"checkout-{digest}", "release")
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "build.log"
    log.write_text(f"checkout: {checkout}\n")
    start = time.monotonic()
    objects = folder / "obj"
    _compile(checkout, objects, "release", log, jobs, say)
    _assemble(checkout, objects, site, version)
    record_distribution(site, PROJECT, version, [PROJECT], checkout)
    return Build(target=PROJECT, version=version, kind="release", folder=str(folder),
                 source=str(checkout), objects=str(objects), site=str(site),
                 passes_dir=PASSES_DIR, seconds=round(time.monotonic() - start, 1))


def _check(kind: str) -> None:
    check_kind(kind)
    missing = _missing_system()
    if missing:
        raise InputError("building onnxoptimizer needs the system packages "
                         f"{' '.join(missing)} (apt-get install {' '.join(missing)})")


def _compile(source: Path, objects: Path, kind: str, log: Path, jobs: int,
             say: Callable[[str], None]) -> None:
    say(f"configuring ({kind}); log: {log}")
    _run(configure_args(source, objects, kind), log, "configure")
    say(f"compiling with {jobs} jobs (several minutes the first time)")
    _run(["cmake", "--build", str(objects), "--target", EXTENSION, "-j", str(jobs)], log,
         "compile")
