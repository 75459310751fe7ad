"""A plan level that changes an anchor's output shape (a Reduce's keepdims, its axes): the
draw takes it where the rest of its window takes the new shape, records the new shapes
where later draws read them, and refuses it, with the reason, where the shape reaches what
cannot follow (a Reshape's fixed target)."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
from onnx import NodeProto

from generators.builder import GraphBuilder
from generators.inputs import synthesize_inputs
from generators.motifs import families
from generators.names import Namer
from generators.schema.apply import Mark, ort_refusal, vary
from generators.schema.inference import infer_types, shape_of, static_types
from generators.schema.plan import motif_plan
from generators.schema.rows import key
from generators.values import FLOAT, Value
from tests.conftest import cpu_session

OPSET = 17


def _builder(seed: int) -> GraphBuilder:
    rng = random.Random(seed)
    return GraphBuilder(rng, np.random.default_rng(seed), OPSET, Namer("plain", rng))


def _runs(b: GraphBuilder) -> None:
    """The builder's model, its leaves made graph outputs, passes the full checker and
    runs on onnxruntime with optfuzz's feeds."""
    for v in b.leaves():
        b.graph_output(v)
    m = b.model()
    onnx.checker.check_model(m, full_check=True)
    cpu_session(m).run(None, synthesize_inputs(m, 0))


def _reduce_draw(op: str) -> tuple[GraphBuilder, Mark, Value, NodeProto]:
    """A reduce-unsqueeze draw (its builder, mark, result and Reduce node) that makes an
    ``op`` node (``keepdims=0``), from the first seed whose draw does."""
    motif = next(m for mod in families() for m in mod.MOTIFS if m.name == "reduce-unsqueeze")
    for seed in range(200):
        b = _builder(seed)
        x = b.graph_input(FLOAT, (2, 3, 4))
        mark = Mark.of(b)
        result = motif.emit(b, x)
        made = [n for n in b.nodes[mark.nodes:] if n.op_type == op]
        if made and result is not None:
            return b, mark, result, made[0]
    raise AssertionError(f"no draw makes {op}")


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax"])
def test_a_keepdims_level_that_changes_the_reduce_output_is_taken(op: str) -> None:
    plan = motif_plan("reduce-unsqueeze")
    b, mark, result, reduce = _reduce_draw(op)
    old = shape_of(infer_types(b), reduce.output[0])
    row = {"opset": str(plan.intervals[-1][0]), key(reduce.op_type, "attr:keepdims"): "default"}
    notes = vary(b, mark, plan, row, result)
    assert not [n for n in notes if "keepdims" in n or n.startswith("*")], notes
    assert [a.i for a in reduce.attribute if a.name == "keepdims"] == [1]
    types = infer_types(b)
    assert shape_of(types, reduce.output[0]) != old  # the level changed the shape ...
    for v in b.pool[mark.pool:]:  # ... and what later draws read is recorded at it
        assert shape_of(types, v.name) == v.shape, v
    b.op("Relu", [b.pool[-1]], FLOAT, b.pool[-1].shape)  # a later op reads the result
    _runs(b)


def test_a_shape_a_reshape_target_cannot_take_is_refused_with_the_reason() -> None:
    plan = motif_plan("reduce-unsqueeze")
    b = _builder(0)
    x = b.graph_input(FLOAT, (2, 3))
    mark = Mark.of(b)
    y = b.op("ReduceSum", [x, b.ints([1])], FLOAT, (2,), keepdims=0)
    result = b.op("Reshape", [y, b.ints([1, 2])], FLOAT, (1, 2))
    row = {"opset": str(plan.intervals[-1][0]), key("ReduceSum", "in:axes"): "absent"}
    notes = vary(b, mark, plan, row, result)
    assert any(n.startswith("ReduceSum|in:axes=absent: the output shape changes")
               and "a Reshape's target (1, 2) cannot take ()" in n for n in notes), notes
    assert len(b.nodes[mark.nodes].input) == 2  # the node is as the motif made it
    assert [v.shape for v in b.pool[mark.pool:]] == [(2,), (1, 2)]
    _runs(b)


def test_an_edit_is_run_at_the_sizes_a_retyped_graph_input_is_fed() -> None:
    """os-symbolic-shapes' squeeze form at opset 9 (seed 12 at 8609977): an input ``s``
    declared ``(N, 3, 1)`` the window created, Reshape to ``(1, 3)``, Squeeze ``axes=[0]``.
    The row's int32 brings ``s`` in through a Cast; ``s`` keeps its type, so it keeps its
    record in the pool, and the checks run the window with ``s`` at the size it is fed (N
    at 1): Squeeze-1's inference ignores ``axes=[-1]`` (the ``edge`` level), onnxruntime
    refuses it on ``(1, 3)``, and the draw does not take it."""
    plan = motif_plan("os-symbolic-shapes")
    b = GraphBuilder(random.Random(0), np.random.default_rng(0), 9, Namer("plain",
                                                                         random.Random(0)))
    mark = Mark.of(b)
    s = b.graph_input(FLOAT, (1, 3, 1), {0: "N"})
    v = b.op("Reshape", [s, b.ints([1, 3], "Reshape")], FLOAT, (1, 3))
    sq = b.op("Squeeze", [v], FLOAT, (3,), axes=[0])
    result = b.op("Reshape", [sq, b.ints([-1], "Reshape")], FLOAT, (3,))
    row = {"opset": "9", key("Squeeze", "attr:axes"): "edge",
           key("Squeeze", "dtype:T"): "int32"}
    notes = vary(b, mark, plan, row, result)
    assert s in b.pool, notes  # the Cast converts it: a later draw may read it as it is
    squeeze = next(n for n in b.nodes if n.op_type == "Squeeze")
    assert [list(a.ints) for a in squeeze.attribute if a.name == "axes"] == [[0]], notes
    assert any("Squeeze|attr:axes=edge" in n for n in notes), notes
    _runs(b)


def test_the_onnxruntime_check_feeds_an_unpooled_graph_input_its_sizes() -> None:
    """A graph input the pool does not hold (declared ``(N, 3, 1)``) has the shape it is
    fed where inference gives it none (N at 1), so onnxruntime's check of a window runs
    the window instead of passing it unrun: Squeeze-1 ``axes=[-1]`` on ``(1, 3)``."""
    b = GraphBuilder(random.Random(0), np.random.default_rng(0), 9, Namer("plain",
                                                                         random.Random(0)))
    mark = Mark.of(b)
    s = b.graph_input(FLOAT, (1, 3, 1), {0: "N"})
    b.pool.remove(s)
    v = b.op("Reshape", [s, b.ints([1, 3], "Reshape")], FLOAT, (1, 3))
    b.op("Squeeze", [v], FLOAT, (3,), axes=[-1])
    assert shape_of(infer_types(b), s.name) == (1, 3, 1)
    assert shape_of(static_types(b), s.name) == (1, 3, 1)
    why = ort_refusal(b, mark)
    assert why is not None and "Squeeze" in why, why
