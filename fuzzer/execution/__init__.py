"""Running test cases in isolation: the worker processes, the differential test pipeline
inside them, and the reference runs in onnxruntime.

In: :class:`fuzzer.execution.case.TestCase` (a model or its provenance, feeds, a target and
its configuration). Out: :class:`fuzzer.execution.case.CaseResult` (the oracles' findings, an
unusable-seed reason, node counts, timings and, for findings, the artifacts a bundle needs).
Optimizers, onnx's checker and onnxruntime run on test models only in the sandbox's workers.
"""
