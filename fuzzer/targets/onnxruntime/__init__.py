"""Target adapter for onnxruntime's graph optimizer (see :mod:`.target`)."""
