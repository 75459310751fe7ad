"""onnxoptimizer (https://github.com/onnx/optimizer) as a target: the adapter, the anchor op
types of its passes, and what it documents about its own behaviour."""
