"""Motifs for onnxruntime's shape and layout transformers (``onnxruntime/core/optimizer/``):
the Shape/Gather/Unsqueeze/Concat/Reshape pattern (``reshape_fusion.cc``), Gathers or Slices
that cut a tensor into parts and Gather of a Range (``gather_fusion.cc``), strided Slices
concatenated into SpaceToDepth (``slice_concat_to_space_to_depth_fusion.cc``), Transpose
pushing and cancelling (``transpose_optimization/``), the NCHWc layout
(``nchwc_transformer.cc``) and float16 initializers cast to float
(``fuse_initializers_transformer.cc``).

Variants: indices that wrap around (negative Range starts), odd or shortened Slice extents,
phases in canonical, YOLO or random order, dims read from another tensor's Shape.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.helpers import (
    ANY_FLOAT,
    FLOAT_INPUT,
    binary,
    float_view,
    ints,
    ort_motif,
    placement,
    planned_axis,
    slice_op,
    tap,
    weight,
)
from generators.ops import nn, shape_ops
from generators.ops.reduce import reduce
from generators.ops.shape_ops import INT64_MAX
from generators.values import ALL, FLOAT, FLOAT16, FLOATS, INT32, INT64, Value


# -- shape patterns -----------------------------------------------------------------------------
def _gather_dim(b: GraphBuilder, s: Value, i: int) -> Value:
    """Dim ``i`` of shape ``s`` as a 1-D tensor: Gather of a scalar index then Unsqueeze, or
    Gather of a one-element index, or Slice."""
    r = b.rng.random()
    if r < 0.7:
        idx = b.const(np.array(i if b.rng.random() < 0.8 or b.opset < 11 else i - s.shape[0],
                               np.int64), "Gather", placement(b))
        g = b.op("Gather", [s, idx], INT64, ())
        return shape_ops.unsqueeze(b, g, [0])
    if r < 0.85:
        return b.op("Gather", [s, ints(b, [i], "Gather")], INT64, (1,))
    return slice_op(b, s, [i], [i + 1], [0])


def _reshape_from_shape(b: GraphBuilder, x: Value) -> Value:
    """Reshape whose shape is Concat of the leading dims, read by Shape/Gather/Unsqueeze from
    the data itself, and a constant tail (reshape_fusion.cc); sometimes a dim is read from the
    Shape of another node's output."""
    keep = b.rng.randint(1, x.rank - 1)
    s = b.op("Shape", [x], INT64, (x.rank,))
    parts = [_gather_dim(b, s, i) for i in range(keep)]
    if b.rng.random() < 0.15 and keep >= 2:
        other = b.op("Relu" if x.dtype in FLOATS else "Identity", [x], x.dtype, x.shape)
        parts[1] = _gather_dim(b, b.op("Shape", [other], INT64, (x.rank,)), 1)
    rest = int(np.prod(x.shape[keep:]))
    tail = b.rng.choice([[-1], [rest], [1, -1], [-1, 1]])
    parts.append(ints(b, tail, "Concat"))
    target = b.op("Concat", parts, INT64, (keep + len(tail),), axis=0)
    out = x.shape[:keep] + tuple(rest if t == -1 else t for t in tail)
    return b.op("Reshape", [x, target], x.dtype, out, x.props)


