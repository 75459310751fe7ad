"""Motifs for onnxslim's shape eliminations (``core/pattern/elimination/*.py``:
``EliminationConcat``, ``EliminationReshape``, ``EliminationReshapeAs``, ``EliminationSlice``,
``EliminationTranspose``, ``EliminationTransposeViewTranspose``, ``EliminationUnsqueeze``,
``EliminationTransposeAsReshape``) and shape fusions (``fusion/reduce.py`` ``FusionReduce``,
``fusion/concat_reshape.py`` ``FusionConcatReshape``), with the onnx-simplifier passes that
rewrite the same chains.

Varied where the rewrites must check: axes given negative, unsorted or repeated across the
pair, the default permutation (no ``perm``), a first op whose output has a second consumer,
an outer Concat on another (or the same, spelled negative) axis, a second Reshape whose
shape holds ``0`` (copy a dim of its own input) given as a constant or computed at run time
(``Shape * mask``, or the dims times the Shape of an input of one symbolic dim: no constant
folding can see the 0), ``allowzero``, a Reshape target
assembled by Concat from a dynamic dim and constants (and, with ``allowzero``, a literal 0
of an empty tensor), the attribute forms of old opsets.
"""

from __future__ import annotations

import math

import numpy as np

from generators.builder import GraphBuilder, value_info
from generators.motifs.helpers import ints, slice_op, tap, weight
from generators.motifs.onnxslim.symbolic import symbolic_input
from generators.motifs.shaped import shaped_motif
from generators.ops import shape_ops
from generators.ops.reduce import reduce
from generators.schema.levels import NONDEFAULT
from generators.values import ALL, FLOAT, INT64, NUMERIC, Value

_DATA = frozenset(NUMERIC)


def _perm(b: GraphBuilder, rank: int) -> list[int]:
    p = list(range(rank))
    b.rng.shuffle(p)
    return p


def transpose(b: GraphBuilder, x: Value, perm: list[int] | None = None) -> Value:
    """Transpose by ``perm`` (random when None; the default reversal without ``perm``
    attribute a tenth of the time)."""
    if perm is None and (x.rank == 0 or b.rng.random() < 0.1):
        return b.op("Transpose", [x], x.dtype, x.shape[::-1], x.props)
    perm = perm if perm is not None else _perm(b, x.rank)
    return b.op("Transpose", [x], x.dtype, tuple(x.shape[p] for p in perm), x.props,
                perm=perm)


def _concat_concat(b: GraphBuilder, x: Value) -> Value:
    """Concat inside Concat: the same axis (possibly spelled negative on one side), another
    axis, and an inner Concat that another Concat also reads."""
    k = b.rng.randrange(x.rank)

    def piece(shape: tuple[int, ...], axis: int) -> Value:
        dims = list(shape)
        dims[axis] = b.rng.randint(1, 3)
        return weight(b, tuple(dims), x.dtype, "Concat")

    def concat(parts: list[Value], axis: int, spell: int) -> Value:
        out = list(parts[0].shape)
        out[axis] = sum(p.shape[axis] for p in parts)
        return b.op("Concat", parts, x.dtype, tuple(out), axis=spell)

    spell = k - x.rank if b.opset >= 11 and b.rng.random() < 0.3 else k
    inner = concat([x, piece(x.shape, k)], k, spell)
    k2 = k if b.rng.random() < 0.75 else b.rng.randrange(x.rank)
    spell2 = k2 - x.rank if b.opset >= 11 and b.rng.random() < 0.3 else k2
    if b.rng.random() < 0.15:
        b.graph_output(concat([piece(inner.shape, k), inner], k, spell))
    else:
        tap(b, inner, 0.1)
    parts = [inner, piece(inner.shape, k2)]
    b.rng.shuffle(parts)
    return concat(parts, k2, spell2)


