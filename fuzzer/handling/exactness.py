"""A wrong output that float64 runs explain as no bug (:func:`float64_explains`), checked on
the minimized model before it is keyed:

* A wrong output is the optimizer's doing, not the original's lost precision: where the
  optimized model agrees with a float64 run of the minimized model and the original does
  not (:mod:`fuzzer.execution.float64`), the rewrite computed the better answer and the
  finding is dropped as ``more-exact``.
* Outputs that differ in float32 where float64 runs of both models agree are float32 rounding
  (a comparison flipped at a tie, an ill-conditioned op amplifying one ulp), no wrong rewrite
  (:func:`rounding_only`).
"""

from __future__ import annotations

from typing import Any

from fuzzer.execution.case import CaseResult
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.minimize import Minimal
from fuzzer.handling.outcome import Handled
from oracles import symptom

#: the name float32 rounding that float64 runs of both models show is counted under (a
#: comparison flipped at a tie, one ulp amplified by Acos; never bundled).
ROUNDING = "float32-rounding-only"
#: what :func:`float64_explains` says of a wrong output that the optimized model computes
#: more exactly than the original.
MORE_EXACT = Handled("more-exact", name="the optimized model is the float64 answer")


def float64_explains(sandbox: Sandbox, minimal: Minimal) -> Handled | None:
    """How float64 runs explain ``minimal``'s wrong output as no bug, or None: the
    optimized model is the float64 answer and the original is not (:data:`MORE_EXACT`), or
    float64 runs of both models agree (float32 rounding, counted as :data:`ROUNDING`). Only
    for a symptom whose record asks for them (:attr:`oracles.base.Symptom.exactness`);
    the float64 runs go through ``sandbox``."""
    if not symptom(minimal.finding.symptom).exactness:
        return None
    if more_exact_than_original(sandbox, minimal.case.model_bytes, minimal.run):
        return MORE_EXACT
    if rounding_only(sandbox, minimal.case.model_bytes, minimal.run):
        return Handled("documented", name=ROUNDING)
    return None


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
