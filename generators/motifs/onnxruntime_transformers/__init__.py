"""Motif families of the onnxruntime-transformers target: the blocks its Python fusions look
for, named by FusionOptions flags (``fuzzer/targets/onnxruntime_transformers``)."""
