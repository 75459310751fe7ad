"""The predicate of ``optfuzz reduce MODEL --check CMD``: an external command decides, as with
Polygraphy ``debug reduce --check``.

Each candidate is written to a file; the command runs with that path appended to its
arguments. The candidate fails (True) when the command's exit status is non-zero, or, with
``fail_regex``, when its stdout or stderr matches the regular expression.

Unlike Polygraphy, which runs one check at a time, the command runs on up to
:func:`default_parallel` candidates at once, the spare cores (the reducer's bisections probe
several cut points per round; see :mod:`fuzzer.reduce.cut`).
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzer.reduce.candidate import Built
from fuzzer.reduce.graph import count_nodes
from fuzzer.reduce.predicate import Budget, Predicate, is_valid

#: most checks run at once by default, whatever the number of cores (each is a process that
#: may load a large model).
MAX_PARALLEL = 4


def default_parallel() -> int:
    """Checks to run at once: the spare cores, i.e. the CPUs this process may use less the
    other processes running now (the reducer itself only waits while the commands run), at
    least 1 and at most :data:`MAX_PARALLEL`. On a busy machine parallel checks share the
    same cores and a k-ary search would only make more of them."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(int((cpus or 1) - running_elsewhere()), MAX_PARALLEL))


def running_elsewhere() -> float:
    """Processes running on the machine now besides this one: the kernel's count of runnable
    tasks (``/proc/loadavg``, fourth field) less one; where that is unreadable, the 1-minute
    load average (which lags a minute behind: work that just ended still counts)."""
    try:
        running = Path("/proc/loadavg").read_text().split()[3].split("/")[0]
        return max(0, int(running) - 1)
    except (OSError, IndexError, ValueError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


class CommandCheck(Predicate):
    """True when ``command + [candidate path]`` fails.

    Args:
        command: the check command line (shell words, split with shlex).
        budget: the reduction's time budget; one run may take at most ``timeout`` seconds
            (past it the run counts as passing).
        fail_regex: decide by this regular expression on stdout+stderr instead of the exit
            status.
        artifacts: a folder that keeps every tried candidate as ``bad/NNNN.onnx`` (failed) or
            ``good/NNNN.onnx`` (passed), or None.
        timeout: seconds per run of the command.
        parallel: commands run at once (default :func:`default_parallel`); each candidate
            has a file of its own.

    Attributes:
        min_good: the smallest passing candidate (fewest nodes) seen, or None.

    Raises:
        ValueError: an empty command or an invalid regular expression.
    """

    def __init__(self, command: str, budget: Budget, fail_regex: str | None = None,
                 artifacts: Path | None = None, timeout: float = 120.0,
                 validate: Callable[[Any], bool] = is_valid,
                 parallel: int | None = None) -> None:
        super().__init__(budget, validate,
                         default_parallel() if parallel is None else parallel)
        self.command = shlex.split(command)
        if not self.command:
            raise ValueError("empty --check command")
        self.fail_regex = re.compile(fail_regex) if fail_regex else None
        self.artifacts = artifacts
        self.timeout = timeout
        self.min_good: Built | None = None
        self._workdir = Path(tempfile.mkdtemp(prefix="optfuzz-reduce-"))
        self._numbers = itertools.count()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Wait for the running checks (see :meth:`Predicate.close`), then remove the folder
        of candidate files."""
        super().close()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def run(self, built: Built, key: str) -> bool:
        number = next(self._numbers)
        path = self._workdir / f"{number:04d}" / "candidate.onnx"
        path.parent.mkdir()
        path.write_bytes(built.model.SerializeToString())
        try:
            proc = subprocess.run([*self.command, str(path)], capture_output=True, text=True,
                                  timeout=min(self.timeout, max(self.budget.left(), 1.0)))
        except subprocess.TimeoutExpired:
            failed = False
        else:
            if self.fail_regex is not None:
                failed = bool(self.fail_regex.search(proc.stdout + proc.stderr))
            else:
                failed = proc.returncode != 0
        if self.artifacts is not None:
            folder = self.artifacts / ("bad" if failed else "good")
            folder.mkdir(parents=True, exist_ok=True)
            shutil.move(path, folder / f"{number:04d}.onnx")
        else:
            path.unlink()
        path.parent.rmdir()
        with self._lock:
            if not failed and (self.min_good is None or count_nodes(built.model.graph)
                               < count_nodes(self.min_good.model.graph)):
                self.min_good = built
        return failed
