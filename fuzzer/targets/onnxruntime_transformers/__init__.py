"""Target adapter for onnxruntime's Python transformer fusions (see :mod:`.target`)."""