def _reshape_reshape(b: GraphBuilder, x: Value) -> Value:
    """Reshape then Reshape; the second shape constant (``-1``, ``0`` = copy, ``allowzero``)
    or computed at run time, holding zeros that copy dims of the first Reshape's output
    (where the input has other dims, or none): ``Shape(y) * mask``, or the dims times
    ``Shape(s)`` of a new input ``s`` of one symbolic dim (1 at run time), which leaves the
    first Reshape one consumer (onnxslim's EliminationReshape checks a shape for zeros only
    where it is a constant)."""
    dynamic = b.opset >= 5 and b.rng.random() < 0.4
    for _ in range(3 if dynamic else 1):  # a first Reshape that moves dims, where it can
        spec1, mid = shape_ops.reshape_target(b, x.shape)
        if mid != x.shape:
            break
    y = tap(b, b.op("Reshape", [x, ints(b, spec1, "Reshape")], x.dtype, mid, x.props), 0.1)
    if dynamic:
        moved = [i for i, d in enumerate(mid) if i >= x.rank or x.shape[i] != d]
        zero = b.rng.choice(moved or list(range(len(mid))))
        mask = [0 if i == zero else b.rng.randrange(2) for i in range(len(mid))]
        if b.rng.random() < 0.5:
            scale = b.op("Shape", [symbolic_input(b, FLOAT, (1,), {0: "batch"})], INT64, (1,))
            dims = [d * m for d, m in zip(mid, mask, strict=True)]
            target = b.op("Mul", [ints(b, dims, "Mul"), scale], INT64, (y.rank,))
        else:
            shape = b.op("Shape", [y], INT64, (y.rank,))
            target = b.op("Mul", [shape, ints(b, mask, "Mul")], INT64, (y.rank,))
        return b.op("Reshape", [y, target], x.dtype, mid, x.props)
    spec2, out = shape_ops.reshape_target(b, mid)
    attrs = {}
    if b.opset >= 14 and 0 not in spec2 and b.rng.random() < 0.3:
        attrs["allowzero"] = 1
    return b.op("Reshape", [y, ints(b, spec2, "Reshape")], x.dtype, out, x.props, **attrs)


