"""Motifs for the ``eliminate_*`` passes and for CSE: no-op nodes (Cast to the same type,
Dropout with ratio 0, identity Transpose/Reshape/Flatten/Pad/Expand/Split/Concat, x+0, x*1,
...), idempotent pairs, dead ends, duplicated subexpressions — each with near-miss variants
that must not be eliminated (a Mul by ones that broadcasts to a larger shape, ArgMax after a
non-strictly monotone Relu, an intermediate that is also a graph output)."""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.ops import nn, shape_ops
from generators.values import ALL, BOOL, FLOAT, INT32, INT64, NP_DTYPE, NUMERIC, Value

_F = frozenset({FLOAT})


def _maybe_output(b: GraphBuilder, v: Value, p: float = 0.15) -> Value:
    if b.rng.random() < p:
        b.graph_output(v)
    return v


def _nop_cast(b: GraphBuilder, x: Value) -> Value:
    return b.op("Cast", [x], x.dtype, x.shape, x.props, to=x.dtype)


def _nop_dropout(b: GraphBuilder, x: Value) -> Value:
    return nn.dropout(b, x, ratio=b.rng.choice([0.0, 0.0, 0.0, 0.3]))


def _nop_flatten(b: GraphBuilder, x: Value) -> Value:
    a = b.rng.choice([1, 1, -1, 0] if b.opset >= 11 else [1, 1, 0])
    k = a % 2 if a < 0 else a
    out = (int(np.prod(x.shape[:k])), int(np.prod(x.shape[k:])))
    return b.op("Flatten", [x], x.dtype, out, x.props, axis=a)


_IDEMPOTENT = {"Relu": 6, "Floor": 6, "Ceil": 6, "Round": 11, "Sign": 9}


def _idempotent(b: GraphBuilder, x: Value) -> Value:
    ops = [o for o, since in _IDEMPOTENT.items() if since <= b.opset]
    if b.variant("Reshape" if b.rng.random() < 0.25 else "", ["Reshape", *ops]) == "Reshape":
        spec1, mid = shape_ops.reshape_target(b, x.shape)
        y = b.op("Reshape", [x, b.ints(spec1, "Reshape")], x.dtype, mid, x.props)
        _maybe_output(b, y)
        spec2, out = shape_ops.reshape_target(b, mid)
        return b.op("Reshape", [y, b.ints(spec2, "Reshape")], x.dtype, out, x.props)
    op = b.variant(b.rng.choice(ops), ops)
    y = _maybe_output(b, b.op(op, [x], x.dtype, x.shape))
    return b.op(op, [y], x.dtype, x.shape)


_MONOTONE = ("Exp", "Log", "Relu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Neg")


def _monotone_argmax(b: GraphBuilder, x: Value) -> Value:
    from generators.ops.reduce import arg
    from generators.ops.spec import ensure

    op = b.rng.choice(_MONOTONE)
    a = b.rng.randrange(x.rank)
    if op == "Exp":
        x = ensure(b, x, "bounded")
    if op == "Log":
        x = ensure(b, x, "ge1")
    attrs = {"axis": a if b.rng.random() < 0.7 else (a + 1) % x.rank} \
        if op in ("Softmax", "LogSoftmax") else {}
    y = b.op(op, [x], FLOAT, x.shape, **attrs)
    return arg(b, "ArgMax", y, a=a)


def _nop_pad(b: GraphBuilder, x: Value) -> Value:
    from generators.motifs.fusion import pad

    pads = [0] * (2 * x.rank)
    return pad(b, x, pads, b.rng.choice([0.0, None, 1.0]))


def _nop_concat(b: GraphBuilder, x: Value) -> Value:
    return b.op("Concat", [x], x.dtype, x.shape, x.props, axis=b.rng.randrange(x.rank))


def _nop_split(b: GraphBuilder, x: Value) -> Value:
    k = b.rng.randrange(x.rank)
    return shape_ops.split(b, x, k, [x.shape[k]])[0]


