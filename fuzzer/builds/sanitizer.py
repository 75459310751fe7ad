"""The sanitizer runtime of a campaign: worker processes that load the target's ``sanitize``
build (AddressSanitizer + UndefinedBehaviorSanitizer) under GCC's ASan runtime, and the
reports they leave.

Python itself is not instrumented, so the ASan runtime must be the first library the
interpreter loads: it is preloaded (``LD_PRELOAD``) into a fresh interpreter started through a
small wrapper script that sets the environment (the build's site folder first on
``PYTHONPATH``) and execs the interpreter, as the sanitizers' documentation recommends for
Python extensions. That interpreter is multiprocessing's fork server, which imports onnx,
onnxruntime and the build once; the workers fork from it. A sanitizer that finds an error
writes its report (ASan to ``<folder>/report.<pid>``, GCC's UBSan to the worker's error
output, which goes to ``<folder>/stderr.<pid>``) and halts the worker
(``halt_on_error=1``); the sandbox then takes the report of the dead worker's pid
(:meth:`SanitizerRuntime.take`) and judges it (:mod:`oracles.sanitizer`, symptom
``memory-error``).
"""

from __future__ import annotations

import multiprocessing.forkserver
import multiprocessing.spawn
import os
import shlex
import signal
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fuzzer.builds.kinds import KINDS, runtime_env
from fuzzer.builds.record import Build

#: characters of a report kept (the report's head holds the error and its stack).
REPORT_CHARS = 20_000

#: the variable naming the sanitize build's site folder (repro.py reads it too).
SITE_VARIABLE = "OPTFUZZ_SANITIZE_SITE"

_users = 0  # sandboxes using the installed runtime
_before: str | None = None  # the executable spawn used before
_server: str | None = None  # folder of the runtime under which the fork server started


@dataclass(frozen=True)
class SanitizerRuntime:
    """Where a sandbox's sanitized workers write their reports and how they start.

    Attributes:
        folder: the reports' folder (``report.<pid>`` files) and the wrapper script's.
        env: the environment the workers start with (``LD_PRELOAD``, ``ASAN_OPTIONS``,
            ``UBSAN_OPTIONS``).
        build: the target's sanitize build the workers import; None for a target without
            native code of its own, which runs as installed under the runtime (its
            interceptors of ``malloc``/``free`` still see every heap error).
    """

    folder: str
    env: dict[str, str]
    build: Build | None = None

    @property
    def python(self) -> str:
        """The wrapper script that starts the interpreter under the runtime."""
        return os.path.join(self.folder, "python")

    def install(self) -> None:
        """Make ``spawn`` start new processes through :attr:`python` until as many
        :func:`release` calls as ``install`` calls were made (the sandboxes of a campaign
        share one runtime: one per process at a time). A fork server started before is
        stopped first, so that the workers start under this runtime.

        Raises:
            fuzzer.errors.InputError: another runtime is in use (its sandboxes are open).
        """
        global _users, _before, _server
        if _users == 0:
            _before = os.fsdecode(multiprocessing.spawn.get_executable())  # bytes on POSIX
            multiprocessing.spawn.set_executable(self.python)
            # one fork server per process, with the interpreter, environment and report
            # folder it started under: one started before (without the runtime, or with
            # another runtime's folder) would run this runtime's workers unsanitized or send
            # their reports where nobody reads them
            _stop_fork_server()
            _server = self.folder
        elif _server != self.folder:
            from fuzzer.errors import InputError

            raise InputError("another sanitizer runtime is in use in this process; close "
                             "its sandboxes first")
        _users += 1

    def activate(self) -> None:
        """In a worker, before the target is imported: send this process's error output to
        ``<folder>/stderr.<pid>`` (GCC's UBSan runtime reports there whatever ``log_path``
        says) and import the sanitize build.

        Raises:
            fuzzer.errors.InputError: the target was imported from elsewhere already.
        """
        stream = os.open(os.path.join(self.folder, f"stderr.{os.getpid()}"),
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(stream, 2)
        os.close(stream)
        if self.build is not None:
            self.build.activate()

    def take(self, pid: int | None) -> str | None:
        """The report that worker ``pid`` left (its first :data:`REPORT_CHARS`
        characters): the error report in ASan's ``report.<pid>`` file, else the one in its
        error output (:func:`oracles.sanitizer.report_in`); both files are removed from the
        folder. None where it left none."""
        if pid is None:
            return None
        from oracles.sanitizer import report_in

        texts = {}
        for path in Path(self.folder).glob(f"*.{pid}*"):
            try:
                texts[path.name.partition(".")[0]] = path.read_text(errors="replace")
                path.unlink()
            except OSError:
                continue
        # a report opens with an error; the runtime's own failures ("CHECK failed") are not
        # the target's
        text = report_in(texts.get("report")) or report_in(texts.get("stderr"))
        return text[:REPORT_CHARS] if text else None


def without_runtime(environ: dict[str, str]) -> dict[str, str]:
    """``environ`` without the variables a sanitized worker starts with (``LD_PRELOAD``
    and the sanitizers' options): the environment of a process that a worker starts to
    run as a user would, e.g. a bundle's repro.py, which sets up a sanitizer itself where
    its symptom needs one. The build's site leaves ``PYTHONPATH``; :data:`SITE_VARIABLE`
    stays, as repro.py of a ``memory-error`` bundle reads it."""
    names = {"LD_PRELOAD", *KINDS["sanitize"].env}
    clean = {k: v for k, v in environ.items() if k not in names}
    site = environ.get(SITE_VARIABLE)
    if site and "PYTHONPATH" in clean:
        rest = [p for p in clean["PYTHONPATH"].split(os.pathsep) if p and p != site]
        clean["PYTHONPATH"] = os.pathsep.join(rest)
        if not rest:
            del clean["PYTHONPATH"]
    return clean


def _stop_fork_server() -> None:
    """Stop this process's fork server so that the next one starts afresh. It is killed
    first: it ends by itself only once every copy of its "alive" pipe is closed, and each
    process forked from this one since it started (a fork-method worker) holds one, so
    multiprocessing's own stop, which then waits for it, would wait for them all."""
    server = multiprocessing.forkserver._forkserver
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server._stop()


def release() -> None:
    """Undo one :meth:`SanitizerRuntime.install`; the last one restores the
    interpreter that ``spawn`` used before."""
    global _users
    _users = max(0, _users - 1)
    if _users == 0 and _before is not None:
        multiprocessing.spawn.set_executable(_before)



def sanitizer_runtime(build: Build | None, folder: str | None = None) -> SanitizerRuntime:
    """A runtime whose reports go to ``folder`` (a new temporary folder by default), with
    its wrapper script written there.

    Raises:
        fuzzer.errors.InputError: GCC's ASan runtime library is missing.
    """
    folder = folder or tempfile.mkdtemp(prefix="optfuzz-sanitizer-")
    os.makedirs(folder, exist_ok=True)
    env = runtime_env(KINDS["sanitize"], os.path.join(folder, "report"))
    if build is not None:  # the fork server imports the build, before any other copy
        env[SITE_VARIABLE] = build.site
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (build.site, os.environ.get("PYTHONPATH")) if p)
    runtime = SanitizerRuntime(folder, env, build)
    lines = ["#!/bin/sh"] + [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines.append(f'exec {shlex.quote(sys.executable)} "$@"')
    script = Path(runtime.python)
    script.write_text("\n".join(lines) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return runtime
