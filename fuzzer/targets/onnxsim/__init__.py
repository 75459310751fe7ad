"""Target adapter for onnx-simplifier (``onnxsim``)."""