def _nop_expand(b: GraphBuilder, x: Value) -> Value:
    r = b.rng.random()
    shape = [1] * x.rank if r < 0.4 else list(x.shape) if r < 0.8 else [2] + [1] * x.rank
    out = tuple(max(s, d) for s, d in zip(shape, (1,) * (len(shape) - x.rank) + x.shape,
                                          strict=True))
    return b.op("Expand", [x, b.ints(shape, "Expand")], x.dtype, out, x.props)


def _nop_transpose(b: GraphBuilder, x: Value) -> Value:
    return b.op("Transpose", [x], x.dtype, x.shape, x.props, perm=list(range(x.rank)))


def _nop_reshape(b: GraphBuilder, x: Value) -> Value:
    spec = list(x.shape)
    if b.rng.random() < 0.5:
        spec[b.rng.randrange(x.rank)] = -1
    if b.rng.random() < 0.5:
        spec[b.rng.randrange(x.rank)] = 0
    if spec.count(-1) > 1:
        spec = list(x.shape)
    return b.op("Reshape", [x, b.ints(spec, "Reshape")], x.dtype, x.shape, x.props)


#: op -> (unit value, operand index that may hold it)
_UNITS = {"Add": (0, None), "Mul": (1, None), "Sub": (0, 1), "Div": (1, 1), "Pow": (1, 1)}
#: the generator's types that onnxruntime's CPU kernel of Pow takes for the base (not float16).
_POW_TYPES = frozenset({FLOAT, INT32, INT64})


def _nop_with_unit(b: GraphBuilder, x: Value) -> Value:
    """``x`` and-ed with True or or-ed with False (bool), else ``x`` plus 0, times 1, minus 0,
    divided by 1 or to the power of 1, by a constant that may broadcast to a larger shape (a
    near miss). A draw aimed at an arithmetic op or at Pow that ``x``'s type does not allow
    reads ``x`` through a Cast to float."""
    if x.dtype == BOOL and b.aim not in _UNITS:
        op = b.variant(b.rng.choice(["And", "Or"]), ["And", "Or"])
        c = b.const(np.full(x.shape[x.rank - 1:], op == "And"), op)
        return b.op(op, [x, c] if b.rng.random() < 0.5 else [c, x], BOOL, x.shape)
    if x.dtype == BOOL or (b.aim == "Pow" and x.dtype not in _POW_TYPES):
        x = b.op("Cast", [x], FLOAT, x.shape, to=FLOAT)
    ops = [o for o in _UNITS if x.dtype in _POW_TYPES or o != "Pow"]
    op = b.variant(b.rng.choice(ops), ops)
    unit, index = _UNITS[op]
    r = b.rng.random()
    shape = x.shape[x.rank - 1:] if r < 0.5 else (() if r < 0.8 else (2, *x.shape))
    c = b.const(np.full(shape, unit, NP_DTYPE[x.dtype]), op)
    args = [c, x] if index is None and b.rng.random() < 0.4 else [x, c]
    out = shape if len(shape) > x.rank else x.shape
    return b.op(op, args, x.dtype, out, x.props)


def _nop_concat_empty(b: GraphBuilder, x: Value) -> Value:
    k = b.rng.randrange(x.rank)
    shape = list(x.shape)
    shape[k] = 0
    e = b.const(np.zeros(shape, NP_DTYPE[x.dtype]), "Concat")
    return b.op("Concat", [x, e] if b.rng.random() < 0.5 else [e, x], x.dtype, x.shape,
                axis=k)


def _identity(b: GraphBuilder, x: Value) -> Value:
    y = b.op("Identity", [x], x.dtype, x.shape, x.props)
    _maybe_output(b, y, 0.3)
    if b.rng.random() < 0.4:
        y = b.op("Identity", [y], x.dtype, x.shape, x.props)
    return y


def _deadend(b: GraphBuilder, x: Value) -> Value:
    dead = b.op("Neg" if x.dtype in NUMERIC else "Identity", [x], x.dtype, x.shape)
    b.pool.remove(dead)
    b.consumed.add(dead.name)
    if b.rng.random() < 0.5:
        more = b.node("Identity", [dead.name])
        b.consumed.update(more)
    return b.op("Identity", [x], x.dtype, x.shape, x.props)


