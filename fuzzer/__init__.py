"""optfuzz: a differential fuzzer for ONNX graph optimizers (the campaign package)."""

__version__ = "0.1.0"
