"""The onnxscript target: ``onnxscript.optimizer.optimize`` and the rewriter's rule sets."""