def _gather_split(b: GraphBuilder, x: Value) -> Value:
    """A tensor cut by Gathers of every index of one axis, or by Slices into consecutive
    parts (gather_fusion.cc -> Split); sometimes an index repeats or is negative."""
    cands = [i for i, d in enumerate(x.shape) if 2 <= d <= 4]
    if not cands:
        x = b.op("MatMul", [x, weight(b, (x.shape[-1], 3), x.dtype, "MatMul")], x.dtype,
                 (*x.shape[:-1], 3)) if x.rank else x
        cands = [x.rank - 1] if x.rank else []
        if not cands:
            return x
    x = b.op("Neg", [x], x.dtype, x.shape)  # a root only the Gathers or Slices consume
    a = b.rng.choice(cands)
    d = x.shape[a]
    ax = a - x.rank if b.opset >= 11 and b.rng.random() < 0.3 else a
    parts = []
    if b.rng.random() < 0.65:
        idx = list(range(d))
        if b.rng.random() < 0.1:
            idx[-1] = 0
        one_d = b.rng.random() < 0.2
        for i in idx:
            i = i - d if b.opset >= 11 and b.rng.random() < 0.15 else i
            ind = b.const(np.array([i] if one_d else i, np.int64), "Gather", placement(b))
            shape = x.shape[:a] + ((1,) if one_d else ()) + x.shape[a + 1:]
            parts.append(b.op("Gather", [x, ind], x.dtype, shape, x.props, axis=ax))
    else:
        cut = b.rng.randint(1, d - 1)
        parts = [slice_op(b, x, [0], [cut], [ax]), slice_op(b, x, [cut], [
            b.rng.choice([d, INT64_MAX])], [ax])]
    out = parts[0]
    for p in parts[1:]:
        if p.shape == out.shape:
            out = b.op("Add", [out, p], x.dtype, out.shape)
    return out