_CSE_OPS = ("Relu", "Sigmoid", "Add", "Transpose", "Softmax")


def _cse(b: GraphBuilder, x: Value) -> Value:
    op = b.variant(b.rng.choice(_CSE_OPS), _CSE_OPS)
    if op == "Add":
        w = b.random_weight(x.shape[-1:], FLOAT, "Add")
        u, v = (b.op("Add", [x, w], FLOAT, x.shape) for _ in range(2))
    elif op == "Transpose":
        perm = list(range(x.rank))[::-1]
        out = tuple(x.shape[p] for p in perm)
        u, v = (b.op("Transpose", [x], FLOAT, out, perm=perm) for _ in range(2))
        return b.op("Add", [u, v], FLOAT, out)
    elif op == "Softmax":
        axes = [0, 0] if b.rng.random() < 0.7 else [0, x.rank - 1]
        u, v = (b.op("Softmax", [x], FLOAT, x.shape, axis=a) for a in axes)
    else:
        u, v = (b.op(op, [x], FLOAT, x.shape) for _ in range(2))
    _maybe_output(b, u, 0.2)
    return b.op("Mul", [u, v], FLOAT, x.shape)


MOTIFS = (
    Motif("nop-cast", ("eliminate_nop_cast",), emit=_nop_cast,
          dtypes=frozenset({FLOAT, INT64, INT32, BOOL}), ranks=(0, 4),
          anchors=("Cast",)),
    Motif("nop-dropout", ("eliminate_nop_dropout",), emit=_nop_dropout, until=11,
          anchors=("Dropout",)),
    Motif("nop-flatten", ("eliminate_nop_flatten",), emit=_nop_flatten,
          dtypes=frozenset({FLOAT}), ranks=(2, 2),
          anchors=("Flatten",)),
    Motif("idempotent-pair", ("eliminate_consecutive_idempotent_ops",), emit=_idempotent,
          anchors=("Relu", "Floor", "Ceil", "Round", "Sign", "Reshape")),
    Motif("monotone-argmax", ("eliminate_nop_monotone_argmax",), emit=_monotone_argmax,
          anchors=("ArgMax", "Softmax", "LogSoftmax")),
    Motif("nop-pad", ("eliminate_nop_pad",), emit=_nop_pad,
          anchors=("Pad",)),
    Motif("nop-concat", ("eliminate_nop_concat",), emit=_nop_concat, dtypes=frozenset(ALL),
          anchors=("Concat",)),
    Motif("nop-split", ("eliminate_nop_split",), emit=_nop_split,
          dtypes=frozenset(NUMERIC),
          anchors=("Split",)),
    Motif("nop-expand", ("eliminate_nop_expand",), emit=_nop_expand, since=8,
          dtypes=frozenset(NUMERIC),
          anchors=("Expand",)),
    Motif("nop-transpose", ("eliminate_nop_transpose",), emit=_nop_transpose,
          dtypes=frozenset(ALL),
          anchors=("Transpose",)),
    Motif("nop-reshape", ("eliminate_nop_reshape",), emit=_nop_reshape, since=5,
          dtypes=frozenset(ALL),
          anchors=("Reshape",)),
    Motif("op-with-unit", ("eliminate_nop_with_unit",), emit=_nop_with_unit,
          dtypes=frozenset({FLOAT, INT64, BOOL}), since=7,
          anchors=("Add", "Mul", "Sub", "Div", "Pow", "And", "Or")),
    Motif("concat-empty", ("eliminate_nop_with_unit",), emit=_nop_concat_empty, since=11,
          dtypes=frozenset({FLOAT, INT64}),
          anchors=("Concat",)),
    Motif("identity", ("eliminate_identity",), emit=_identity, dtypes=frozenset(ALL),
          ranks=(0, 4),
          anchors=("Identity",)),
    Motif("deadend", ("eliminate_deadend",), emit=_deadend, dtypes=frozenset(ALL)),
    Motif("common-subexpression", ("eliminate_common_subexpression",), emit=_cse,
          anchors=("Softmax", "Transpose", "Add")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 30
