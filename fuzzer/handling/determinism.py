"""Whether a finding happens again, the same way:

* A hang or a slow run must recur (:func:`confirmed`: in the majority of three runs, the
  found one included where it ran within the whole per-case timeout), before anything else
  is spent on it.
* The original model runs deterministically (:func:`deterministic`): a second reference run
  (a fresh onnxruntime session in a fresh run of the case) gives bitwise the same outputs
  (NaN where NaN was); otherwise the seed is unusable, whatever the optimizer did.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzer.execution.case import CaseResult, TestCase, full_limit
from fuzzer.execution.sandbox import Sandbox
from oracles.base import Finding, by_majority


def confirmed(sandbox: Sandbox, case: TestCase, finding: Finding) -> Finding | None:
    """``finding`` as confirmed where its symptom shows in most runs of ``case``
    (:func:`oracles.base.by_majority`: two agreeing runs of three decide), else None.

    The run that found it is the first vote where it ran within the sandbox's per-case
    timeout (one more run, a third where they disagree). A hang found within a shorter limit
    of its own (``TestCase.timeout``: a campaign's calibrated limit,
    :mod:`fuzzer.campaign.calibration`) is a candidate only: runs at the whole timeout
    decide, and the finding confirmed is the first of theirs (its message gives the whole
    timeout)."""
    case = full_limit(case)
    shown: list[Finding] = []

    def again() -> bool:
        match = next((f for f in sandbox.run(case).findings if f.symptom == finding.symptom),
                     None)
        if match is not None:
            shown.append(match)
        return match is not None

    limit = finding.detail.get("timeout_s")
    if limit is None or limit >= sandbox.timeout:
        return finding if by_majority(True, again) else None
    return shown[0] if by_majority(again(), again) else None


def same_outputs(a: dict[str, np.ndarray] | None, b: dict[str, np.ndarray] | None) -> bool:
    """Whether two reference runs gave the same outputs: same names, dtypes, shapes and
    bits (NaN equal to NaN); sequence and optional outputs as
    :func:`fuzzer.execution.stage_driver.pack_values` lays them out."""
    from fuzzer.execution.stage_driver import pack_values

    if a is None or b is None or list(a) != list(b):
        return a is None and b is None
    a, b = pack_values(a), pack_values(b)
    if list(a) != list(b):
        return False
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
