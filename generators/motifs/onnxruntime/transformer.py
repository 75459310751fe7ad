"""Motifs for onnxruntime's elimination rules and constant transformers
(``onnxruntime/core/optimizer/``): Identity, Dropout, Cast, Slice, Unsqueeze and Expand
elimination, neutral-element removal (``noop_elimination.cc``), Div/Mul, Relu/Clip and
Not/Where rewrites, Pad folded into Conv and pooling (``pad_fusion.cc``), constant folding
(``constant_folding.cc``) and sharing (``constant_sharing.cc``), common subexpressions
(``common_subexpression_elimination.cc``).

Each pattern comes with variants the rewrite must refuse (a Slice that reverses, a Pad of 1,
a Clip with a positive minimum, an integer Div whose reciprocal truncates) and with the
intermediate sometimes a graph output or consumed twice.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, tensor_proto
from generators.motifs.helpers import (
    ANY_FLOAT,
    FLOAT_INPUT,
    NO_DOUBLE,
    binary,
    clip,
    const,
    float_view,
    ints,
    near,
    ort_motif,
    placement,
    slice_op,
    swap,
    tap,
    weight,
)
from generators.ops import nn, shape_ops
from generators.ops.reduce import reduce
from generators.ops.shape_ops import INT64_MAX
from generators.ops.spec import ensure
from generators.values import (
    ALL,
    BOOL,
    FLOAT,
    FLOAT16,
    FLOATS,
    INT32,
    INT64,
    NP_DTYPE,
    NUMERIC,
    Value,
    broadcast,
)


# -- eliminations -------------------------------------------------------------------------------
def _identity(b: GraphBuilder, x: Value) -> Value:
    """One to three Identity nodes; one of them sometimes a graph output
    (identity_elimination.cc keeps an Identity that produces a graph output)."""
    y = x
    for _ in range(b.rng.randint(1, 3)):
        y = tap(b, b.op("Identity", [y], y.dtype, y.shape, y.props), 0.25)
    return y


def _dropout(b: GraphBuilder, x: Value) -> Value:
    """Dropout in inference form: ratio attribute or input, training_mode False (or True with
    ratio 0), the mask output sometimes consumed (dropout_elimination.cc)."""
    x = float_view(b, x, ANY_FLOAT if b.opset >= 12 else NO_DOUBLE)
    ratio = b.rng.choice([0.0, 0.1, 0.5, None])
    mask = b.rng.random() < 0.2
    if b.opset < 12:
        names = b.node("Dropout", [x.name], n_out=1 + mask, ratio=ratio)
    else:
        inputs = [x.name, "" if ratio is None else const(b, ratio, FLOAT, ()).name]
        r = b.rng.random()
        if r < 0.4 or (r < 0.45 and ratio == 0.0):  # training mode only where it is exact
            inputs.append(b.const(np.array(r >= 0.4), "Dropout", placement(b)).name)
        while inputs[-1] == "":
            inputs.pop()
        names = b.node("Dropout", inputs, n_out=1 + mask)
    y = b.add(Value(names[0], x.dtype, x.shape, x.props))
    if mask:
        kind = BOOL if b.opset >= 10 else x.dtype
        b.op("Not" if kind == BOOL else "Neg", [names[1]], kind, x.shape)
    return y


def _cast(b: GraphBuilder, x: Value) -> Value:
    """A Cast to the type the input already has (cast_elimination.cc), or a Cast whose only
    consumers are Shape nodes (pre_shape_node_elimination.cc)."""
    if b.rng.random() < 0.5 or not x.rank:
        y = tap(b, b.op("Cast", [x], x.dtype, x.shape, x.props, to=x.dtype), 0.1)
        return b.op("Cast", [y], x.dtype, x.shape, x.props, to=x.dtype) \
            if b.rng.random() < 0.2 else y
    to = b.rng.choice([t for t in (FLOAT, INT64, INT32, FLOAT16) if t != x.dtype])
    c = b.op("Cast", [x], to, x.shape, to=to)
    out = None
    for _ in range(b.rng.randint(1, 2)):
        attrs = {"start": b.rng.choice([0, -1])} if b.opset >= 15 and b.rng.random() < 0.3 \
            else {}
        n = x.rank - attrs.get("start", 0) % x.rank
        out = b.op("Shape", [c], INT64, (n,), ("nonneg",), **attrs)
    if b.rng.random() < 0.15:  # a consumer that needs the values: the Cast must stay
        b.op("Abs", [c], to, c.shape)
    return out


def _full_slice(b: GraphBuilder, x: Value) -> Value:
    """A Slice that keeps the whole tensor: starts 0 or -d, ends d, INT64_MAX or beyond
    (slice_elimination.cc, which removes the attribute form of opsets before 10: hence a
    second motif limited to them); sometimes one that drops the last element or reverses."""
    axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
    starts, ends, steps = [], [], None
    canonical = b.rng.random() < 0.6  # starts 0, ends INT64_MAX: the form exporters write
    for a in axes:
        d = x.shape[a]
        starts.append(0 if canonical else b.rng.choice([0, -d]))
        ends.append(INT64_MAX if canonical else b.rng.choice([d, INT64_MAX, d + 3, 2**31 - 1]))
    r = b.rng.random()
    if b.opset >= 10 and r < 0.1:
        starts[0], ends[0], steps = -1, -INT64_MAX, [-1] + [1] * (len(axes) - 1)
    elif r < 0.2 and x.shape[axes[0]] > 1:
        ends[0] = -1
    elif b.opset >= 10 and r < 0.5:
        steps = [1] * len(axes)
    if b.opset >= 11 and b.rng.random() < 0.3:
        axes = [a - x.rank for a in axes]
    return slice_op(b, x, starts, ends, axes, steps)


def _unsqueeze_init(b: GraphBuilder, x: Value) -> Value:
    """Unsqueeze of a constant that then broadcasts against ``x`` (unsqueeze_elimination.cc
    folds it into a new initializer); the constant sometimes has a second consumer."""
    drop = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, min(2, x.rank))))
    wshape = tuple(d for i, d in enumerate(x.shape) if i not in drop)
    w = b.random_weight(wshape, x.dtype, "Unsqueeze", placement=placement(b))
    axes = [a - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in drop]
    if b.rng.random() < 0.5:
        axes = axes[::-1]
    u = shape_ops.unsqueeze(b, w, axes)
    y = binary(b, b.rng.choice(["Add", "Mul"]), x, u)
    if b.rng.random() < 0.15 and wshape:
        b.op("Neg", [w], w.dtype, w.shape)
    return y


def _expand(b: GraphBuilder, x: Value) -> Value:
    """Expand to a shape the input already has: all ones, x's shape, a shorter shape
    (expand_elimination.cc); sometimes one that broadcasts (kept)."""
    r = b.rng.random()
    if r < 0.3:
        shape = [1] * b.rng.randint(1, max(1, x.rank))
    elif r < 0.85:
        shape = [d if b.rng.random() < 0.6 else 1 for d in x.shape]
    else:
        shape = [2, *x.shape]
    out = broadcast(x.shape, tuple(shape))
    return b.op("Expand", [x, ints(b, shape, "Expand")], x.dtype, out, x.props)


#: op -> neutral element and whether it may stand first.
_NEUTRAL = {"Add": (0, True), "Sub": (0, False), "Mul": (1, True), "Div": (1, False)}


def _noop(b: GraphBuilder, x: Value) -> Value:
    """x + 0, x - 0, x * 1, x / 1 with a scalar, 1-element or broadcast constant
    (noop_elimination.cc); sometimes 0 - x, a constant that widens the output, or -0.0."""
    op = b.rng.choice(list(_NEUTRAL))
    unit, first = _NEUTRAL[op]
    value = -0.0 if unit == 0 and x.dtype in FLOATS and b.rng.random() < 0.15 else unit
    r = b.rng.random()
    shape = () if r < 0.4 else ((1,) if r < 0.6 else (x.shape[-1:] if r < 0.9 else
                                                      (2, *x.shape)))
    c = b.const(np.full(shape, near(b, value, 0.05) if x.dtype in FLOATS else value,
                        NP_DTYPE[x.dtype]), op, placement(b))
    flip = first or (op == "Sub" and b.rng.random() < 0.1)
    args = [c, x] if flip and b.rng.random() < 0.4 else [x, c]
    return b.op(op, args, x.dtype, broadcast(x.shape, c.shape), x.props if op != "Sub" else ())


def _div_mul(b: GraphBuilder, x: Value) -> Value:
    """Div(1, y) then Mul with z (div_mul_fusion.cc -> Div(z, y)), y >= 1; in float types and
    in integers, where 1/y truncates."""
    y = ensure(b, x, "ge1")
    dt = b.rng.choice([FLOAT, FLOAT, FLOAT16, INT64, INT32])
    if dt != y.dtype:
        y = b.op("Cast", [y], dt, y.shape, ("nonneg", "ge1"), to=dt)
    d = b.op("Div", [const(b, near(b, 1.0, 0.05) if dt in FLOATS else 1, dt), y], dt, y.shape)
    z = weight(b, y.shape[-1:], dt, "Mul")
    m = tap(b, binary(b, "Mul", d, z), 0.05)
    if b.rng.random() < 0.2:  # a second Mul of the same Div
        b.op("Mul", [d, weight(b, y.shape, dt, "Mul")], dt, y.shape)
    return m


def _relu_clip(b: GraphBuilder, x: Value) -> Value:
    """Relu then Clip (relu_clip_fusion.cc raises the Clip minimum to 0); minima below, at and
    above 0 and absent."""
    x = float_view(b, x, ANY_FLOAT if b.opset >= 12 else NO_DOUBLE)
    r = tap(b, b.op("Relu", [x], x.dtype, x.shape, ("nonneg",)), 0.08)
    lo = b.rng.choice([-1.0, 0.0, None, 0.5, -0.1])
    hi = b.rng.choice([6.0, 1.0, None])
    return clip(b, r, lo, hi)


def _not_where(b: GraphBuilder, x: Value) -> Value:
    """Where(Not(c), a, b) (not_where_fusion.cc swaps the branches); the Not sometimes feeds
    two Wheres or another consumer."""
    c = b.op("Greater", [x, const(b, 0.0, x.dtype, ())], BOOL, x.shape)
    n = b.op("Not", [c], BOOL, x.shape)
    other = weight(b, b.rng.choice([x.shape, x.shape[-1:], ()]), x.dtype, "Where")
    y = b.op("Where", [n, *swap(b, x, other, 0.5)], x.dtype, x.shape)
    r = b.rng.random()
    if r < 0.2:
        b.op("Where", [n, weight(b, (), x.dtype, "Where"), x], x.dtype, x.shape)
    elif r < 0.3:
        b.op("Cast", [n], FLOAT, x.shape, to=FLOAT)
    return y


def _pad_into(b: GraphBuilder, x: Value) -> Value:
    """Constant Pad of the spatial dims into Conv, MaxPool or AveragePool (pad_fusion.cc);
    sometimes a nonzero value, a reflect Pad, a negative or batch pad, the opset-18 axes
    input, AveragePool counting or not the padding."""
    r = x.rank
    pads = [0] * (2 * r)
    for i in range(2, r):
        pads[i], pads[i + r] = b.rng.randint(0, 2), b.rng.randint(0, 2)
    if b.rng.random() < 0.1:
        pads[b.rng.choice([0, 1])] = 1
    if b.opset >= 11 and b.rng.random() < 0.05 and x.shape[-1] > 2:
        pads[2 * r - 1] = -1
    out = tuple(d + pads[i] + pads[i + r] for i, d in enumerate(x.shape))
    value = b.rng.choice([0.0, 0.0, None, 1.0])
    mode = "reflect" if b.rng.random() < 0.08 and all(p >= 0 for p in pads) and all(
        p < d for p, d in zip(pads, x.shape * 2, strict=True)) else None
    if b.opset < 11:
        p = b.op("Pad", [x], x.dtype, out, pads=pads, mode=mode, value=value)
    else:
        inputs = [x.name, ints(b, pads, "Pad").name]
        spatial_only = not any(pads[i] for i in (0, 1, r, r + 1))
        if b.opset >= 18 and spatial_only and b.rng.random() < 0.4:
            axes = list(range(2, r)) if b.rng.random() < 0.5 else list(range(2 - r, 0))
            inputs[1] = ints(b, pads[2:r] + pads[r + 2:], "Pad").name
            inputs += ["" if value is None else const(b, value, x.dtype, ()).name,
                       ints(b, axes, "Pad").name]
        elif value is not None:
            inputs.append(const(b, value, x.dtype, ()).name)
        p = b.op("Pad", inputs, x.dtype, out, mode=mode)
    p = tap(b, p, 0.05)
    op = b.variant(b.rng.choice(["Conv", "MaxPool", "AveragePool"]),
                   ["Conv", "MaxPool", "AveragePool"])
    if op == "Conv":
        from generators.motifs.fusion import conv

        return conv(b, p, pads=b.rng.random() < 0.3)
    return nn.pool(b, op, p)


# -- constants ----------------------------------------------------------------------------------
def _folded(b: GraphBuilder, x: Value) -> Value:
    """A subexpression of constants only (Add of two weights, Transpose, Cast then Sqrt,
    Range, Shape of a static tensor into ConstantOfShape ...) combined with ``x``
    (constant_folding.cc); a weight that is an overridable graph input stops the folding."""
    k = x.shape[-1:]
    floating = x.dtype in FLOATS
    r = b.rng.random()
    kind = "Add" if r < 0.25 else "Transpose" if r < 0.4 and x.rank else \
        "Cast" if r < 0.55 and floating else \
        "Range" if r < 0.7 and b.opset >= 11 and x.dtype == FLOAT and x.rank else \
        "ConstantOfShape" if b.opset >= 9 else "Neg"
    # a draw aimed at one anchor makes it where it can (GraphBuilder.variant)
    kind = b.variant(kind, ["Cast", *(["ConstantOfShape"] if b.opset >= 9 else [])])
    if kind == "Add":
        c = b.op(b.rng.choice(["Add", "Mul", "Sub"]),
                 [weight(b, k, x.dtype, "Add"), weight(b, k, x.dtype, "Add")], x.dtype, k)
    elif kind == "Transpose":
        w = weight(b, (1, *k), x.dtype, "Transpose")
        c = b.op("Transpose", [w], x.dtype, (*k, 1), perm=[1, 0])
        c = b.op("Reshape", [c, b.ints([-1])], x.dtype, k)
    elif kind == "Cast" and floating:
        w = weight(b, k, FLOAT16 if x.dtype == FLOAT else FLOAT, "Cast", positive=True)
        c = b.op(b.rng.choice(["Sqrt", "Exp", "Neg"]),
                 [b.op("Cast", [w], x.dtype, k, to=x.dtype)], x.dtype, k)
    elif kind == "Cast":  # only a draw aimed at the Cast comes here with integers
        w = weight(b, k, INT32 if x.dtype == INT64 else INT64, "Cast", positive=True)
        c = b.op("Cast", [w], x.dtype, k, to=x.dtype)
    elif kind == "Range":
        rng = b.op("Range", [const(b, 0.0, FLOAT, ()), const(b, float(k[0]), FLOAT, ()),
                             const(b, 1.0, FLOAT, ())], FLOAT, k)
        c = b.op("Div", [rng, const(b, 4.0, FLOAT, ())], FLOAT, k)
    elif kind == "ConstantOfShape":
        s = b.op("Shape", [x], INT64, (x.rank,))
        value = tensor_proto(np.array([2], NP_DTYPE[x.dtype]), "value")
        c = b.op("ConstantOfShape", [s], x.dtype, x.shape, value=value)
    else:
        c = b.op("Neg", [weight(b, k, x.dtype, "Neg")], x.dtype, k)
    return binary(b, "Add", x, c)


def _shared_constants(b: GraphBuilder, x: Value) -> Value:
    """Several nodes each with its own scalar initializer of one value (constant_sharing.cc
    shares them); sometimes one of shape (1,) among scalars, or -0.0 beside 0.0, or the same
    number in another type."""
    value = b.rng.choice([1.0, 2.0, 0.5, 0.0, 3.0])
    y = x
    for i in range(b.rng.randint(2, 4)):
        v = -0.0 if value == 0.0 and i == 1 and b.rng.random() < 0.3 else value
        shape = (1,) if i == 1 and b.rng.random() < 0.2 else ()
        c = b.const(np.full(shape, v, NP_DTYPE[x.dtype]), "Const",
                    "initializer" if b.rng.random() < 0.9 else "input")
        y = binary(b, b.rng.choice(["Add", "Mul", "Max"] if b.opset >= 8 else ["Add", "Mul"]),
                   y, c)
    if b.rng.random() < 0.3:  # the same number as an integer
        n = b.op("Cast", [y], INT64, y.shape, to=INT64)
        n = b.op("Add", [n, b.const(np.array(int(value), np.int64))], INT64, y.shape)
        return b.op("Cast", [n], x.dtype, y.shape, to=x.dtype)
    return y


def _cse(b: GraphBuilder, x: Value) -> Value:
    """Two nodes of the same op, attributes and inputs (common_subexpression_elimination.cc);
    sometimes the attributes or a constant input differ only in name, or a duplicate is a
    graph output, or the duplicates have several outputs."""
    ops = ("Relu", "Sigmoid", "Add", "Transpose", "Softmax", "Split", "Cast", "ReduceMax")
    op = b.variant(b.rng.choice(ops), ops)
    twins: list[Value]
    if op == "Add":
        w = weight(b, x.shape[-1:], x.dtype, "Add")
        w2 = w if b.rng.random() < 0.7 else b.const(w.const, "Add", "initializer")
        twins = [b.op("Add", [x, v], x.dtype, x.shape) for v in (w, w2)]
    elif op == "Transpose":
        perm = list(range(x.rank))[::-1]
        out = tuple(x.shape[p] for p in perm)
        twins = [b.op("Transpose", [x], x.dtype, out, perm=perm) for _ in range(2)]
        twins = [b.op("Transpose", [t], x.dtype, x.shape, perm=perm) for t in twins]
    elif op == "Softmax":
        axes = [-1, -1] if b.rng.random() < 0.7 or x.rank < 2 else [-1, 0]
        twins = [b.op("Softmax", [x], x.dtype, x.shape, axis=a if b.opset >= 11 else
                      a % x.rank) for a in axes]
    elif op == "Split" and x.shape[-1] >= 2:
        k = x.rank - 1
        sizes = shape_ops.split_sizes(b, x.shape[k])
        twins = [shape_ops.split(b, x, k, sizes)[-1] for _ in range(2)]
    elif op == "Cast":
        to = [FLOAT16, FLOAT16] if b.rng.random() < 0.8 else [FLOAT16, INT32]
        twins = [b.op("Cast", [b.op("Cast", [x], t, x.shape, to=t)], x.dtype, x.shape,
                      to=x.dtype) for t in to]
    elif op == "ReduceMax":
        axes = [x.rank - 1]
        twins = [reduce(b, "ReduceMax", x, axes=axes, keepdims=1) for _ in range(2)]
    else:
        twins = [b.op(op if op != "Split" else "Relu", [x], x.dtype, x.shape)
                 for _ in range(2)]
    tap(b, twins[0], 0.2)
    return binary(b, "Add", twins[0], twins[1], commute=False)


_AF = frozenset({FLOAT, FLOAT16, INT64, INT32})

MOTIFS = (
    ort_motif("ort-identity", ("EliminateIdentity",), _identity, dtypes=frozenset(ALL),
              ranks=(0, 4),
              anchors=("Identity",)),
    ort_motif("ort-dropout", ("EliminateDropout",), _dropout, dtypes=FLOAT_INPUT,
              anchors=("Dropout",)),
    ort_motif("ort-cast", ("CastElimination", "PreShapeNodeElimination"), _cast,
              dtypes=frozenset(ALL), ranks=(0, 4),
              anchors=("Cast", "Shape")),
    ort_motif("ort-full-slice", ("EliminateSlice",), _full_slice, dtypes=frozenset(ALL),
              anchors=("Slice",)),
    ort_motif("ort-full-slice-attrs", ("EliminateSlice",), _full_slice, dtypes=frozenset(ALL),
              until=9,
              anchors=("Slice",)),
    ort_motif("ort-unsqueeze-init", ("UnsqueezeElimination",), _unsqueeze_init,
              dtypes=frozenset(NUMERIC),
              anchors=("Unsqueeze",)),
    ort_motif("ort-expand", ("ExpandElimination",), _expand, dtypes=frozenset(ALL), since=8,
              anchors=("Expand",)),
    ort_motif("ort-noop", ("NoopElimination",), _noop, dtypes=_AF, ranks=(0, 4),
              anchors=("Add", "Sub", "Mul", "Div")),
    ort_motif("ort-div-mul", ("DivMulFusion",), _div_mul, ranks=(1, 4),
              anchors=("Div", "Mul")),
    ort_motif("ort-relu-clip", ("FuseReluClip",), _relu_clip, dtypes=FLOAT_INPUT,
              anchors=("Relu", "Clip")),
    ort_motif("ort-not-where", ("NotWhereFusion",), _not_where, dtypes=FLOAT_INPUT, since=9,
              anchors=("Not", "Where")),
    ort_motif("ort-pad-into", ("Pad_Fusion",), _pad_into, ranks=(3, 4),
              anchors=("Pad", "Conv", "MaxPool", "AveragePool")),
    ort_motif("ort-folded", ("ConstantFolding",), _folded, dtypes=frozenset(NUMERIC),
              ranks=(0, 4),
              anchors=("Cast", "ConstantOfShape")),
    ort_motif("ort-shared-constants", ("ConstantSharing",), _shared_constants,
              dtypes=frozenset({FLOAT, FLOAT16}), ranks=(0, 4),
              anchors=("Add", "Mul", "Max")),
    ort_motif("ort-cse", ("CommonSubexpressionElimination",), _cse, dtypes=FLOAT_INPUT,
              anchors=("Softmax", "Transpose", "Add")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 90
