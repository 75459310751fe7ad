"""Rules of the onnxscript target that no generated graph can make change on this machine,
each with the reason (``optfuzz coverage --target onnxscript`` names it)."""

from __future__ import annotations

_CONV_INTEGER = ("its pattern starts at ConvInteger, which the generator never emits (and "
                 "onnxruntime's CPU execution provider runs only for uint8 inputs)")

_AFTER_INLINING = ("it removes functions no node calls and opsets no node imports: generated "
                   "models have neither until InlinePass (off in a one-step list) runs")

#: rule name -> why nothing generated reaches it.
UNREACHABLE: dict[str, str] = {
    "NormalizePadFormatConvInteger": _CONV_INTEGER,
    "FuseConvIntegerPad": _CONV_INTEGER,
    "ExpandFirst_BitShift": "BitShift takes unsigned integer tensors, which the generator "
                            "does not make",
    "dropout_inference_rule": "its pattern is Dropout with a training_mode attribute, which "
                              "no Dropout version has (training_mode is an input from opset "
                              "12): no valid model matches",
    "RemoveUnusedFunctionsPass": _AFTER_INLINING,
    "RemoveUnusedOpsetsPass": _AFTER_INLINING,
    "LiftSubgraphInitializersToMainGraphPass": "the If and Loop bodies the generator builds "
                                               "hold Constant nodes, never initializers",
    "OutputFixPass": "it fixes graph outputs that are graph inputs or repeat one another, "
                     "which generated graphs never have",
    "ExpandSecond_BitShift": "BitShift takes unsigned integer tensors, which the generator "
                             "does not make",
}
