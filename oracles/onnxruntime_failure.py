"""onnxruntime oracles: it loads and runs the original, but fails on the optimized model while
loading it (``load-failure``) or running it (``runtime-failure``): an exception, or a signal
that killed the worker.

A run-time failure's ``detail["error_class"]`` is the exception and onnxruntime's status code
(``Fail: FAIL``, ``InvalidArgument: INVALID_ARGUMENT``) or the signal, without the kernel
that failed: a wrong rewrite fails in whichever kernel happens to consume its output (a
fused Squeeze with wrong axes fails in the Squeeze itself, or in a Reshape after it), so the
class stands for the message where a reduction must keep "the same failure". A load
failure keeps its message there: onnxruntime's check at session start names the rule the node
breaks (``pool_attributes.h:88``). Both are wrong rewrites (``fault="rewrite"``): their
root-cause key is what the culprit pass did, whatever kernel or check reports it.
"""

from __future__ import annotations

import re

from oracles.base import Finding, Oracle, Outcome, Symptom, register
from oracles.crash import signal_name

_STATUS = re.compile(r"\[ONNXRuntimeError\] : \d+ : (\w+)")


def run_error_class(message: str) -> str:
    """``"<exception>: <status code>"`` of an onnxruntime error ``message`` (as the
    stage driver's ``error_text`` writes it: ``"Fail: [ONNXRuntimeError] : 1 : FAIL : ..."``);
    the exception alone where no status code is printed."""
    kind = message.partition(": ")[0]
    status = _STATUS.search(message)
    return f"{kind}: {status.group(1)}" if status else kind


def stage_failure(symptom: str, stage: str, doing: str) -> Oracle:
    """The oracle reporting ``symptom`` for an error or a signal during ``stage``."""

    def judge(outcome: Outcome) -> list[Finding]:
        if outcome.stage != stage:
            return []
        if outcome.status == "error":
            message = outcome.error or f"{doing} failed"
            return [Finding(symptom, stage, message, {"error_class": run_error_class(message)})]
        if outcome.status in ("signal", "sanitizer"):
            name = signal_name(outcome.signal) if outcome.status == "signal" else \
                "a sanitizer report"
            return [Finding(symptom, stage, f"onnxruntime killed by {name} while {doing}",
                            {"signal": outcome.signal, "error_class": name})]
        return []

    judge.__doc__ = f"onnxruntime fails while {doing} the optimized model."
    return judge


register(Symptom(
    "load-failure", 50, ("load",), stage_failure("load-failure", "load", "loading"),
    "produces a model onnxruntime cannot load",
    "onnxruntime loads the optimized model, as it loads the input model.",
    footprint=True, fault="rewrite", corpus_column="crash_or_invalid",
    words="onnxruntime cannot load the result", check="onnxruntime",
    reproduced="onnxruntime cannot load the result"))
register(Symptom(
    "runtime-failure", 60, ("execute",), stage_failure("runtime-failure", "execute", "running"),
    "produces a model that fails at run time",
    "onnxruntime runs the optimized model on the same inputs, as it runs the input model.",
    footprint=True, key_detail="error_class", fault="rewrite", corpus_column="crash_or_invalid",
    words="onnxruntime fails running the result", check="onnxruntime",
    reproduced="onnxruntime fails running the result"))
