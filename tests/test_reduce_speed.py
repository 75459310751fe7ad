"""What keeps the reducer fast without losing quality: k-ary search, parallel checks, cut points
that skip constant-only nodes, the original model checked only when needed, simplification
tried all at once, recorded values passed as files. Each test fails if its feature breaks
(counts of checks and which candidates ran; no timing)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.delta.section import first_true
from fuzzer.execution.sandbox import Sandbox
from fuzzer.reduce.candidate import Builder, Built
from fuzzer.reduce.cut import bisect_outputs
from fuzzer.reduce.predicate import Budget, Predicate
from fuzzer.reduce.reducer import NotReproducible, reduce_model
from fuzzer.reduce.simplify import simplify
from fuzzer.reduce.state import Context, State
from fuzzer.reduce.values import StoredValues, record, record_sandboxed
from tests.test_reduce import chain


class HasNeg(Predicate):
    """Fails while a Neg node is left; remembers every candidate it ran."""

    def __init__(self, parallel: int = 1) -> None:
        super().__init__(Budget(30), parallel=parallel)
        self.ran: list[Built] = []

    def run(self, built: Built, key: str) -> bool:
        self.ran.append(built)
        return any(n.op_type == "Neg" for n in built.model.graph.node)


def _rounds(count: int, boundary: int, width: int) -> tuple[int | None, int]:
    rounds = 0

    def test(indices: Sequence[int]) -> list[bool]:
        nonlocal rounds
        rounds += 1
        assert len(indices) <= width
        return [i >= boundary for i in indices]

    return first_true(count, test, width), rounds


@pytest.mark.parametrize("width", [1, 2, 3])
def test_k_ary_search_finds_every_boundary(width: int) -> None:
    for count in range(1, 40):
        for boundary in range(count + 1):
            assert _rounds(count, boundary, width)[0] == (boundary if boundary < count else None)


def test_two_probes_per_round_need_fewer_rounds() -> None:
    assert _rounds(1493, 700, 1) == (700, 10)  # ceil(log2 1493) = 11 at most
    assert _rounds(1493, 700, 2) == (700, 7)  # ceil(log3 1493) = 7


def test_parallel_predicate_runs_checks_at_once() -> None:
    """Both checks must be inside ``run`` together to pass the barrier."""
    barrier = threading.Barrier(2, timeout=30)

    class Together(HasNeg):
        def run(self, built: Built, key: str) -> bool:
            barrier.wait()
            return super().run(built, key)

    model = chain(6, 3)
    pred = Together(parallel=2)
    builts = [Built(model, {}), Built(chain(6, 5), {})]
    assert pred.map(builts) == [True, True]
    assert pred.runs == 2 and pred.map(builts) == [True, True] and pred.runs == 2  # cached


def with_constants(length: int, constants_per_node: int) -> onnx.ModelProto:
    """``chain`` whose every node reads a Constant node's output (a PyTorch export's form)."""
    nodes, prev, inits = [], "x", []
    for i in range(length):
        for k in range(constants_per_node):
            value = helper.make_tensor(f"v{i}_{k}", TensorProto.FLOAT, [4], [0.5] * 4)
            nodes.append(helper.make_node("Constant", [], [f"k{i}_{k}"], value=value))
        op = "Neg" if i == length // 2 else "Add"
        ins = [prev] if op == "Neg" else [prev, f"k{i}_0"]
        nodes.append(helper.make_node(op, ins, [f"h{i}"]))
        prev = f"h{i}"
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [3, 4])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


FEEDS = {"x": np.random.default_rng(0).random((3, 4), dtype=np.float32)}


def test_cuts_never_stop_at_a_constant_node() -> None:
    pred = HasNeg()
    reduction = reduce_model(with_constants(40, 3), FEEDS, pred)
    assert [n.op_type for n in reduction.built.model.graph.node] == ["Neg"]
    for built in pred.ran:
        assert any(n.op_type != "Constant" for n in built.model.graph.node)


def test_the_original_is_checked_only_when_nothing_smaller_fails() -> None:
    model = chain(30, 20)
    pred = HasNeg()
    reduce_model(model, FEEDS, pred)
    assert all(len(b.model.graph.node) < 30 for b in pred.ran)
    with pytest.raises(NotReproducible):
        reduce_model(chain(30, 40), FEEDS, HasNeg())  # no Neg anywhere


def test_simplification_that_survives_costs_one_check() -> None:
    model = chain(4, 2)
    for node in model.graph.node:
        node.doc_string = "exported"
    pred = HasNeg()
    built = Built(model, FEEDS)
    state = State(list(model.graph.node), [o.name for o in model.graph.output], built)
    ctx = Context(Builder(model, FEEDS, record(model, FEEDS)), pred)
    ctx.offer(state)
    simplified = simplify(state, ctx).built.model
    assert pred.runs == 1
    assert all(not n.name and not n.doc_string for n in simplified.graph.node)
    assert simplified.graph.input[0].name == "t0"
    assert [d.dim_value for d in simplified.graph.input[0].type.tensor_type.shape.dim][1] == 1


def test_recorded_values_come_back_as_files_removed_afterwards() -> None:
    model = chain(8, 4)
    expected = record(model, FEEDS)
    with Sandbox(jobs=1, timeout=20) as sandbox:  # values are recorded when first read
        recorded = record_sandboxed(sandbox, model, FEEDS)
        assert isinstance(recorded.values, StoredValues)
        assert set(recorded.values) == set(expected.values)
        for name, value in expected.values.items():
            np.testing.assert_array_equal(recorded.values[name], value)
    folder = Path(recorded.values._folder.name)
    assert folder.is_dir()
    del recorded
    gc.collect()
    assert not folder.exists()


def _start(model: onnx.ModelProto, pred: Predicate) -> tuple[State, Context]:
    state = State(list(model.graph.node), [o.name for o in model.graph.output],
                  Built(model, FEEDS))
    ctx = Context(Builder(model, FEEDS, record(model, FEEDS)), pred)
    ctx.offer(state)
    return state, ctx


def test_the_output_searchs_last_round_checks_single_nodes_first() -> None:
    """13 cut points, Neg at 4, two checks at once: after cuts 4 (fails), 8, 1 and 2, the
    last round would probe cut 3 alone with a check free. It checks instead the nodes that
    end cuts 3 and 4 alone, simplified: Neg fails alone, and cut 3 is never run."""
    pred = HasNeg(parallel=2)
    state, ctx = _start(chain(13, 4), pred)
    best = bisect_outputs(state, ctx)
    assert [n.op_type for n in best.built.model.graph.node] == ["Neg"]
    assert best.built.model.graph.input[0].name == "t0"  # simplified
    sizes = sorted(len(b.model.graph.node) for b in pred.ran)
    assert sizes == [1, 1, 2, 3, 5, 9]  # cut 3 (4 nodes) never ran
    assert pred.runs == 6


def test_the_last_round_probes_the_cut_where_no_single_node_fails() -> None:
    """A failure that needs two nodes (Neg and the Add before it): the single nodes of the
    last round pass, and the cut is probed in a round of its own."""

    class NegAfterAdd(HasNeg):
        def run(self, built: Built, key: str) -> bool:
            self.ran.append(built)
            ops = [n.op_type for n in built.model.graph.node]
            return "Neg" in ops and ops.index("Neg") > 0

    pred = NegAfterAdd(parallel=2)
    state, ctx = _start(chain(13, 4), pred)
    best = bisect_outputs(state, ctx)
    assert len(best.nodes) == 5 and best.nodes[-1].op_type == "Neg"


def test_a_serial_search_checks_no_single_node_early() -> None:
    pred = HasNeg()
    state, ctx = _start(chain(13, 4), pred)
    bisect_outputs(state, ctx)
    assert all(len(b.model.graph.node) > 1 for b in pred.ran)


def test_simplification_starts_a_single_edit_beside_both_groups() -> None:
    """All edits together end the failure (it needs more than one value per row); three
    checks start at once on two cores: all edits, the preserving group, and the preserving
    group with the inputs halved (the edit that is then kept). Each of the first three checks
    waits until all three are running."""
    barrier = threading.Barrier(3, timeout=30)
    lock = threading.Lock()

    class Wide(HasNeg):
        def run(self, built: Built, key: str) -> bool:
            with lock:
                first = len(self.ran) < 3
                self.ran.append(built)
            if first:
                barrier.wait()
            dims = built.model.graph.input[0].type.tensor_type.shape.dim
            return any(n.op_type == "Neg" for n in built.model.graph.node) and \
                dims[-1].dim_value > 1

    model = chain(1, 0)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 3
    pred = Wide(parallel=2)
    state, ctx = _start(model, pred)
    simplified = simplify(state, ctx).built.model
    pred.close()
    assert [d.dim_value for d in simplified.graph.input[0].type.tensor_type.shape.dim] == [2, 2]
    assert simplified.graph.input[0].name == "t0"
    assert not barrier.broken
