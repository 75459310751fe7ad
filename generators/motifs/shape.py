"""Motifs for shape-manipulating fusions and shape folding: consecutive Transposes, Squeezes,
Unsqueezes, Slices, Concats; Reduce(keepdims=0)→Unsqueeze; Softmax→Log; Shape→Gather,
Shape→Slice, Shape folded to a constant; Reshape of a Concat-built shape; Where(Not(c));
Add(const, x); Slice of a constant before MatMul."""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.ops import shape_ops
from generators.ops.reduce import REDUCE_AXES_INPUT, reduce
from generators.schema.levels import NONDEFAULT
from generators.values import ALL, FLOAT, INT64, NUMERIC, Value


def _perm(b: GraphBuilder, rank: int) -> list[int]:
    p = list(range(rank))
    b.rng.shuffle(p)
    return p


def _transposes(b: GraphBuilder, x: Value) -> Value:
    y = x
    for _ in range(b.rng.randint(2, 3)):
        p = _perm(b, x.rank)
        y = b.op("Transpose", [y], y.dtype, tuple(y.shape[i] for i in p), y.props, perm=p)
    return y


def _squeezes(b: GraphBuilder, x: Value) -> Value:
    y = shape_ops.unsqueeze(b, x, sorted(b.rng.sample(range(x.rank + 2), 2)))
    for _ in range(2):
        ones = [i for i, d in enumerate(y.shape) if d == 1]
        if not ones:
            break
        a = b.rng.choice(ones)
        form = shape_ops.axes_operand(b, "Squeeze", [a - y.rank if b.opset >= 11 and
                                                     b.rng.random() < 0.4 else a], 13)
        out = y.shape[:a] + y.shape[a + 1:]
        y = b.op("Squeeze", [y, *form["inputs"]], y.dtype, out, y.props, **form["attrs"])
    return y


def _unsqueezes(b: GraphBuilder, x: Value) -> Value:
    y = x
    for _ in range(2):
        r = y.rank + 1
        a = b.rng.randrange(r)
        if b.opset >= 11 and b.rng.random() < 0.4:
            a -= r
        y = shape_ops.unsqueeze(b, y, [a])
    return y


def _reduce_unsqueeze(b: GraphBuilder, x: Value) -> Value:
    op = b.variant(b.rng.choice(list(REDUCE_AXES_INPUT)), REDUCE_AXES_INPUT)
    axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
    y = reduce(b, op, x, axes=axes, keepdims=0)
    u_axes = axes if b.rng.random() < 0.8 else [0]  # a different axis must not fuse
    return shape_ops.unsqueeze(b, y, u_axes)


