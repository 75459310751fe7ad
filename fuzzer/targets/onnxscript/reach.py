"""Rules of the onnxscript target that no generated graph can make change on this machine,
each with the reason (``optfuzz coverage --target onnxscript`` names it)."""

from __future__ import annotations

_AFTER_INLINING = ("it removes functions no node calls and opsets no node imports: generated "
                   "models have neither until InlinePass (off in a one-step list) runs")

#: rule name -> why nothing generated reaches it.
UNREACHABLE: dict[str, str] = {
    "dropout_inference_rule": "its pattern is Dropout with a training_mode attribute, which "
                              "no Dropout version has (training_mode is an input from opset "
                              "12): no valid model matches",
    "RemoveUnusedFunctionsPass": _AFTER_INLINING,
    "RemoveUnusedOpsetsPass": _AFTER_INLINING,
}
