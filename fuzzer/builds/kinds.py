"""The kinds of instrumented build: compiler and linker flags, and what a process that loads
such a build needs at run time.

``coverage`` follows gcov's own recipe (GCC's ``--coverage``, no optimization, so that lines
and branches map back to the source); ``-fprofile-update=atomic`` keeps counters exact in the
optimizer's threads, and ``-fprofile-filter-files`` instruments only the optimizer's own
sources, not the onnx and protobuf code it links. ``release`` is what the package's own
``setup.py`` builds (a source checkout a maintainer patched, to replay bundles against).
``sanitize`` is AddressSanitizer plus
UndefinedBehaviorSanitizer (``-fsanitize=address,undefined``) as their documentation
recommends for Python extensions: the ASan runtime preloaded into the interpreter, leak
detection off (the interpreter's own allocations are not the target's), a report to a log
file, and the process halted at the first error.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from fuzzer.registry import Registry


@dataclass(frozen=True)
class BuildKind:
    """One kind of instrumented build.

    Attributes:
        name: ``"coverage"``, ``"sanitize"`` (the values of ``--build``) or ``"release"``
            (an uninstrumented build of a source checkout, for ``replay --against``).
        cxx_flags: extra C++ compiler flags; ``{source}`` is replaced by a regex of the
            target's own source folder.
        link_flags: extra linker flags of the Python extension module.
        build_type: CMake build type.
        preload: runtime libraries (GCC's names) to preload into a process that loads the
            build, resolved with ``gcc -print-file-name``.
        env: environment variables such a process needs; ``{log}`` is replaced by the
            report path prefix.
        memory_limit_ok: whether an address-space limit (RLIMIT_AS) may be set on such a
            process (ASan reserves terabytes of shadow address space).
    """

    name: str
    cxx_flags: str
    link_flags: str
    build_type: str
    preload: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    memory_limit_ok: bool = True


#: Every kind, by name.
KINDS: Registry[BuildKind] = Registry("build", {
    "coverage": BuildKind(
        name="coverage",
        cxx_flags="--coverage -O0 -fprofile-update=atomic -fprofile-filter-files={source}",
        # libgcov's dump and reset are hidden; aliases let each worker write and zero its
        # counters after every case (fuzzer.edges.collector)
        link_flags="--coverage -Wl,--defsym=optfuzz_gcov_dump=__gcov_dump "
                   "-Wl,--defsym=optfuzz_gcov_reset=__gcov_reset",
        build_type="Debug",
    ),
    "sanitize": BuildKind(
        name="sanitize",
        cxx_flags="-fsanitize=address,undefined -fno-omit-frame-pointer "
                  "-fno-sanitize-recover=undefined -O1 -g",
        link_flags="-fsanitize=address,undefined",
        build_type="RelWithDebInfo",
        # libstdc++ too: ASan's __cxa_throw interceptor needs the real one at start-up, or
        # the first C++ exception (an onnx assertion) ends in "CHECK failed" instead of a
        # Python exception
        preload=("libasan.so", "libstdc++.so.6"),
        env={
            "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=0:"
                            "allocator_may_return_null=1:log_path={log}:symbolize=1",
            "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:log_path={log}",
        },
        memory_limit_ok=False,
    ),
    # as the package's own setup.py builds it: CMake's Release type, no instrumentation
    "release": BuildKind(name="release", cxx_flags="", link_flags="", build_type="Release"),
})


def check_kind(name: str) -> None:
    """Refuse a build kind that is not in :data:`KINDS`.

    Raises:
        InputError: an unknown kind (the message lists the known ones).
    """
    from fuzzer.errors import InputError

    if name not in KINDS:
        raise InputError(str(KINDS.unknown(name)))


def runtime_env(kind: BuildKind, log_prefix: str) -> dict[str, str]:
    """Environment a process needs to run code of a ``kind`` build (``LD_PRELOAD`` of the
    sanitizer runtime, the sanitizers' options with reports under ``log_prefix``, a path
    prefix to which the runtime appends ``.<pid>``); empty for a coverage build.

    Raises:
        InputError: a runtime library to preload is missing.
    """
    from fuzzer.errors import InputError

    env = {k: v.replace("{log}", log_prefix) for k, v in kind.env.items()}
    libs = [runtime_library(name) for name in kind.preload]
    if any(lib is None for lib in libs):
        raise InputError(f"the {kind.name} build needs {', '.join(kind.preload)} "
                         "(GCC's sanitizer runtime) at run time")
    if libs:
        env["LD_PRELOAD"] = " ".join(str(lib) for lib in libs)
    return env


@lru_cache(maxsize=8)
def runtime_library(name: str) -> str | None:
    """The path of GCC's runtime library ``name`` (``libasan.so``), or None where GCC is
    missing or does not have it."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    try:
        out = subprocess.run([gcc, f"-print-file-name={name}"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(out)
    return str(path.resolve()) if path.is_absolute() and path.exists() else None
