"""The reducer's spec gate (:mod:`fuzzer.reduce.reference_valid`): a candidate that reproduces
is kept only where the ONNX reference evaluator runs it with onnxruntime's output shapes.

What was observed (onnx 1.23.2, onnxruntime 1.32.0, numpy 2.4.6) when looking for a model
that onnxruntime runs and the spec forbids:

- Einsum ``ij,jk->ik`` on inputs of shape [2,1] and [3,4] (contracted dims 1 against 3):
  onnxruntime returns shape [2,4], and so does the reference evaluator, whose Einsum is
  ``numpy.einsum`` and broadcasts a dim of size 1 the same way; onnx's strict shape
  inference accepts it too. So the gate checks Einsum's labels itself
  (:func:`fuzzer.reduce.reference_valid.einsum_mismatch`): a 20-minute onnxoptimizer campaign
  kept a reduced ``bij,bkj->bik`` on [1,1,1] and [1,4,5], which blamed
  replace_einsum_with_matmul for what the reduction did.
- MatMul and Gemm with mismatched inner dims ([2,1] by [3,4]) are refused by onnxruntime
  itself (and by the evaluator): they never reproduce, so the gate never sees them.
- Compress whose condition is longer than the input along its axis (condition of 4 on an
  input of 1 or 2 rows; the spec allows a shorter condition only): onnxruntime runs it
  (shape [1,3]), the reference evaluator raises IndexError. The reducer makes exactly this
  model when it shrinks the dims of a graph input feeding a Compress (``dims`` edits).
- CumSum with a 1-D ``axis`` input of shape [1] (the spec asks for a 0-D tensor):
  onnxruntime runs it, the reference evaluator raises "Axis must be a rank-0 tensor".

No op was found where both run and the shapes differ; the shape comparison is tested with
wrong expected shapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import fuzzer.reduce.reference_valid as reference_valid
import fuzzer.reduce.signature_check as signature_check
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox, SandboxError
from fuzzer.reduce import reduce_finding
from fuzzer.reduce.candidate import Built
from fuzzer.reduce.predicate import Budget
from fuzzer.reduce.reducer import reduce_model
from fuzzer.reduce.reference_valid import (
    INVALID,
    MAX_NODES,
    UNKNOWN,
    VALID,
    ReferenceGate,
    Verdict,
    output_shapes,
    reference_verdict,
)
from fuzzer.reduce.signature_check import SignatureCheck
from fuzzer.reduce.values import record_sandboxed

OPSET = helper.make_opsetid("", 17)
CONDITION = np.array([True, False, True, False])


def _model(nodes: list, inputs: list, outputs: list, inits: list | None = None,
           opsets: list | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    return helper.make_model(graph, opset_imports=opsets or [OPSET], ir_version=8)


def compress(rows: int) -> onnx.ModelProto:
    """x[rows,3] -> Compress(condition [T,F,T,F], axis 0) -> y: valid for rows >= 4 only."""
    return _model([helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
                  [numpy_helper.from_array(CONDITION, "c")])


def cumsum_1d_axis() -> onnx.ModelProto:
    """x[2,3] -> CumSum(axis: an int64 tensor of shape [1], where the spec wants 0-D)."""
    return _model([helper.make_node("CumSum", ["x", "axis"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                  [numpy_helper.from_array(np.array([1], np.int64), "axis")])


def einsum(left: list[int], right: list[int]) -> onnx.ModelProto:
    """Einsum ``ij,jk->ik`` of inputs a[left] and b[right]."""
    return _model([helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")],
                  [helper.make_tensor_value_info("a", TensorProto.FLOAT, left),
                   helper.make_tensor_value_info("b", TensorProto.FLOAT, right)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])])


def random_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Float32 feeds in [0, 1) for every graph input of ``model`` (fixed dims only)."""
    rng = np.random.default_rng(seed)
    return {i.name: rng.random([d.dim_value for d in i.type.tensor_type.shape.dim],
                               dtype=np.float32) for i in model.graph.input}


