"""Motif families of the onnx version converter target: ops whose form changed between
opsets, named by the adapters' ``Op A->B`` names (``fuzzer/targets/version_converter``)."""
