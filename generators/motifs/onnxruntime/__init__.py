"""Motif families of the onnxruntime target: its graph transformers and rewrite rules (fusions,
MatMul rewrites, transformer-block fusions, shape rewrites, QDQ propagation), named by the
transformers' own names (``fuzzer/targets/onnxruntime``)."""
