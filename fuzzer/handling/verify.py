"""Verification of a candidate bundle before it is written: a bundle is a claim to a
maintainer, so it must hold up the way the maintainer will check it.

* The original model runs deterministically: a second reference run (a fresh onnxruntime
  session in a fresh run of the case) gives bitwise the same outputs (NaN where NaN was);
  otherwise the seed is unusable, whatever the optimizer did.
* A wrong output is the optimizer's doing, not the original's lost precision: where the
  optimized model agrees with a float64 run of the minimized model and the original does
  not (:mod:`fuzzer.execution.float64`), the rewrite computed the better answer and the
  finding is dropped as ``more-exact``.
* Outputs that differ in float32 where float64 runs of both models agree are float32 rounding
  (a comparison flipped at a tie, an ill-conditioned op amplifying one ulp), no wrong rewrite
  (:func:`rounding_only`).
* The bundle reproduces in a fresh process through its own repro.py. The script runs in a
  sandbox worker, which starts it as a subprocess: starting a subprocess from the campaign
  process itself could hang, as the pool forks replacement workers that would inherit the
  subprocess's exec-status pipe.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.builds.sanitizer import without_runtime
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.report.repro import REPRODUCES

#: seconds repro.py may take beyond twice its own timeout (interpreter and imports, twice).
REPRO_GRACE = 60.0


def same_outputs(a: dict[str, np.ndarray] | None, b: dict[str, np.ndarray] | None) -> bool:
    """Whether two reference runs gave the same outputs: same names, dtypes, shapes and
    bits (NaN equal to NaN)."""
    if a is None or b is None or list(a) != list(b):
        return a is None and b is None
    for name, x in a.items():
        y = b[name]
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        same = np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") if x.dtype != object \
            else x.tolist() == y.tolist()
        if not same:
            return False
    return True


def deterministic(sandbox: Any, case: TestCase, result: CaseResult) -> bool:
    """Whether a second run of ``case`` gives the same reference outputs as ``result`` (whose
    artifacts hold the first run's). Findings whose first run kept no reference outputs
    (a crash before the reference run could be kept) count as deterministic."""
    first = result.artifacts.expected if result.artifacts is not None else None
    if first is None:
        return True
    again = sandbox.run(case.with_model(result.artifacts.model, feeds=result.artifacts.feeds,
                                        keep=True, input_shapes=None))
    second = again.artifacts.expected if again.artifacts is not None else None
    return not again.unusable and same_outputs(first, second)


def more_exact_than_original(sandbox: Any, model_bytes: bytes, result: CaseResult) -> bool:
    """Whether the optimized outputs of ``result`` (a run of ``model_bytes`` whose artifacts
    hold feeds, reference and optimized outputs) are the float64 answer rounded to float32
    while the original's are not (:func:`fuzzer.execution.float64.more_exact`); the float64
    run goes through ``sandbox``. False where there is no such run."""
    from fuzzer.execution.float64 import double_outputs, more_exact

    arts = result.artifacts
    if arts is None or arts.expected is None or arts.actual is None:
        return False
    try:
        exact = sandbox.call(double_outputs, model_bytes, dict(arts.feeds))
    except Exception:  # the worker died or timed out on it: no float64 answer
        return False
    return more_exact(arts.expected, arts.actual, exact)


def rounding_only(sandbox: Any, model_bytes: bytes, result: CaseResult) -> bool:
    """Whether the wrong outputs of ``result`` (a run of ``model_bytes`` whose artifacts hold
    feeds, optimized model, reference and optimized outputs) differ only where float64 runs
    of both models agree (:func:`fuzzer.execution.float64.rounding_only`); both float64 runs
    go through ``sandbox``. False where there is no such run."""
    from fuzzer.execution.float64 import double_outputs
    from fuzzer.execution.float64 import rounding_only as judge

    arts = result.artifacts
    if arts is None or arts.expected is None or arts.actual is None or arts.optimized is None:
        return False
    try:
        original = sandbox.call(double_outputs, model_bytes, dict(arts.feeds))
        optimized = sandbox.call(double_outputs, arts.optimized, dict(arts.feeds))
    except Exception:  # the worker died or timed out on it: no float64 answer
        return False
    return judge(arts.expected, arts.actual, original, optimized)


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
