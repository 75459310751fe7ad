"""Verification of a candidate bundle before it is written: a bundle is a claim to a
maintainer, so it must hold up the way the maintainer will check it. Its original has run
deterministically (:mod:`fuzzer.handling.determinism`) and float64 runs do not explain its
wrong output (:mod:`fuzzer.handling.exactness`); last, the bundle reproduces in a fresh
process through its own repro.py (:func:`reproduces`). The script runs in a sandbox worker,
which starts it as a subprocess: starting a subprocess from the campaign process itself could
hang, as the pool forks replacement workers that would inherit the subprocess's exec-status
pipe.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from fuzzer.builds.sanitizer import without_runtime
from fuzzer.report.repro import REPRODUCES

#: seconds repro.py may take beyond twice its own timeout (interpreter and imports, twice).
REPRO_GRACE = 60.0


def run_repro(files: dict[str, bytes], timeout: float) -> tuple[int, str]:
    """Write a bundle's ``files`` into a temporary folder, run its repro.py there with this
    interpreter, and return ``(exit status, last lines of its output)``. Meant to run in a
    sandbox worker (:meth:`fuzzer.execution.sandbox.Sandbox.call`), in the environment a
    user's shell has: a sanitized worker's runtime variables are not passed on.

    Raises:
        subprocess.TimeoutExpired: repro.py outlived ``timeout`` seconds.
    """
    with tempfile.TemporaryDirectory(prefix="optfuzz-verify-") as folder:
        for name, data in files.items():
            path = Path(folder) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        proc = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True,
                              text=True, timeout=timeout, env=without_runtime(dict(os.environ)))
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
    return proc.returncode, tail


def reproduces(sandbox: Any, files: dict[str, bytes], case_timeout: float) -> tuple[bool, str]:
    """Whether the bundle ``files`` reproduce through their own repro.py in a fresh process
    (run from a worker of ``sandbox``); returns the verdict and repro.py's last lines."""
    limit = 2 * case_timeout + REPRO_GRACE
    try:
        code, tail = sandbox.call(run_repro, files, limit, timeout=limit + 10)
    except Exception as exc:  # the worker died, or repro.py did not finish
        return False, f"{type(exc).__name__}: {exc}"
    return code == REPRODUCES, tail