def _slices(b: GraphBuilder, x: Value) -> Value:
    y = x
    axes_all = list(range(x.rank))
    b.rng.shuffle(axes_all)
    for i in range(2):
        a = axes_all[i % x.rank] if b.rng.random() < 0.85 else axes_all[0]
        d = y.shape[a]
        s, e = b.rng.choice([(0, d), (d // 2, 2**62), (-d, -1 if d > 1 else d), (0, 1)])
        out = list(y.shape)
        out[a] = shape_ops.slice_dim(d, s, e, 1)
        if out[a] == 0:
            s, e, out[a] = 0, d, d
        axis_val = a - x.rank if b.opset >= 11 and b.rng.random() < 0.3 else a
        y = b.op("Slice", [y, b.ints([s], "Slice"), b.ints([e], "Slice"),
                           b.ints([axis_val], "Slice"), b.ints([1], "Slice")],
                 y.dtype, tuple(out), y.props)
    return y


def _concats(b: GraphBuilder, x: Value) -> Value:
    a = b.rng.randrange(x.rank)
    w1 = b.random_weight(x.shape, x.dtype, "Concat")
    out = list(x.shape)
    out[a] *= 2
    inner = b.op("Concat", [x, w1], x.dtype, tuple(out), axis=a)
    a2 = a if b.rng.random() < 0.8 else (a + 1) % x.rank
    w2_shape = list(inner.shape)
    w2_shape[a2] = 1
    w2 = b.random_weight(tuple(w2_shape), x.dtype, "Concat")
    out2 = list(inner.shape)
    out2[a2] += 1
    parts = [inner, w2] if b.rng.random() < 0.5 else [w2, inner]
    return b.op("Concat", parts, x.dtype, tuple(out2), axis=a2)


def _softmax_log(b: GraphBuilder, x: Value) -> Value:
    a = b.rng.randrange(x.rank) - (x.rank if b.opset >= 11 and b.rng.random() < 0.3 else 0)
    attrs = {"axis": a} if b.rng.random() < 0.8 or (b.opset < 13 and x.rank < 2) else {}
    s = b.op("Softmax", [x], FLOAT, x.shape, ("nonneg", "bounded"), **attrs)
    return b.op("Log", [s], FLOAT, x.shape)


def _shape_gather(b: GraphBuilder, x: Value) -> Value | None:
    """Gather of one dim, one dim as a list, or the first and last dims of ``Shape(x)``
    (at times spelled negative), cast to float. Where the draw takes a schema row that
    gives the Shape a non-default ``start`` (Shape-15), the Shape starts there and the
    indices pick among the dims it gives (another input where ``x`` has one dim)."""
    start = 0
    if b.opset >= 15 and b.planned("Shape", "attr:start") == NONDEFAULT:
        if x.rank < 2:
            return None
        start = b.rng.randrange(1, x.rank)
    n = x.rank - start
    s = b.op("Shape", [x], INT64, (n,), start=start or None)
    idx = b.rng.choice([np.asarray(b.rng.randrange(n), np.int64),
                        np.asarray([b.rng.randrange(n)], np.int64),
                        np.asarray([0, n - 1], np.int64)])
    if b.opset >= 11 and b.rng.random() < 0.3:
        idx = idx - n
    g = b.op("Gather", [s, b.const(idx, "Gather")], INT64, idx.shape, ("nonneg",), axis=0)
    return b.op("Cast", [g], FLOAT, g.shape, to=FLOAT)


def _slice_after_shape(b: GraphBuilder, x: Value) -> Value:
    s = b.op("Shape", [x], INT64, (x.rank,))
    st, en = b.rng.choice([(0, 1), (1, 2**62), (-2, -1), (0, x.rank)])
    n = shape_ops.slice_dim(x.rank, st, en, 1)
    if n == 0:
        st, en, n = 0, x.rank, x.rank
    sl = b.op("Slice", [s, b.ints([st], "Slice"), b.ints([en], "Slice")], INT64, (n,))
    return b.op("Cast", [sl], FLOAT, sl.shape, to=FLOAT)


def _shape_op(b: GraphBuilder, x: Value) -> Value:
    s = b.op("Shape", [x], INT64, (x.rank,))
    flat = b.op("Reshape", [x, s], x.dtype, x.shape, x.props)
    return flat


def _concat_reshape(b: GraphBuilder, x: Value) -> Value:
    s = b.op("Shape", [x], INT64, (x.rank,))
    head = b.op("Gather", [s, b.ints([0], "Gather")], INT64, (1,), axis=0)
    rest = int(np.prod(x.shape[1:]))
    tail = b.ints(b.rng.choice([[-1], [rest], [1, -1]]), "Concat")
    cat = b.op("Concat", [head, tail], INT64, (1 + tail.shape[0],), axis=0)
    if b.rng.random() < 0.3:
        cat = b.op("Cast", [cat], INT64, cat.shape, to=INT64)
    out = (x.shape[0], rest) if tail.shape[0] == 1 else (x.shape[0], 1, rest)
    return b.op("Reshape", [x, cat], x.dtype, out, x.props)


def _where_not(b: GraphBuilder, x: Value) -> Value:
    zero = b.scalar(0.0, FLOAT, "Less")
    c = b.op("Less", [x, zero], 9, x.shape)
    n = b.op("Not", [c], 9, x.shape)
    if b.rng.random() < 0.2:
        b.graph_output(n)
    y = b.random_weight(x.shape[-1:], FLOAT, "Where")
    return b.op("Where", [n, x, y], FLOAT, x.shape)


def _adjust_add(b: GraphBuilder, x: Value) -> Value:
    w = b.random_weight(x.shape[b.rng.randrange(x.rank + 1):], x.dtype, "Add")
    return b.op("Add", [w, x], x.dtype, x.shape)


def _slice_matmul(b: GraphBuilder, x: Value) -> Value:
    k = x.shape[-1]
    rows = b.rng.randint(k, k + 2)
    w = b.random_weight((rows, 3), FLOAT, "Slice")
    sl = b.op("Slice", [w, b.ints([0], "Slice"), b.ints([k], "Slice"),
                        b.ints([b.rng.choice([0, -2])], "Slice")], FLOAT, (k, 3))
    w2 = b.random_weight((3, 2), FLOAT, "MatMul")
    mm = b.op("MatMul", [sl, w2], FLOAT, (k, 2))
    return b.op("MatMul", [x, mm], FLOAT, (*x.shape[:-1], 2))


_ANY = frozenset(ALL)
MOTIFS = (
    Motif("transpose-chain", ("fuse_consecutive_transposes",), emit=_transposes,
          dtypes=_ANY,
          anchors=("Transpose",)),
    Motif("squeeze-chain", ("fuse_consecutive_squeezes",), emit=_squeezes, dtypes=_ANY,
          ranks=(1, 3),
          anchors=("Squeeze", "Unsqueeze")),
    Motif("unsqueeze-chain", ("fuse_consecutive_unsqueezes",), emit=_unsqueezes,
          dtypes=_ANY, ranks=(0, 3),
          anchors=("Unsqueeze",)),
    Motif("reduce-unsqueeze", ("fuse_consecutive_reduce_unsqueeze",), emit=_reduce_unsqueeze,
          anchors=("ReduceSum", "ReduceMean", "ReduceMax", "Unsqueeze")),
    Motif("slice-chain", ("fuse_consecutive_slices",), emit=_slices, since=10,
          dtypes=frozenset(NUMERIC),
          anchors=("Slice",)),
    Motif("concat-chain", ("fuse_consecutive_concats",), emit=_concats,
          dtypes=frozenset(NUMERIC),
          anchors=("Concat",)),
    Motif("softmax-log", ("fuse_consecutive_log_softmax",), emit=_softmax_log,
          anchors=("Softmax", "Log")),
    Motif("shape-gather", ("eliminate_shape_gather",), emit=_shape_gather, dtypes=_ANY,
          anchors=("Shape", "Gather")),
    Motif("shape-slice", ("eliminate_slice_after_shape",), emit=_slice_after_shape,
          since=10, dtypes=_ANY,
          anchors=("Shape", "Slice")),
    Motif("shape-fold", ("eliminate_shape_op",), emit=_shape_op, since=5, dtypes=_ANY,
          anchors=("Shape", "Reshape")),
    Motif("concat-reshape", ("fuse_concat_into_reshape",), emit=_concat_reshape, since=5,
          dtypes=_ANY, ranks=(2, 4),
          anchors=("Concat", "Reshape")),
    Motif("where-not", ("rewrite_where",), emit=_where_not, since=9,
          anchors=("Where", "Not")),
    Motif("const-first-add", ("adjust_add",), emit=_adjust_add,
          dtypes=frozenset(NUMERIC),
          anchors=("Add",)),
    Motif("slice-matmul", ("adjust_slice_and_matmul",), emit=_slice_matmul, since=10,
          ranks=(2, 3),
          anchors=("Slice", "MatMul")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 40
