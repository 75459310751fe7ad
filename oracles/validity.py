"""Validity oracle: onnx.checker (full_check) or strict shape inference rejects the optimized
model while accepting the original (the pipeline checks the original only on failure)."""

from __future__ import annotations

from oracles.base import Finding, Outcome, Symptom, register


def invalid_model(outcome: Outcome) -> list[Finding]:
    """The optimized model is not a valid ONNX model."""
    if outcome.status == "error" and outcome.stage == "validate":
        return [Finding("invalid-model", "validate", outcome.error or "invalid model")]
    return []


register(Symptom(
    "invalid-model", 40, ("validate",), invalid_model, "produces an invalid model",
    "The optimized model passes `onnx.checker.check_model(full_check=True)` and strict shape "
    "inference, as the input model does.", footprint=True, severity_class="invalid-model"))