def onnxruntime_outputs(model: onnx.ModelProto,
                        feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs of onnxruntime (CPU, no graph optimization) of a small trusted model."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One worker with a generous per-case timeout (seconds), as tests/test_reduce.py."""
    with Sandbox(jobs=1, timeout=20) as box:
        yield box


class InProcess:
    """A stand-in sandbox that runs ``call`` in this process, counting the calls."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls = 0
        self.error = error

    def call(self, function: Any, *args: Any, timeout: float | None = None) -> Any:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return function(*args)


def _verdict(sandbox: Sandbox, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
             shapes: dict[str, tuple[int, ...]]) -> Verdict:
    return sandbox.call(reference_verdict, model.SerializeToString(), feeds, shapes)


@pytest.mark.parametrize("make", [partial(compress, 1), partial(compress, 2), cumsum_1d_axis],
                         ids=["compress-1-row", "compress-2-rows", "cumsum-1d-axis"])
def test_worker_rejects_a_model_onnxruntime_runs_but_the_spec_forbids(
        sandbox: Sandbox, make: Any) -> None:
    """The checker (full_check) accepts each model and onnxruntime runs it; the reference
    evaluator refuses it, so the worker's verdict is invalid."""
    model = make()
    onnx.checker.check_model(model, full_check=True)
    feeds = random_feeds(model)
    expected = onnxruntime_outputs(model, feeds)
    verdict = _verdict(sandbox, model, feeds, output_shapes(expected))
    assert verdict.kind == INVALID, verdict
    assert "reference evaluator refuses" in verdict.reason


def test_worker_rejects_an_einsum_whose_labels_disagree(sandbox: Sandbox) -> None:
    """Both runtimes broadcast the contracted dim of 1 against 3; the gate's own Einsum
    rule refuses it (the dims of one label must agree)."""
    model = einsum([2, 1], [3, 4])
    feeds = random_feeds(model)
    verdict = _verdict(sandbox, model, feeds, output_shapes(onnxruntime_outputs(model, feeds)))
    assert verdict.kind == INVALID and "label 'j' has dimension 1 and 3" in verdict.reason


@pytest.mark.parametrize("model", [compress(4), compress(6), einsum([2, 3], [3, 4])],
                         ids=["compress-4-rows", "compress-6-rows", "einsum"])
def test_worker_accepts_a_valid_model(sandbox: Sandbox, model: onnx.ModelProto) -> None:
    feeds = random_feeds(model)
    assert _verdict(sandbox, model, feeds,
                    output_shapes(onnxruntime_outputs(model, feeds))) == Verdict(VALID)


def test_worker_rejects_an_output_of_another_shape(sandbox: Sandbox) -> None:
    model = compress(4)
    verdict = _verdict(sandbox, model, random_feeds(model), {"y": (3, 3)})
    assert verdict.kind == INVALID and "shape [2, 3]" in verdict.reason


def test_worker_rejects_an_output_whose_rank_its_graph_declares_otherwise(
        sandbox: Sandbox) -> None:
    """A ReduceMax whose ``keepdims=0`` a reduction dropped computes [1, 1] where the graph
    still declares a scalar: onnxruntime and the evaluator agree, the declaration does not."""
    def reduce_max(declared: list[int] | None) -> onnx.ModelProto:
        return _model([helper.make_node("ReduceMax", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, declared)])

    for declared, kind in (([], INVALID), ([1, 1], VALID), ([None, 1], VALID), (None, VALID)):
        model = reduce_max(declared)
        feeds = random_feeds(model)
        verdict = _verdict(sandbox, model, feeds, output_shapes(onnxruntime_outputs(model, feeds)))
        assert verdict.kind == kind, (declared, verdict)
    assert "the graph declares []" in _verdict(sandbox, reduce_max([]), feeds, {}).reason


def test_worker_cannot_tell_an_op_the_evaluator_does_not_implement(sandbox: Sandbox) -> None:
    model = _model([helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                   opsets=[OPSET, helper.make_opsetid("com.microsoft", 1)])
    verdict = _verdict(sandbox, model, random_feeds(model), {"y": (2, 3)})
    assert verdict.kind == UNKNOWN, verdict


def test_gate_rejects_through_the_sandbox_and_caches(sandbox: Sandbox) -> None:
    gate = ReferenceGate(sandbox)
    bad, good = compress(1), compress(4)
    bad_feeds, good_feeds = random_feeds(bad), random_feeds(good)
    assert not gate(Built(bad, bad_feeds), onnxruntime_outputs(bad, bad_feeds))
    assert gate(Built(good, good_feeds), onnxruntime_outputs(good, good_feeds))
    assert not gate(Built(bad, bad_feeds), onnxruntime_outputs(bad, bad_feeds))
    assert (gate.checked, gate.rejected) == (2, 2)


def test_gate_accepts_unchecked_what_it_cannot_tell() -> None:
    """A model over the node limit, a worker that timed out: each is accepted ("cannot
    tell"). A candidate whose run kept no reference outputs (an invalid model or a crash
    is found before outputs are compared) is still run by the evaluator: a 20-minute
    onnxoptimizer campaign's invalid-model reduction went unchecked that way to a
    spec-invalid Einsum."""
    bad = compress(1)
    feeds = random_feeds(bad)
    expected = onnxruntime_outputs(bad, feeds)
    local = InProcess()
    assert not ReferenceGate(local)(Built(bad, feeds), None)
    assert local.calls == 1
    local = InProcess()
    large = onnx.ModelProto()
    large.CopyFrom(bad)
    large.graph.node.extend(helper.make_node("Identity", ["x"], [f"i{n}"])
                            for n in range(MAX_NODES))
    assert ReferenceGate(local)(Built(large, feeds), expected)
    assert local.calls == 0
    hung = InProcess(SandboxError("reference_verdict: no result after 5 s"))
    gate = ReferenceGate(hung)
    assert gate(Built(bad, feeds), expected) and hung.calls == 1
    assert gate.last is not None and gate.last.kind == UNKNOWN


def test_gate_turns_off_where_the_original_is_invalid_too() -> None:
    """An original that the evaluator refuses itself: no candidate can be more valid, so the
    first rejection checks it and turns the gate off instead of stopping the reduction."""
    original, candidate = compress(2), compress(1)
    start = Built(original, random_feeds(original))
    gate = ReferenceGate(InProcess(), original=(start, onnxruntime_outputs(original,
                                                                           start.feeds)))
    feeds = random_feeds(candidate)
    assert gate(Built(candidate, feeds), onnxruntime_outputs(candidate, feeds))
    assert not gate.enabled

    valid = compress(4)
    start = Built(valid, random_feeds(valid))
    gate = ReferenceGate(InProcess(), original=(start, onnxruntime_outputs(valid, start.feeds)))
    assert not gate(Built(candidate, feeds), onnxruntime_outputs(candidate, feeds))
    assert gate.enabled and gate.original is None  # checked once


def compress_chain() -> onnx.ModelProto:
    """x[4,3] -> Relu -> Sigmoid -> Compress(condition [T,F,T,F], axis 0) -> Neg -> y[2,3]."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Sigmoid", ["r"], ["s"]),
             helper.make_node("Compress", ["s", "c"], ["k"], axis=0),
             helper.make_node("Neg", ["k"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                  [numpy_helper.from_array(CONDITION, "c")])


class NeedsCompress(SignatureCheck):
    """The fake target's ``drop-node`` finding, counted only where a Compress node is left:
    a failure that needs the Compress, as a real one needed its Einsum."""

    def run(self, built: Built, key: str) -> bool:
        if not any(n.op_type == "Compress" for n in built.model.graph.node):
            return False
        return super().run(built, key)


def _rows(built: Built) -> int:
    """Rows of the candidate's one fed input (what reaches the Compress node, through a
    unary node or not)."""
    (feed,) = built.feeds.values()
    return feed.shape[0]


def test_reducer_keeps_a_larger_valid_candidate(sandbox: Sandbox,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the gate the reducer shrinks the Compress input to one row (onnxruntime runs
    it and the finding reproduces, but the reference evaluator refuses it); through
    ``reduce_finding`` it keeps the last candidate that passes: four rows, a valid model."""
    model = compress_chain()
    feeds = {"x": np.random.default_rng(5).random((4, 3), dtype=np.float32)}
    case = TestCase("fake", {"passes": ["drop-node"], "fixed_point": False},
                    {"kind": "file", "path": "test"}, model_bytes=model.SerializeToString(),
                    feeds=feeds)
    result = sandbox.run(case)
    finding = result.findings[0]
    assert finding.symptom == "output-mismatch"

    ungated = NeedsCompress(sandbox, case, finding.symptom, finding.message, Budget(60),
                            finding.detail)
    loose = reduce_model(model, feeds, ungated, record_sandboxed(sandbox, model, feeds),
                         partial(record_sandboxed, sandbox)).built
    assert _rows(loose) < 4, "the invalid candidate should reproduce without the gate"
    assert _verdict(sandbox, loose.model, loose.feeds,
                    output_shapes(onnxruntime_outputs(loose.model, loose.feeds))).kind == INVALID

    gates: list[ReferenceGate] = []

    class Recorded(ReferenceGate):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            gates.append(self)

    monkeypatch.setattr(signature_check, "SignatureCheck", NeedsCompress)
    monkeypatch.setattr(reference_valid, "ReferenceGate", Recorded)
    minimized = reduce_finding(sandbox, case, result, finding, ["drop-node"], 60.0)
    assert len(gates) == 1 and gates[0].rejected >= 1 and gates[0].enabled
    assert minimized is not None and minimized.expected is not None
    reduced = onnx.load_from_string(minimized.model)
    kept = Built(reduced, minimized.feeds)
    assert len(reduced.graph.node) == 2 and "Compress" in {n.op_type for n in reduced.graph.node}
    assert _rows(kept) == 4 > _rows(loose)
    assert _verdict(sandbox, reduced, minimized.feeds,
                    output_shapes(minimized.expected)) == Verdict(VALID)
    again = NeedsCompress(sandbox, case, finding.symptom, finding.message, Budget(30),
                          finding.detail, ReferenceGate(sandbox))
    assert again(kept), "the minimized model no longer reproduces"
