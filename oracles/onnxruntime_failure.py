"""onnxruntime oracles: it loads and runs the original, but fails on the optimized model while
loading it (``load-failure``) or running it (``runtime-failure``): an exception, or a signal
that killed the worker."""

from __future__ import annotations

from oracles.base import Finding, Oracle, Outcome, oracle
from oracles.crash import signal_name

#: symptom -> (stage, what onnxruntime was doing).
STAGE_SYMPTOMS: dict[str, tuple[str, str]] = {
    "load-failure": ("load", "loading"),
    "runtime-failure": ("execute", "running"),
}


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


for _symptom, (_stage, _doing) in STAGE_SYMPTOMS.items():
    oracle(_symptom)(stage_failure(_symptom, _stage, _doing))
