"""Validity oracle: onnx.checker (full_check) or strict shape inference rejects the optimized
model while accepting the original (the pipeline checks the original only on failure)."""

from __future__ import annotations

from oracles.base import Finding, Outcome, oracle


@oracle("invalid-model")
def invalid_model(outcome: Outcome) -> list[Finding]:
    """The optimized model is not a valid ONNX model."""
    if outcome.status == "error" and outcome.stage == "validate":
        return [Finding("invalid-model", "validate", outcome.error or "invalid model")]
    return []