def _range_gather(b: GraphBuilder, x: Value) -> Value:
    """Gather with indices made by Range (gather_fusion.cc -> Slice): ascending, strided,
    descending, and ranges of negative indices (which Gather wraps around)."""
    a = planned_axis(b, "Gather", b.rng.randrange(x.rank), x.rank)
    d = x.shape[a]
    start, limit, delta = b.rng.choice([(0, d, 1), (0, d, 1), (d // 2, d, 1), (0, d, 2),
                                        (d - 1, -1, -1), (-d, 0, 1), (-1, -d - 1, -1)])
    n = len(range(start, limit, delta))
    if n == 0:
        start, limit, delta, n = 0, d, 1, d
    dt = np.int64 if b.rng.random() < 0.8 else np.int32
    consts = [b.const(np.array(v, dt), "Range", placement(b)) for v in (start, limit, delta)]
    idx = b.op("Range", consts, INT64 if dt == np.int64 else INT32, (n,))
    ax = a - x.rank if b.rng.random() < 0.3 else a
    return b.op("Gather", [x, idx], x.dtype, x.shape[:a] + (n,) + x.shape[a + 1:], x.props,
                axis=ax)


_PHASES = [(0, 0), (1, 0), (0, 1), (1, 1)]


def _space_to_depth(b: GraphBuilder, x: Value) -> Value:
    """Four Slices of step 2 on H and W at the four phases, concatenated on channels
    (slice_concat_to_space_to_depth_fusion.cc; the Focus layer of YOLOv5) in the canonical,
    the YOLO or a random order; odd or shortened extents sometimes. An input of one row or
    column is tiled to two first."""
    x = float_view(b, x, ANY_FLOAT)
    if min(x.shape[2:]) < 2:  # no second row or column to take: tiled
        reps = [1, 1, *(2 if d < 2 else 1 for d in x.shape[2:])]
        x = b.op("Tile", [x, ints(b, reps, "Tile")], x.dtype,
                 tuple(d * r for d, r in zip(x.shape, reps, strict=True)))
    if (x.shape[2] % 2 or x.shape[3] % 2) and b.rng.random() < 0.6:  # crop to even extents
        x = slice_op(b, x, [0, 0], [d - d % 2 for d in x.shape[2:]], [2, 3])
    n, c, h, w = x.shape
    ends = []
    for d in (h, w):
        if d % 2:
            ends.append(d - 1)
        else:
            ends.append(b.rng.choice([INT64_MAX, INT64_MAX, d, d - 2 if d > 2 else d]))
    r = b.rng.random()
    phases = [(0, 0), (0, 1), (1, 0), (1, 1)] if r < 0.3 else (
        list(_PHASES) if r < 0.7 else b.rng.sample(_PHASES, 4))
    form = b.rng.choice(["hw", "neg", "all"])
    parts = []
    for ph, pw in phases:
        if form == "all":
            parts.append(slice_op(b, x, [0, 0, ph, pw], [INT64_MAX, INT64_MAX, *ends],
                                  [0, 1, 2, 3], [1, 1, 2, 2]))
        else:
            axes = [2, 3] if form == "hw" or b.opset < 11 else [-2, -1]
            parts.append(slice_op(b, x, [ph, pw], ends, axes, [2, 2]))
    shape = (n, 4 * c, *parts[0].shape[2:])  # equal extents: even dims or ends d - 1
    return b.op("Concat", parts, x.dtype, shape, axis=1 if b.rng.random() < 0.7 else -3)


# -- layout ---------------------------------------------------------------------------------------
def _perm(b: GraphBuilder, rank: int) -> list[int]:
    p = list(range(rank))
    while p == list(range(rank)) and rank > 1:
        b.rng.shuffle(p)
    return p


def _transposed(b: GraphBuilder, x: Value, perm: list[int]) -> Value:
    return b.op("Transpose", [x], x.dtype, tuple(x.shape[i] for i in perm), x.props, perm=perm)


def _transposes(b: GraphBuilder, x: Value) -> Value:
    """A Transpose, an op it can be pushed through (elementwise, broadcast Add, Reduce,
    Softmax, Squeeze/Unsqueeze, Concat, Split) and the inverse Transpose or another one
    (transpose_optimization/)."""
    p = _perm(b, x.rank)
    inv = [p.index(i) for i in range(x.rank)]
    t = tap(b, _transposed(b, x, p), 0.05)
    op = b.rng.choice(["Relu", "Add", "Reduce", "Softmax", "Unsqueeze", "Concat", "Split",
                       "none"])
    if op == "Relu":
        t = b.op(b.rng.choice(["Relu", "Abs", "Sigmoid", "Neg"]), [t], t.dtype, t.shape)
    elif op == "Add":
        t = binary(b, "Add", t, weight(b, t.shape[-1:] if b.rng.random() < 0.5 else t.shape,
                                       t.dtype, "Add"))
    elif op == "Reduce":
        t = reduce(b, b.rng.choice(["ReduceSum", "ReduceMax", "ReduceMean"]), t, keepdims=1)
    elif op == "Softmax" and b.opset >= 13:
        t = b.op("Softmax", [t], t.dtype, t.shape, axis=b.rng.randrange(-t.rank, t.rank))
    elif op == "Unsqueeze":
        u = shape_ops.unsqueeze(b, t, [0])
        return _transposed(b, u, [0] + [i + 1 for i in inv])
    elif op == "Concat":
        other = _transposed(b, weight(b, x.shape, x.dtype, "Concat"), p)
        a = b.rng.randrange(t.rank)
        shape = list(t.shape)
        shape[a] *= 2
        t = b.op("Concat", [t, other], t.dtype, tuple(shape), axis=a)
    elif op == "Split" and t.shape[0] >= 2:
        t = shape_ops.split(b, t, 0, shape_ops.split_sizes(b, t.shape[0]))[0]
    back = inv if b.rng.random() < 0.7 else _perm(b, t.rank)
    return _transposed(b, t, back)


def _nchwc(b: GraphBuilder, x: Value) -> Value:
    """Conv chains with channel counts that are multiples of 8 (nchwc_transformer.cc converts
    them to the blocked NCHWc layout): Conv, activation, pooling, Add of two branches,
    depthwise and strided Conv, GlobalAveragePool."""
    n, c, h, w = x.shape
    m = b.rng.choice([8, 16])
    k = b.rng.choice([1, 3]) if min(h, w) >= 3 else 1
    pad = k // 2 if b.rng.random() < 0.7 else 0
    y = b.op("Conv", [x, weight(b, (m, c, k, k), FLOAT, "Conv"), weight(b, (m,), FLOAT, "Conv")],
             FLOAT, (n, m, h + 2 * pad - k + 1, w + 2 * pad - k + 1), kernel_shape=[k, k],
             pads=[pad] * 4)
    if b.rng.random() < 0.6:
        y = b.op(b.rng.choice(["Relu", "Sigmoid", "Tanh"]), [y], FLOAT, y.shape)
    r = b.rng.random()
    group = m if r < 0.3 else 1
    m2 = m if group > 1 else b.rng.choice([8, 16])
    z = b.op("Conv", [y, weight(b, (m2, m // group, 3, 3), FLOAT, "Conv")], FLOAT,
             (n, m2, *y.shape[2:]), kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group)
    if m2 == m and b.rng.random() < 0.5:
        z = b.op("Add", [z, y], FLOAT, z.shape)
    r = b.rng.random()
    if r < 0.3 and min(z.shape[2:]) >= 2:
        return nn.pool(b, b.rng.choice(["MaxPool", "AveragePool"]), z)
    if r < 0.5:
        return b.op("GlobalAveragePool", [z], FLOAT, (n, m2, 1, 1))
    return z


def _fp16_initializer(b: GraphBuilder, x: Value) -> Value:
    """A float16 initializer cast to float for a float op (fuse_initializers_transformer.cc
    stores it as a float initializer)."""
    shape = b.rng.choice([x.shape[-1:], x.shape, ()])
    w = b.random_weight(shape, FLOAT16, "Cast", placement=placement(b))
    c = b.op("Cast", [w], FLOAT, shape, to=FLOAT)
    if x.rank >= 2 and b.rng.random() < 0.4:
        w2 = b.random_weight((x.shape[-1], 3), FLOAT16, "MatMul")
        m = b.op("MatMul", [x, b.op("Cast", [w2], FLOAT, w2.shape, to=FLOAT)], FLOAT,
                 (*x.shape[:-1], 3))
        return binary(b, "Add", m, b.op("Cast", [b.random_weight((3,), FLOAT16)], FLOAT, (3,),
                                         to=FLOAT))
    return binary(b, b.rng.choice(["Add", "Mul"]), x, c)


MOTIFS = (
    ort_motif("ort-reshape-from-shape", ("ReshapeFusion",), _reshape_from_shape,
              dtypes=frozenset(ALL), ranks=(2, 4), since=5,
              anchors=("Shape", "Gather", "Concat", "Reshape")),
    ort_motif("ort-gather-split", ("GatherSliceToSplitFusion",), _gather_split,
              dtypes=FLOAT_INPUT, ranks=(1, 4),
              anchors=("Gather", "Slice")),
    ort_motif("ort-range-gather", ("GatherToSliceFusion",), _range_gather,
              dtypes=frozenset(ALL), since=11,
              anchors=("Range", "Gather")),
    ort_motif("ort-space-to-depth", ("SliceConcatToSpaceToDepthFusion",), _space_to_depth,
              ranks=(4, 4), since=10,
              anchors=("Slice", "Concat"),
              pins=(("Slice|in:steps", ("present",),
                     "the space-to-depth pattern slices every second row and column: without "
                     "its steps input each Slice takes every one, and the four parts of the "
                     "Concat no longer match"),)),
    ort_motif("ort-transposes", ("TransposeOptimizer", "TransposeOptimizer_CPUExecutionProvider"),
              _transposes, dtypes=FLOAT_INPUT, ranks=(2, 4),
              anchors=("Transpose",)),
    ort_motif("ort-nchwc", ("NchwcTransformer",), _nchwc, ranks=(4, 4),
              anchors=("Conv",)),
    ort_motif("ort-fp16-initializer", ("FuseFp16InitializerToFp32NodeTransformer",),
              _fp16_initializer, ranks=(1, 4),
              anchors=("Cast",)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 100
