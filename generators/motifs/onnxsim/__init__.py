"""Motif families of the onnx-simplifier target: constant folding and fusions that need its
shape inference, named by its pass names (``fuzzer/targets/onnxsim``)."""
