"""Name simplification in the reducer and the trigger probes.

A failure that needs a tensor named by a small number (an optimizer naming its temporaries
from a counter collides with it) keeps 8 of 12 nodes without the name edits and shrinks to
one node with them; the probes name that trigger, and for a fake-target bug that depends on
nothing they return the neutral model."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.reduce.candidate import Built
from fuzzer.reduce.edits import EDITS, neutral_names, smaller_numbers
from fuzzer.reduce.predicate import Budget, Predicate, is_valid
from fuzzer.reduce.probes import PROBES, probe_triggers
from fuzzer.reduce.reducer import reduce_model
from fuzzer.reduce.signature_check import SignatureCheck

F32 = TensorProto.FLOAT


def _names(model: onnx.ModelProto) -> set[str]:
    graph = model.graph
    names = {v.name for v in [*graph.input, *graph.output]} | {t.name for t in graph.initializer}
    return names | {n for node in graph.node for n in [*node.input, *node.output]}


class CounterCollision(Predicate):
    """An optimizer that names its temporaries "0", "1", ... (one per node) fails when a
    tensor already holds one of those names: some tensor is named by a number below the
    node count."""

    def __init__(self) -> None:
        super().__init__(Budget(60))

    def run(self, built: Built, key: str) -> bool:
        count = len(built.model.graph.node)
        return any(n.isdigit() and int(n) < count for n in _names(built.model))


class Structural(Predicate):
    """Fails while ``holds(model)``; no optimizer involved."""

    def __init__(self, holds: object) -> None:
        super().__init__(Budget(60))
        self.holds = holds

    def run(self, built: Built, key: str) -> bool:
        return bool(self.holds(built.model))  # type: ignore[operator]


def exported_chain(length: int = 12, numeric_at: int = 4) -> onnx.ModelProto:
    """input.1[3,4] -> Add/Mul/Sub with a weight ..., names in exporter style; the output of
    node ``numeric_at`` is named "7"."""
    nodes, prev = [], "input.1"
    for i in range(length):
        op = ("Add", "Mul", "Sub")[i % 3]
        out = "7" if i == numeric_at else f"/layer{i}/{op}_output_0"
        nodes.append(helper.make_node(op, [prev, "onnx::Add_w"], [out], name=f"/layer{i}/{op}"))
        prev = out
    graph = helper.make_graph(
        nodes, "exported", [helper.make_tensor_value_info("input.1", F32, [3, 4])],
        [helper.make_tensor_value_info(prev, F32, [3, 4])],
        [helper.make_tensor("onnx::Add_w", F32, [4], [0.5, 0.25, 1.0, 2.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def weights_and_defaults() -> onnx.ModelProto:
    """x[3,4] -> Mul(Constant k) -> Add(initializer c) -> LeakyRelu(alpha=0.01, the default)
    -> Elu() -> Neg -> y, with value_info for the intermediates."""
    nodes = [
        helper.make_node("Constant", [], ["k"],
                         value=helper.make_tensor("k", F32, [4], [1.0, 2.0, 3.0, 4.0])),
        helper.make_node("Mul", ["x", "k"], ["m"], name="mul"),
        helper.make_node("Add", ["m", "c"], ["a"], name="add"),
        helper.make_node("LeakyRelu", ["a"], ["l"], alpha=0.01),
        helper.make_node("Elu", ["l"], ["e"]),
        helper.make_node("Neg", ["e"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F32, [3, 4])],
        [helper.make_tensor_value_info("y", F32, [3, 4])],
        [helper.make_tensor("c", F32, [4], [0.5, -0.25, 1.0, -2.0])],
        value_info=[helper.make_tensor_value_info(n, F32, [3, 4]) for n in "male"])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


FEEDS = {"input.1": np.random.default_rng(0).random((3, 4), dtype=np.float32)}


def test_smaller_numbers_are_zero_one_then_halves() -> None:
    assert smaller_numbers(12) == [0, 1, 6, 3]
    assert smaller_numbers(1) == [0]
    assert smaller_numbers(0) == []


def test_numeric_name_failure_shrinks_only_with_the_name_edits_or_renumbered_deletions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import fuzzer.reduce.delete as delete

    model = exported_chain()
    with monkeypatch.context() as patch:
        patch.delitem(EDITS, "tensor_names")
        patch.setattr(delete, "renumbered", lambda built, removed: None)
        without = reduce_model(model, FEEDS, CounterCollision())
    assert len(without.built.model.graph.node) >= 8
    assert "7" in _names(without.built.model)
    with monkeypatch.context() as patch:
        patch.delitem(EDITS, "tensor_names")
        renumbered_only = reduce_model(model, FEEDS, CounterCollision())
    assert len(renumbered_only.built.model.graph.node) <= 2

    reduction = reduce_model(model, FEEDS, CounterCollision())
    reduced = reduction.built
    assert len(reduced.model.graph.node) <= 2
    assert "0" in _names(reduced.model)  # "7" renamed to the smallest number that collides
    assert is_valid(reduced.model)
    assert set(reduced.feeds) == {i.name for i in reduced.model.graph.input}
    assert all(not n.name for n in reduced.model.graph.node)  # node names dropped


def test_neutral_names_win_even_where_they_are_longer() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="r"),
         helper.make_node("Neg", ["a"], ["y"], name="n")],
        "g", [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    has_neg = Structural(lambda m: any(n.op_type == "Neg" for n in m.graph.node))
    reduced = reduce_model(model, {"x": np.ones(2, np.float32)}, has_neg).built
    assert [n.op_type for n in reduced.model.graph.node] == ["Neg"]
    assert _names(reduced.model) == {"t0", "t1"} and set(reduced.feeds) == {"t0"}


def test_neutral_names_rename_subgraph_references_and_feeds() -> None:
    then_g = helper.make_graph([helper.make_node("Add", ["h", "c"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F32, [4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["h"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F32, [4])])
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"]),
         helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
        "g", [helper.make_tensor_value_info("x", F32, [4]),
              helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", F32, [4])],
        [helper.make_tensor("c", F32, [4], [1.0, 2.0, 3.0, 4.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": np.ones(4, np.float32), "cond": np.array(True)}
    renamed = neutral_names(Built(model, feeds))
    assert is_valid(renamed.model)
    branch = renamed.model.graph.node[1].attribute[0].g
    relu_out = renamed.model.graph.node[0].output[0]
    assert relu_out.startswith("t") and branch.node[0].input[0] == relu_out
    assert set(renamed.feeds) == {i.name for i in renamed.model.graph.input} == {"t0", "t1"}


def test_probes_name_the_numeric_trigger_and_keep_no_neutral_model() -> None:
    reduced = reduce_model(exported_chain(), FEEDS, CounterCollision()).built
    triggers = probe_triggers(reduced.model, reduced.feeds, CounterCollision())
    assert triggers.survived["neutral-names"] is False
    assert "a plain number" in triggers.sentence and triggers.sentence.startswith("needs ")
    assert triggers.neutral is None


@pytest.mark.parametrize(("holds", "sentence"), [
    (lambda m: any(n.op_type == "Constant" for n in m.graph.node),
     "needs its weights as Constant nodes"),
    (lambda m: m.opset_import[0].version <= 17, "needs opset 17 or lower"),
    (lambda m: m.opset_import[0].version == 17, "needs exactly opset 17"),
])
def test_probes_state_what_a_structural_failure_needs(holds: object, sentence: str) -> None:
    model = weights_and_defaults()
    feeds = {"x": np.ones((3, 4), np.float32)}
    triggers = probe_triggers(model, feeds, Structural(holds))
    assert triggers.sentence == sentence
    assert triggers.neutral is not None and triggers.complete


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(jobs=1, timeout=20) as box:
        yield box


def test_name_independent_fake_bug_gets_the_neutral_model(sandbox: Sandbox) -> None:
    model = weights_and_defaults()
    feeds = {"x": np.random.default_rng(1).random((3, 4), dtype=np.float32)}
    case = TestCase("fake", {"passes": ["drop-node"], "fixed_point": False},
                    {"kind": "file", "path": "test"}, model_bytes=model.SerializeToString(),
                    feeds=feeds)
    finding = sandbox.run(case).findings[0]
    check = SignatureCheck(sandbox, case, finding.symptom, finding.message, Budget(60))
    triggers = probe_triggers(model, feeds, check)
    assert all(triggers.survived[name] for name in PROBES), triggers.survived
    assert triggers.sentence == ("survives neutral names, no value_info, explicit and dropped "
                                 "default attributes, other opsets and both weight forms")
    neutral = triggers.neutral
    assert neutral is not None
    assert all(n.startswith("t") for n in _names(neutral.model))
    assert not neutral.model.graph.value_info
    assert set(neutral.feeds) == {i.name for i in neutral.model.graph.input}
    fresh = SignatureCheck(sandbox, case, finding.symptom, finding.message, Budget(60))
    assert fresh(neutral)