def _slice_slice(b: GraphBuilder, x: Value) -> Value:
    """Slice then Slice: distinct axes mostly, the same axis (spelled negative) sometimes,
    negative steps, and a first Slice read by two Slices."""
    def one(v: Value, a: int) -> Value:
        d = v.shape[a]
        if b.opset >= 10 and b.rng.random() < 0.2:
            start, end, step = -1, -d - 1, -1
        else:
            start, end, step = b.rng.choice([(0, d), (d // 2, 2**62), (-d, -1 if d > 1 else d),
                                             (0, 1)]) + (1,)
            if shape_ops.slice_dim(d, start, end, 1) == 0:
                start, end = 0, d
        spell = a - v.rank if b.opset >= 11 and b.rng.random() < 0.4 else a
        return slice_op(b, v, [start], [end], [spell], [step] if step != 1 else None)

    a1 = b.rng.randrange(x.rank)
    first = one(x, a1)
    if b.rng.random() < 0.15:
        b.graph_output(one(first, b.rng.randrange(x.rank)))
    a2 = b.rng.choice([a for a in range(x.rank) if a != a1] or [a1]) \
        if b.rng.random() < 0.8 else a1
    return one(first, a2)


def _transpose_transpose(b: GraphBuilder, x: Value) -> Value:
    first = tap(b, transpose(b, x), 0.1)
    y = transpose(b, first)
    return transpose(b, y) if b.rng.random() < 0.2 else y


def _view(b: GraphBuilder, t: Value) -> Value:
    """A view op on ``t``: Unsqueeze, Squeeze of size-1 dims, or a Reshape that splits a
    dim into two factors or moves a size-1 dim."""
    kind = b.variant(b.rng.choice(["Unsqueeze", "Squeeze", "Reshape", "Reshape"]),
                     ["Unsqueeze", "Squeeze", "Reshape"])
    ones = [i for i, d in enumerate(t.shape) if d == 1]
    if kind == "Squeeze" and ones:
        chosen = sorted(b.rng.sample(ones, b.rng.randint(1, len(ones))))
        out = tuple(d for i, d in enumerate(t.shape) if i not in chosen)
        spell = [a - t.rank if b.opset >= 11 and b.rng.random() < 0.3 else a for a in chosen]
        form = shape_ops.axes_operand(b, "Squeeze", spell, 13)
        return b.op("Squeeze", [t, *form["inputs"]], t.dtype, out, t.props, **form["attrs"])
    if kind == "Reshape":
        dims = list(t.shape)
        split = [i for i, d in enumerate(dims) if d >= 4 and d % 2 == 0]
        if split and b.rng.random() < 0.6:
            i = b.rng.choice(split)
            dims[i:i + 1] = [2, dims[i] // 2]
        elif ones:
            dims.pop(b.rng.choice(ones))
            dims.insert(b.rng.randrange(len(dims) + 1), 1)
        return b.op("Reshape", [t, ints(b, dims, "Reshape")], t.dtype, tuple(dims), t.props)
    axes = [b.rng.randrange(t.rank + 1)]
    return shape_ops.unsqueeze(b, t, axes)


def _transpose_view_transpose(b: GraphBuilder, x: Value) -> Value:
    """Transpose, a view op (Reshape / Unsqueeze / Squeeze), Transpose; a seventh of the
    time on the first element of ``x`` (sliced to size 1 on every axis), squeezed to a
    scalar between the two, so the second Transpose has rank 0 and no ``perm``."""
    if b.rng.random() < 0.15:
        axes = list(range(x.rank))
        t = transpose(b, slice_op(b, x, [0] * x.rank, [1] * x.rank, axes))
        spell = [a - t.rank if b.opset >= 11 and b.rng.random() < 0.3 else a for a in axes]
        form = shape_ops.axes_operand(b, "Squeeze", spell, 13)
        v = b.op("Squeeze", [t, *form["inputs"]], t.dtype, (), t.props, **form["attrs"])
        return transpose(b, v)
    if 1 not in x.shape and b.rng.random() < 0.5:
        x = shape_ops.unsqueeze(b, x, [b.rng.randrange(x.rank + 1)])
    t = transpose(b, x)
    v = _view(b, t)
    return transpose(b, v)


def _unsqueeze_unsqueeze(b: GraphBuilder, x: Value) -> Value:
    """Two Unsqueezes, each of one to three axes, unsorted and negative from opset 11."""
    y = x
    for _ in range(2):
        n = b.rng.randint(1, 2 if y is x else 3)
        r = y.rank + n
        axes = b.rng.sample(range(r), n)
        if b.opset >= 11:
            axes = [a - r if b.rng.random() < 0.4 else a for a in axes]
        elif b.opset < 11:
            axes.sort()
        y = tap(b, shape_ops.unsqueeze(b, y, axes), 0.05) if y is x else \
            shape_ops.unsqueeze(b, y, axes)
    return y


def _transpose_as_reshape(b: GraphBuilder, x: Value) -> Value:
    """A Transpose that only moves size-1 dims (or, a fifth of the time, also swaps two real
    dims) next to a Reshape."""
    if 1 not in x.shape:
        x = shape_ops.unsqueeze(b, x, [b.rng.randrange(x.rank + 1)])
    real = [i for i, d in enumerate(x.shape) if d != 1]
    slots = list(range(x.rank))
    ones = [i for i in slots if i not in real]
    b.rng.shuffle(ones)
    order = list(real)
    if len(order) >= 2 and b.rng.random() < 0.2:
        order[0], order[1] = order[1], order[0]
    perm = []
    for _ in range(x.rank):
        perm.append(ones.pop() if ones and (not order or b.rng.random() < 0.5) else order.pop(0))
    if b.rng.random() < 0.5:
        flat = b.op("Reshape", [x, ints(b, list(x.shape), "Reshape")], x.dtype, x.shape,
                    x.props)
        return transpose(b, flat, perm)
    t = transpose(b, x, perm)
    target = [math.prod(t.shape)] if b.rng.random() < 0.5 else list(t.shape)
    return b.op("Reshape", [t, ints(b, target, "Reshape")], t.dtype, tuple(target), t.props)


def _reduce_unsqueeze(b: GraphBuilder, x: Value) -> Value:
    """ReduceSum(keepdims=0) then Unsqueeze: the same axes (spelled alike, negative on one
    side, or in another order), other axes, and a ReduceSum another node also reads."""
    axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, min(2, x.rank))))
    spelled = [a - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in axes]
    y = tap(b, reduce(b, "ReduceSum", x, axes=spelled, keepdims=0), 0.1)
    r = b.rng.random()
    if r < 0.6:
        u_axes = list(spelled)
    elif r < 0.8 and b.opset >= 11:
        u_axes = [a - x.rank for a in axes][::-1]
    else:
        u_axes = [b.rng.randrange(y.rank + len(axes))]
        u_axes += [a for a in range(y.rank + len(axes)) if a not in u_axes][:len(axes) - 1]
    return shape_ops.unsqueeze(b, y, u_axes)


