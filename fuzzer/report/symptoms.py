"""How an issue draft speaks of each symptom (design.md, "Symptoms"): a phrase for the title
and the behaviour a maintainer should expect instead."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SymptomText:
    """``title``: what the target does wrong, after "<pass>"; ``expected``: a sentence."""

    title: str
    expected: str


SYMPTOM_TEXT: dict[str, SymptomText] = {
    "optimizer-error": SymptomText("raises an exception",
                                   "`optimize` returns an optimized model."),
    "optimizer-abort": SymptomText("crashes the process",
                                   "`optimize` returns; the process is not killed by a signal."),
    "hang": SymptomText("does not terminate", "`optimize` returns within seconds."),
    "invalid-model": SymptomText(
        "produces an invalid model",
        "The optimized model passes `onnx.checker.check_model(full_check=True)` and strict "
        "shape inference, as the input model does."),
    "load-failure": SymptomText(
        "produces a model onnxruntime cannot load",
        "onnxruntime loads the optimized model, as it loads the input model."),
    "runtime-failure": SymptomText(
        "produces a model that fails at run time",
        "onnxruntime runs the optimized model on the same inputs, as it runs the input model."),
    "output-mismatch": SymptomText(
        "changes the model's outputs",
        "The optimized model computes the same outputs as the input model (same count, "
        "dtypes and shapes; values within tolerance)."),
    "metric-drift": SymptomText(
        "changes the model's predictions",
        "The optimized model's task-level predictions match the input model's."),
    "bloat": SymptomText(
        "makes the model larger",
        "The optimized model has no more nodes than the input and no unused initializers."),
    "metadata-change": SymptomText(
        "changes the model's interface",
        "IR version, opset imports and graph inputs/outputs stay as they were."),
}


def symptom_text(symptom: str) -> SymptomText:
    """The wording for ``symptom``; a generic one for a symptom this table lacks."""
    return SYMPTOM_TEXT.get(symptom, SymptomText(f"shows `{symptom}`",
                                                 "The optimized model behaves as the input."))
