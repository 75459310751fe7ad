"""Motif families of the onnxslim target, named by its pattern and pass names
(``fuzzer/targets/onnxslim``)."""
