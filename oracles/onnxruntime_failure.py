"""onnxruntime oracles: it loads and runs the original, but fails on the optimized model while
loading it (``load-failure``) or running it (``runtime-failure``): an exception, or a signal
that killed the worker."""

from __future__ import annotations

from oracles.base import Finding, Oracle, Outcome, Symptom, register
from oracles.crash import signal_name


def stage_failure(symptom: str, stage: str, doing: str) -> Oracle:
    """The oracle reporting ``symptom`` for an error or a signal during ``stage``."""

    def judge(outcome: Outcome) -> list[Finding]:
        if outcome.stage != stage:
            return []
        if outcome.status == "error":
            return [Finding(symptom, stage, outcome.error or f"{doing} failed")]
        if outcome.status == "signal":
            return [Finding(symptom, stage,
                            f"onnxruntime killed by {signal_name(outcome.signal)} while {doing}",
                            {"signal": outcome.signal})]
        return []

    judge.__doc__ = f"onnxruntime fails while {doing} the optimized model."
    return judge


register(Symptom(
    "load-failure", 50, ("load",), stage_failure("load-failure", "load", "loading"),
    "produces a model onnxruntime cannot load",
    "onnxruntime loads the optimized model, as it loads the input model."))
register(Symptom(
    "runtime-failure", 60, ("execute",), stage_failure("runtime-failure", "execute", "running"),
    "produces a model that fails at run time",
    "onnxruntime runs the optimized model on the same inputs, as it runs the input model."))