def _dims_of(b: GraphBuilder, x: Value, index: int) -> Value:
    """``Unsqueeze(Gather(Shape(x), index), 0)``: dim ``index`` of ``x`` as a 1-D int64."""
    shape = b.op("Shape", [x], INT64, (x.rank,))
    picked = b.op("Gather", [shape, b.const(np.asarray(index, np.int64), "Gather")], INT64, ())
    return shape_ops.unsqueeze(b, picked, [0])


def _empty_reshape(b: GraphBuilder, x: Value, dyn: Value, keep: int) -> None:
    """A graph output ``Reshape(x[0:0 on an axis], Concat(dyn, [0]), allowzero=1)``: an empty
    tensor of shape ``(x.shape[keep], 0)``, where the 0 is a literal extent. A ``-1`` in
    place of ``dyn`` cannot stand beside it: with ``allowzero`` 1 the spec forbids a 0 and a
    -1 in one shape (onnxruntime refuses the model). Half the time ``dyn`` is instead the
    Shape of a new input of one symbolic dim (run as 1), which no inference can fold into a
    constant."""
    first = x.shape[keep]
    if b.rng.random() < 0.5:
        dyn = b.op("Shape", [symbolic_input(b, x.dtype, (1,), {0: "n"})], INT64, (1,))
        first = 1
    empty = slice_op(b, x, [0], [0], [b.rng.randrange(x.rank)])
    shape = b.op("Concat", [dyn, ints(b, [0], "Concat")], INT64, (2,), axis=0)
    out = b.node("Reshape", [empty.name, shape.name], allowzero=1)[0]  # not pooled: empty
    b.graph_output(Value(out, x.dtype, (first, 0)))


def _concat_reshape(b: GraphBuilder, x: Value) -> Value:
    """Reshape whose shape is a Concat of one dynamic dim (Shape, Gather, Unsqueeze) and
    one-element constants (a merged dim, a 0 that copies, or a -1)."""
    if x.rank < 2:
        return None
    keep = b.rng.randrange(x.rank)
    spell = keep - x.rank if b.opset >= 11 and b.rng.random() < 0.3 else keep
    dyn = _dims_of(b, x, spell)
    rest = math.prod(x.shape) // x.shape[keep]
    pieces = [dyn, ints(b, [rest if b.rng.random() < 0.8 else -1], "Concat")]
    target = [x.shape[keep], rest]
    if b.rng.random() < 0.3:
        pieces.insert(0, ints(b, [1], "Concat"))
        target.insert(0, 1)
    out = b.op("Concat", pieces, INT64, (len(pieces),), axis=0)
    return b.op("Reshape", [x, tap(b, out, 0.05)], x.dtype, tuple(target), x.props)


def _concat_reshape_empty(b: GraphBuilder, x: Value) -> Value | None:
    """:func:`_empty_reshape` of ``x`` by one of its dims; ``x`` goes on. No anchors: a schema
    row's edit of the Concat's axis or of the Reshape's input breaks the empty extent."""
    if x.rank < 2:
        return None
    keep = b.rng.randrange(x.rank)
    _empty_reshape(b, x, _dims_of(b, x, keep), keep)
    return b.op("Identity", [x], x.dtype, x.shape, x.props)


