"""Random valid ONNX graphs, pass-relevant motifs, input synthesis and Hypothesis strategies."""
