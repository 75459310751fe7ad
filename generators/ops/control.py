"""Control flow: If (constant or computed condition) and Loop, whose bodies read outer-scope
values (the subgraph refers to ``x`` of the enclosing graph by name).

Body weights are Constant nodes (no subgraph initializers).
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, value_info
from generators.ops.reduce import reduce
from generators.ops.spec import OpSpec
from generators.values import BOOL, FLOAT, INT64, Value

#: Unary ops a branch applies to the outer-scope value.
_BRANCH_OPS = ("Relu", "Tanh", "Sigmoid", "Neg", "Abs", "Identity")


def body_builder(b: GraphBuilder) -> GraphBuilder:
    """A builder for a subgraph of ``b`` (same namer and random sources, Constant weights)."""
    return GraphBuilder(b.rng, b.nprng, b.opset, b.namer, weights="constant", outer=b.pool,
                        sparse=b.sparse)


def branch(b: GraphBuilder, x: Value, name: str) -> GraphBuilder:
    """A then/else body: one or two unary ops on outer-scope ``x``; output same shape."""
    body = body_builder(b)
    v = x
    for _ in range(b.rng.randint(1, 2)):
        v = body.op(b.rng.choice(_BRANCH_OPS), [v], x.dtype, x.shape)
    if b.rng.random() < 0.3:
        w = body.random_weight(x.shape, x.dtype, "Add")
        v = body.op("Add", [v, w], x.dtype, x.shape)
    body.graph_output(v)
    return body


def if_node(b: GraphBuilder, x: Value, cond: Value | None = None) -> Value:
    """``If`` on ``cond`` (computed from ``x`` when ``None``) whose branches transform ``x``."""
    if cond is None:
        m = reduce(b, "ReduceMean", x, axes=list(range(x.rank)), keepdims=0)
        zero = b.scalar(0.0, FLOAT, "Greater")
        cond = b.op("Greater", [m, zero], BOOL, ())
    then_g = branch(b, x, "then").graph("then_branch")
    else_g = branch(b, x, "else").graph("else_branch")
    return b.op("If", [cond], x.dtype, x.shape, then_branch=then_g, else_branch=else_g)


def _if(b: GraphBuilder, x: Value) -> Value:
    cond = None
    if b.rng.random() < 0.4:
        cond = b.const(np.asarray(b.rng.random() < 0.5), "If", placement="constant")
    return if_node(b, x, cond)


def loop(b: GraphBuilder, x: Value) -> Value:
    """``Loop`` with a constant trip count over loop-carried ``x``; the body reads an
    outer-scope weight."""
    trip = b.const(np.asarray(b.rng.randint(1, 3), np.int64), "Loop")
    outer_w = b.random_weight(x.shape, x.dtype, "Loop", scale=0.1)
    cond_in = "" if b.rng.random() < 0.5 else b.const(np.asarray(True), "Loop").name
    body = body_builder(b)
    it_name, c_name, v_name = (b.namer.tensor("Loop") for _ in range(3))
    body.inputs += [value_info(it_name, INT64, []), value_info(c_name, BOOL, []),
                    value_info(v_name, x.dtype, list(x.shape))]
    c_out = body.op("Identity", [c_name], BOOL, ())
    v = Value(v_name, x.dtype, x.shape)
    v = body.op("Tanh", [v], x.dtype, x.shape)
    v = body.op("Add", [v, outer_w], x.dtype, x.shape)
    body.graph_output(c_out)
    body.graph_output(v)
    return b.op("Loop", [trip.name, cond_in, x.name], x.dtype, x.shape,
                body=body.graph("loop_body"))


def specs() -> list[OpSpec]:
    """The control-flow catalogue."""
    return [
        OpSpec("If", _if, frozenset({FLOAT}), (1, 4), since=7, weight=0.4),
        OpSpec("Loop", loop, frozenset({FLOAT}), (1, 4), since=11, weight=0.3),
    ]
