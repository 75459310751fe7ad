"""Target adapter for onnxslim."""
