"""Reduction of fake-target findings through a real sandbox: chains, an If subgraph, a
Shape-heavy model with dynamic dims; every result is valid and still reproduces."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.delta.ddmin import ddmin
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.reduce import reduce_finding
from fuzzer.reduce.candidate import Built
from fuzzer.reduce.edits import EDITS
from fuzzer.reduce.predicate import Budget, Predicate, is_valid
from fuzzer.reduce.reducer import reduce_model
from fuzzer.reduce.signature_check import SignatureCheck
from fuzzer.targets.fake import UNARY

OPSET = helper.make_opsetid("", 17)


def _model(nodes: list, inputs: list, outputs: list, inits: list | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    return helper.make_model(graph, opset_imports=[OPSET], ir_version=8)


def chain(length: int, neg_at: int) -> onnx.ModelProto:
    """x[N,4] -> Add/Mul/Sub with a constant ... with one Neg at ``neg_at``."""
    nodes, prev = [], "x"
    for i in range(length):
        op = "Neg" if i == neg_at else ("Add", "Mul", "Sub")[i % 3]
        ins = [prev] if op == "Neg" else [prev, "c"]
        nodes.append(helper.make_node(op, ins, [f"/l{i}/out"], name=f"/l{i}/{op}"))
        prev = f"/l{i}/out"
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                  [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 4])],
                  [helper.make_tensor("c", TensorProto.FLOAT, [4], [0.5, 0.25, 1.0, 2.0])])


def with_if() -> onnx.ModelProto:
    """Relu -> If(cond; then: Add(outer h, c), else: Mul(outer h, c)) -> Neg -> Sigmoid."""
    then_g = helper.make_graph([helper.make_node("Add", ["h", "c"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 4])])
    else_g = helper.make_graph([helper.make_node("Mul", ["h", "c"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3, 4])])
    nodes = [
        helper.make_node("Relu", ["x"], ["h"]),
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["branch"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Neg", ["branch"], ["n"]),
        helper.make_node("Sigmoid", ["n"], ["y"]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
                  [helper.make_tensor("c", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0]),
                   helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])


def shape_heavy() -> onnx.ModelProto:
    """x[batch, seq, 8] -> Shape/Gather/Concat -> Reshape to [batch*seq, 8] -> Neg -> Reshape
    back with the recorded Shape; dims are symbolic."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "i1"], ["s"], axis=0),
        helper.make_node("Mul", ["b", "s"], ["bs"]),
        helper.make_node("Unsqueeze", ["bs", "ax0"], ["bs1"]),
        helper.make_node("Concat", ["bs1", "eight"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
        helper.make_node("Tanh", ["flat"], ["t"]),
        helper.make_node("Neg", ["t"], ["n"]),
        helper.make_node("Reshape", ["n", "shape"], ["y"]),
    ]
    inits = [helper.make_tensor("i0", i64, [], [0]), helper.make_tensor("i1", i64, [], [1]),
             helper.make_tensor("ax0", i64, [1], [0]), helper.make_tensor("eight", i64, [1], [8])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                        ["batch", "seq", 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                 ["batch", "seq", 8])], inits)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(jobs=1, timeout=20) as box:
        yield box


def _reduce(sandbox: Sandbox, model: onnx.ModelProto, passes: list[str],
            feeds: dict[str, np.ndarray]) -> tuple[onnx.ModelProto, Built, SignatureCheck]:
    case = TestCase("fake", {"passes": passes, "fixed_point": False},
                    {"kind": "file", "path": "test"}, model_bytes=model.SerializeToString(),
                    feeds=feeds)
    result = sandbox.run(case)
    finding = result.findings[0]
    minimized = reduce_finding(sandbox, case, result, finding, passes, 60.0)
    assert minimized is not None
    reduced = onnx.load_from_string(minimized.model)
    again = SignatureCheck(sandbox, case, finding.symptom, finding.message, Budget(30))
    assert again(Built(reduced, minimized.feeds)), "the minimized model no longer reproduces"
    assert is_valid(reduced) and reduced.ir_version <= 13
    if finding.symptom == "output-mismatch":
        assert minimized.expected is not None and minimized.actual is not None
        assert minimized.optimized is not None
    return reduced, Built(reduced, minimized.feeds), again