def _reshape_as(b: GraphBuilder, x: Value) -> Value:
    """Flatten ``x``, transform it, and Reshape it back by a shape rebuilt dim by dim from one
    ``Shape(x)`` (a Gather per dim, Unsqueeze, Concat): the pattern EliminationReshapeAs
    replaces by the Shape itself; at times an index spelled negative or two dims swapped (a
    real reshape). Where the draw takes a schema row that gives the Shape a non-default
    ``start``, the dims before it are literals of the Concat."""
    if x.rank < 2:
        return None
    flat = b.op("Reshape", [x, ints(b, [-1], "Reshape")], x.dtype, (x.size,), x.props)
    flat = b.op("Neg", [flat], x.dtype, flat.shape)
    order = list(range(x.rank))
    if b.rng.random() < 0.1:
        order[0], order[-1] = order[-1], order[0]
    # a schema row that gives the Shape a start (Shape-15) gets the leading dims as literals
    start = b.rng.randrange(1, x.rank) \
        if b.opset >= 15 and b.planned("Shape", "attr:start") == NONDEFAULT else 0
    shape = b.op("Shape", [x], INT64, (x.rank - start,), start=start or None)
    if b.rng.random() < 0.8:  # the matcher reads the Shape's length from value_info
        b.value_infos.append(value_info(shape.name, INT64, shape.shape))
    negative = b.rng.randrange(x.rank) if b.opset >= 11 and b.rng.random() < 0.15 else None
    parts = []
    for i in order:
        if i < start:
            parts.append(ints(b, [x.shape[i]], "Concat"))
            continue
        spell = i - x.rank if i == negative else i - start
        picked = b.op("Gather", [shape, b.const(np.asarray(spell, np.int64), "Gather")],
                      INT64, ())
        parts.append(shape_ops.unsqueeze(b, picked, [0]))
    target = b.op("Concat", parts, INT64, (x.rank,), axis=0)
    return b.op("Reshape", [flat, target], x.dtype, tuple(x.shape[i] for i in order))


MOTIFS = (
    shaped_motif("slim-concat-concat", ("EliminationConcat", "fuse_consecutive_concats"),
                 _concat_concat, dtypes=frozenset(ALL), ranks=(1, 4),
                 anchors=("Concat",)),
    shaped_motif("slim-reshape-reshape", ("EliminationReshape", "fuse_consecutive_reshapes",
                                          "fuse_reshape_family"),
                 _reshape_reshape, dtypes=_DATA, ranks=(1, 4),
                 anchors=("Reshape",)),
    shaped_motif("slim-slice-slice", ("EliminationSlice", "fuse_consecutive_slices"),
                 _slice_slice, dtypes=_DATA, ranks=(1, 4),
                 anchors=("Slice",)),
    shaped_motif("slim-transpose-transpose", ("EliminationTranspose", "fuse_consecutive_transposes",
                                              "eliminate_nop_transpose"),
                 _transpose_transpose, dtypes=frozenset(ALL), ranks=(2, 4),
                 anchors=("Transpose",)),
    shaped_motif("slim-transpose-view-transpose", ("EliminationTransposeViewTranspose",
                                                   "EliminationTranspose", "fuse_reshape_family"),
                 _transpose_view_transpose, dtypes=_DATA, ranks=(2, 4),
                 anchors=("Transpose", "Reshape", "Squeeze", "Unsqueeze")),
    shaped_motif("slim-unsqueeze-unsqueeze", ("EliminationUnsqueeze",
                                              "fuse_consecutive_unsqueezes"),
                 _unsqueeze_unsqueeze, dtypes=frozenset(ALL), ranks=(0, 3),
                 anchors=("Unsqueeze",)),
    shaped_motif("slim-transpose-as-reshape", ("EliminationTransposeAsReshape",),
                 _transpose_as_reshape, dtypes=_DATA, ranks=(1, 4),
                 anchors=("Transpose", "Reshape")),
    shaped_motif("slim-reduce-unsqueeze", ("FusionReduce", "fuse_consecutive_reduce_unsqueeze"),
                 _reduce_unsqueeze, dtypes=frozenset({FLOAT}), ranks=(1, 4),
                 anchors=("ReduceSum", "Unsqueeze")),
    shaped_motif("slim-concat-reshape", ("FusionConcatReshape", "fuse_concat_into_reshape",
                                         "constant_folding"),
                 _concat_reshape, dtypes=_DATA, ranks=(2, 4),
                 anchors=("Concat", "Reshape")),
    shaped_motif("slim-concat-reshape-empty", ("FusionConcatReshape",),
                 _concat_reshape_empty, dtypes=_DATA, ranks=(2, 4), since=14),
    shaped_motif("slim-reshape-as", ("EliminationReshapeAs", "constant_folding",
                                     "eliminate_shape_op"),
                 _reshape_as, dtypes=frozenset({FLOAT, INT64}), ranks=(2, 4),
                 anchors=("Shape", "Gather", "Concat", "Reshape")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 180
