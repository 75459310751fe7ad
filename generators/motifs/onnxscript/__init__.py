"""Motif families of the onnxscript target: patterns of its rewrite rules the other families
miss, named by the rules' own names (``fuzzer/targets/onnxscript``)."""