def test_ddmin_finds_the_one_minimal_pair() -> None:
    assert ddmin(list(range(40)), lambda s: 7 in s and 31 in s) == (7, 31)


@pytest.mark.parametrize("bug", ["drop-node", "invalid", "raise", "bloat"])
def test_fake_bug_in_a_long_chain_shrinks_to_at_most_four_nodes(sandbox: Sandbox,
                                                                 bug: str) -> None:
    feeds = {"x": np.random.default_rng(0).random((3, 4), dtype=np.float32)}
    reduced, _, _ = _reduce(sandbox, chain(120, 70), [bug], feeds)
    assert len(reduced.graph.node) <= 4
    if bug == "drop-node":
        assert [n.op_type for n in reduced.graph.node] == ["Neg"]
        assert reduced.graph.node[0].name == ""  # node names dropped


def test_if_subgraph_model_reduces_and_stays_valid(sandbox: Sandbox) -> None:
    feeds = {"x": np.random.default_rng(1).random((3, 4), dtype=np.float32)}
    reduced, _, _ = _reduce(sandbox, with_if(), ["drop-node"], feeds)
    assert len(reduced.graph.node) == 1 and reduced.graph.node[0].op_type in UNARY


class Feeds(Predicate):
    """Fails while a ``producer`` node feeds input ``index`` of a ``consumer`` node (a
    structural check, no optimizer)."""

    def __init__(self, producer: str, consumer: str, index: int) -> None:
        super().__init__(Budget(30))
        self.producer, self.consumer, self.index = producer, consumer, index

    def run(self, built: Built, key: str) -> bool:
        nodes = built.model.graph.node
        made = {o for n in nodes if n.op_type == self.producer for o in n.output}
        return any(n.op_type == self.consumer and len(n.input) > self.index
                   and n.input[self.index] in made for n in nodes)


def test_if_subgraph_kept_when_the_failure_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The If survives with its branches' outer references (h from Relu, the initializer c)
    defined by recorded values; every candidate passed the checker."""
    monkeypatch.delitem(EDITS, "tensor_names")  # keep names to compare (tests/test_probes.py)
    model = with_if()
    feeds = {"x": np.random.default_rng(2).random((3, 4), dtype=np.float32)}
    reduction = reduce_model(model, feeds, Feeds("If", "Neg", 0))
    reduced = reduction.built.model
    assert [n.op_type for n in reduced.graph.node] == ["If", "Neg"]
    assert {i.name for i in reduced.graph.input} == {"cond", "h"}
    assert [t.name for t in reduced.graph.initializer] == ["c"]
    assert is_valid(reduced)
    np.testing.assert_array_equal(reduction.built.feeds["h"], np.maximum(feeds["x"], 0))


def test_shape_heavy_dynamic_model(sandbox: Sandbox) -> None:
    feeds = {"x": np.random.default_rng(3).random((2, 5, 8), dtype=np.float32)}
    reduced, _, _ = _reduce(sandbox, shape_heavy(), ["drop-node"], feeds)
    assert len(reduced.graph.node) == 1 and reduced.graph.node[0].op_type in UNARY


def test_shape_heavy_cut_keeps_dynamic_dims_and_int64_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(EDITS, "tensor_names")  # keep names to compare (tests/test_probes.py)
    feeds = {"x": np.random.default_rng(4).random((2, 5, 8), dtype=np.float32)}
    reduction = reduce_model(shape_heavy(), feeds, Feeds("Concat", "Reshape", 1))
    reduced = reduction.built.model
    assert [n.op_type for n in reduced.graph.node] == ["Concat", "Reshape"]
    assert is_valid(reduced)
    x = next(i for i in reduced.graph.input if i.name == "x")
    assert [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim][:2] == \
        ["batch", "seq"]
    assert reduction.built.feeds["bs1"].tolist() == [10]  # recorded Shape-derived value
