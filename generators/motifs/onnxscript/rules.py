"""Motifs for the rewrite rules of onnxscript's optimizer and rewriter
(``onnxscript.rewriter.rules.common``) that the other families do not build, named by the
rules' own names (the onnxscript target hints them; where another family builds a rule's
pattern, the target names that family's pass instead: ``fuzzer/targets/onnxscript/rules.py``,
``DONORS``).

Each motif has near misses the rules must leave alone or handle: Min/Max chains whose
bounds are not scalars or would make an empty clip range, Clip chains with disjoint ranges
and Clip in its attribute form (opsets 7-10), a Relu after a Clip whose upper bound is
negative, Cast chains through a narrower type, ConstantOfShape values that do not survive a
Cast, two Slices that split an odd last dim, Slices that keep or drop the last element,
Reshape chains with 0 and -1, Reshapes whose shape is computed, Flatten at every axis,
ScatterND over every row, Gemm and ConvTranspose followed by BatchNormalization, zero biases,
unit operands that broadcast, and (rule set ``common``) HardSwish, MatMul + Add, Expand
before a binary op and Conv with an affine Mul and Add.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx import TensorProto

from generators.builder import GraphBuilder, tensor_proto
from generators.motifs.helpers import clip, const, ints, near, ort_motif, slice_op, tap, weight
from generators.motifs.onnxscript.checks import (
    BOOL_OUT,
    constant_operand,
    expand_to_symbolic,
    operand_of,
)
from generators.motifs.onnxscript.fold import repeat, symbolic_input
from generators.ops import nn, shape_ops
from generators.ops.shape_ops import INT64_MAX
from generators.schema.levels import NONDEFAULT
from generators.values import BOOL, FLOAT, FLOAT16, INT32, INT64, NP_DTYPE, Value, broadcast

BFLOAT16 = TensorProto.BFLOAT16


def _bound(b: GraphBuilder, x: Value, value: float) -> Value:
    """A Min/Max operand: a scalar mostly, a one-element tensor of rank 1 or (near miss)
    of a rank above ``x``'s, or a tensor over the last dim."""
    r = b.rng.random()
    shape: tuple[int, ...] = () if r < 0.55 else (1,) if r < 0.7 else \
        (1,) * (x.rank + 1) if r < 0.85 else x.shape[-1:]
    return b.const(np.full(shape, value, NP_DTYPE[x.dtype]), "Const")


def _min_max(b: GraphBuilder, x: Value) -> Value:
    """Min(Min), Max(Max), Min(Max) or Max(Min) of ``x`` and constant bounds (the bounds
    of an inner Max above those of the outer Min at times: an empty range)."""
    inner, outer = b.rng.choice([("Min", "Min"), ("Max", "Max"), ("Max", "Min"),
                                 ("Min", "Max")])
    lo, hi = sorted(b.rng.sample([-1.0, -0.5, 0.0, 0.5, 1.0], 2))
    if b.rng.random() < 0.2:
        lo, hi = hi, lo
    first = lo if inner == "Max" else hi
    second = hi if outer == "Min" else lo
    c1 = [_bound(b, x, first) for _ in range(b.rng.choice([1, 1, 2]))]
    y = b.op(inner, [x, *c1], x.dtype, _shape_of(x, c1))
    c2 = [_bound(b, x, second)]
    return b.op(outer, [y, *c2], x.dtype, _shape_of(y, c2))


def _shape_of(x: Value, consts: list[Value]) -> tuple[int, ...]:
    shape = x.shape
    for c in consts:
        shape = broadcast(shape, c.shape)
    return shape


def _relu_clip(b: GraphBuilder, x: Value) -> Value:
    """Relu(Relu), Clip(Clip), Clip(Relu) or Relu(Clip) in the opset's Clip form; clip
    ranges overlapping, disjoint, or with a negative upper bound; at times the inner Clip
    read elsewhere too (a graph output or a second consumer: the pair cannot be replaced)."""
    form = b.rng.choice(["relu-relu", "clip-clip", "clip-relu", "relu-clip"])
    ranges = [(0.0, 6.0), (-1.0, 1.0), (None, 0.5), (-0.5, None), (0.5, 2.0), (-2.0, -0.5)]
    if form == "relu-relu":
        return b.op("Relu", [b.op("Relu", [x], x.dtype, x.shape)], x.dtype, x.shape)
    if form == "clip-relu":
        return clip(b, b.op("Relu", [x], x.dtype, x.shape), *b.rng.choice(ranges))
    y = clip(b, x, *b.rng.choice(ranges))
    tap(b, y, 0.2)  # the inner node's output read elsewhere: not removable
    if form == "relu-clip":
        return b.op("Relu", [y], x.dtype, x.shape)
    return clip(b, y, *b.rng.choice(ranges))


def _cast_chain(b: GraphBuilder, x: Value) -> Value:
    """Cast(Cast(x, to=A), to=B): through float to float16 or bfloat16 (from opset 13; the
    pairs CastCast fuses), or through a narrower or integer type first (a pair it must
    keep)."""
    first, second = b.rng.choice([(FLOAT, FLOAT16), (FLOAT, FLOAT16), (FLOAT16, FLOAT),
                                  (INT32, FLOAT), (FLOAT, FLOAT), (FLOAT, BFLOAT16)])
    if second == BFLOAT16 and b.opset < 13:
        second = FLOAT16
    src = x if b.rng.random() < 0.6 else b.op("Cast", [x], FLOAT16, x.shape, x.props,
                                               to=FLOAT16)
    y = b.op("Cast", [src], first, x.shape, to=first)
    z = b.op("Cast", [y], second, x.shape, to=second)
    return b.op("Cast", [z], FLOAT, x.shape, to=FLOAT) if second != FLOAT else z


def _constant_of_shape_cast(b: GraphBuilder, x: Value) -> Value:
    """ConstantOfShape (with a value, or without: zeros) then Cast, added to ``x``."""
    dtype = b.rng.choice([FLOAT, FLOAT, INT64, INT32])
    value = b.rng.choice([0.0, 1.0, 2.5, -1.5, 70000.0]) if dtype == FLOAT else \
        b.rng.choice([0, 1, 3, -2])
    attrs = {"value": tensor_proto(np.asarray([value], NP_DTYPE[dtype]), "value")} \
        if b.rng.random() < 0.8 else {}
    dtype = dtype if attrs else FLOAT
    shape = b.ints(list(x.shape), "ConstantOfShape")
    c = b.op("ConstantOfShape", [shape], dtype, x.shape, **attrs)
    to = b.rng.choice([FLOAT, FLOAT16, INT32, INT64])
    cast = b.op("Cast", [c], to, x.shape, to=to)
    if to != FLOAT:
        cast = b.op("Cast", [cast], FLOAT, x.shape, to=FLOAT)
    return b.op("Add", [x, cast], FLOAT, x.shape)


def _reshape_matmul(b: GraphBuilder, x: Value) -> Value:
    """Reshape to 2-D, MatMul by a (K, N) weight, Reshape back to x's leading dims; the
    final shape is MatMul's broadcast shape (the rule's case) or a near miss. Other forms
    of the rule's shape check: a 1-D first operand (``x`` flattened), a 1-D weight, a
    weight with a batch dim of 1, a first operand with a symbolic dim (a new input), a
    final shape computed by Shape."""
    form = b.rng.choice(["plain", "plain", "vector-a", "vector-b", "batch-b", "symbolic",
                         "computed"])
    if form == "vector-a":
        k = x.size
        flat = b.op("Reshape", [x, ints(b, [-1], "Reshape")], x.dtype, (k,))
        a2 = b.op("Reshape", [flat, ints(b, [1, k], "Reshape")], x.dtype, (1, k))
        n = b.rng.randint(1, 3)
        m = b.op("MatMul", [a2, weight(b, (k, n), x.dtype, "MatMul")], x.dtype, (1, n))
        return b.op("Reshape", [m, ints(b, [n], "Reshape")], x.dtype, (n,))
    if form == "symbolic":
        x = symbolic_input(b, x.shape[-1])
    k = x.shape[-1]
    lead = x.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    flat = b.op("Reshape", [x, ints(b, [-1, k], "Reshape")], x.dtype, (rows, k))
    if form == "vector-b":
        m = b.op("MatMul", [flat, weight(b, (k,), x.dtype, "MatMul")], x.dtype, (rows,))
        return b.op("Reshape", [m, ints(b, list(lead) or [1], "Reshape")], x.dtype,
                    tuple(lead) or (1,))
    n = b.rng.randint(1, 4)
    if form == "batch-b":
        w = weight(b, (1, k, n), x.dtype, "MatMul")
        m = b.op("MatMul", [flat, w], x.dtype, (1, rows, n))
        return b.op("Reshape", [m, ints(b, [*lead, n], "Reshape")], x.dtype, (*lead, n))
    w = weight(b, (k, n), x.dtype, "MatMul")
    if b.rng.random() < 0.4:
        w = b.op("Reshape", [w, ints(b, [k, n], "Reshape")], x.dtype, (k, n))
    m = b.op("MatMul", [flat, w], x.dtype, (flat.shape[0], n))
    target = [*lead, n] if b.rng.random() < 0.8 else [rows * n]
    if form == "computed":
        like = b.op("MatMul", [x, weight(b, (k, n), x.dtype, "MatMul")], x.dtype, (*lead, n))
        shape = b.op("Shape", [like], INT64, (len(lead) + 1,), ("nonneg",))
        return b.op("Reshape", [m, shape], x.dtype, (*lead, n))
    return b.op("Reshape", [m, ints(b, target, "Reshape")], x.dtype, tuple(target))


def _reshape_chain(b: GraphBuilder, x: Value) -> Value:
    """Reshape(Reshape(x)) with 0 and -1 in either shape; allowzero from opset 14 at times;
    the second shape computed by Shape at times (MaterializeReshapeShape)."""
    spec1, mid = shape_ops.reshape_target(b, x.shape)
    y = b.op("Reshape", [x, ints(b, spec1, "Reshape")], x.dtype, mid, x.props)
    spec2, out = shape_ops.reshape_target(b, mid)
    if b.rng.random() < 0.3:
        like = b.op("Reshape", [x, ints(b, list(out), "Reshape")], x.dtype, out)
        shape = b.op("Shape", [like], INT64, (len(out),), ("nonneg",))
        return b.op("Reshape", [y, shape], x.dtype, out, x.props)
    allowzero = 1 if b.opset >= 14 and 0 not in spec2 and b.rng.random() < 0.2 else None
    return b.op("Reshape", [y, ints(b, spec2, "Reshape")], x.dtype, out, x.props,
                allowzero=allowzero)


def _slices_split(b: GraphBuilder, x: Value) -> Value:
    """Two Slices of ``x`` along the last axis, [0, h) and [h, d): h = d // 2 (the form
    SlicesSplit fuses into Split) or off by one; axes -1 or rank - 1; near misses: the
    two Slices naming the axis differently (-1 and rank - 1), the first starting at -d
    (the same element as 0), a Slice over two axes."""
    d = x.shape[-1]
    h = d // 2 if b.rng.random() < 0.8 else max(1, d // 2 + b.rng.choice([-1, 1]))
    h = min(max(h, 1), d - 1)
    axis = b.rng.choice([-1, x.rank - 1])
    other = axis
    if x.rank > 1 and b.rng.random() < 0.15:
        other = x.rank - 1 if axis == -1 else -1
    start = -d if b.opset >= 10 and b.rng.random() < 0.1 else 0
    first = slice_op(b, x, [start], [h], [axis])
    if x.rank > 1 and b.rng.random() < 0.1:
        second = slice_op(b, x, [0, h], [x.shape[0], d], [0, other])
    else:
        second = slice_op(b, x, [h], [d if b.rng.random() < 0.8 else INT64_MAX], [other])
    return b.op("Concat", [second, first], x.dtype,
                x.shape, axis=axis) if b.rng.random() < 0.6 else second


def _collapse_slice(b: GraphBuilder, x: Value) -> Value:
    """Slice with starts, ends, axes and steps: the whole of one axis (end = dim, INT64_MAX
    or beyond), or one element short (a slice that must stay); near misses of the rules'
    checks: two axes at once, a step of 2, a start of 1."""
    a = b.rng.randrange(x.rank)
    d = x.shape[a]
    form = b.rng.random()
    if form < 0.15 and x.rank > 1:
        other = (a + 1) % x.rank
        return slice_op(b, x, [0, 0], [d, INT64_MAX], [a, other], [1, 1])
    if form < 0.3:
        return slice_op(b, x, [0], [INT64_MAX], [a], [2])
    if form < 0.4 and d > 1:
        return slice_op(b, x, [1], [INT64_MAX], [a], [1])
    end = b.rng.choice([d, INT64_MAX, d + 3, d - 1 if d > 1 else d])
    start = b.rng.choice([0, 0, 0, -d])
    return slice_op(b, x, [start], [end], [a], [1])


def _squeeze_reshape(b: GraphBuilder, x: Value) -> Value:
    """Reshape(Squeeze(v), [-1]) for a 1-D ``v`` (x flattened, or a one-element slice)."""
    flat = b.op("Reshape", [x, ints(b, [-1], "Reshape")], x.dtype, (x.size,), x.props)
    if b.rng.random() < 0.4:
        flat = slice_op(b, flat, [0], [1], [0])
    squeezed_shape = tuple(d for d in flat.shape if d != 1)
    sq = b.op("Squeeze", [flat], x.dtype, squeezed_shape, x.props)
    return b.op("Reshape", [sq, ints(b, [-1], "Reshape")], x.dtype, (flat.size,), x.props)


def _flatten(b: GraphBuilder, x: Value) -> Value:
    """Flatten at any axis from 0 to rank (negative from opset 11)."""
    a = b.rng.randint(0, x.rank)
    k = a
    if b.opset >= 11 and 0 < a < x.rank and b.rng.random() < 0.3:
        a -= x.rank
    out = (int(np.prod(x.shape[:k])), int(np.prod(x.shape[k:])))
    return b.op("Flatten", [x], x.dtype, out, x.props, axis=a)


def _scatter_all(b: GraphBuilder, x: Value) -> Value:
    """ScatterND whose indices cover every row of the data ([[0], [1], ..., [n-1]], a
    constant, or Range over the dim computed by Shape and Gather), or all but one row."""
    n = x.shape[0]
    updates = weight(b, x.shape, x.dtype, "ScatterND")
    if b.rng.random() < 0.5:
        rows = list(range(n)) if b.rng.random() < 0.8 or n < 2 else list(range(n - 1))
        idx = b.const(np.asarray(rows, np.int64).reshape(-1, 1), "ScatterND")
        if len(rows) < n:
            updates = weight(b, (n - 1, *x.shape[1:]), x.dtype, "ScatterND")
        return b.op("ScatterND", [x, idx, updates], x.dtype, x.shape)
    shape = b.op("Shape", [x], INT64, (x.rank,), ("nonneg",))
    dim = b.op("Gather", [shape, b.const(np.asarray(0, np.int64), "Gather")], INT64, ())
    rng = b.op("Range", [b.const(np.asarray(0, np.int64), "Range"), dim,
                         b.const(np.asarray(1, np.int64), "Range")], INT64, (n,))
    idx = shape_ops.unsqueeze(b, rng, [-1])
    return b.op("ScatterND", [x, idx, updates], x.dtype, x.shape)


def _gemm_bn(b: GraphBuilder, x: Value) -> Value:
    """Gemm (with or without bias, transB at times) then BatchNormalization over N."""
    y = nn.gemm(b, x, trans_a=0)
    return nn.batch_norm(b, y)


def _conv_transpose_bn(b: GraphBuilder, x: Value) -> Value | None:
    """ConvTranspose (groups, strides, a bias at times) then BatchNormalization."""
    c = x.shape[1]
    group = b.rng.choice([g for g in (1, 2, c) if c % g == 0])
    m = b.rng.randint(1, 2) * group
    k = b.rng.randint(1, 3)
    s = b.rng.choice([1, 2])
    spatial = x.shape[2:]
    w = b.random_weight((c, m // group, *(k,) * len(spatial)), FLOAT, "ConvTranspose")
    inputs = [x, w]
    if b.rng.random() < 0.5:
        inputs.append(b.random_weight((m,), FLOAT, "ConvTranspose"))
    out = (x.shape[0], m, *((d - 1) * s + k for d in spatial))
    y = b.op("ConvTranspose", inputs, FLOAT, out, group=group if group > 1 else None,
             strides=[s] * len(spatial), kernel_shape=[k] * len(spatial))
    return nn.batch_norm(b, y)


def _zero_bias(b: GraphBuilder, x: Value) -> Value:
    """Conv, ConvTranspose (4-D ``x``) or Gemm (2-D) with an all-zero bias (or almost). A
    draw aimed at another op than ``x``'s rank gives flattens ``x`` for a Gemm or gives it
    unit spatial dims for a convolution; a schema row that asks for Gemm's ``transA``
    gets ``x`` transposed before it."""
    value = 0.0 if b.rng.random() < 0.85 else 1e-3
    drawn = "Gemm" if x.rank == 2 else "ConvTranspose" if b.rng.random() < 0.5 else "Conv"
    form = b.variant(drawn, ("Gemm", "Conv", "ConvTranspose"))
    if form == "Gemm":
        if x.rank != 2:
            x = b.op("Flatten", [x], x.dtype, (x.shape[0], int(np.prod(x.shape[1:]))), axis=1)
        n = b.rng.randint(1, 4)
        w = weight(b, (x.shape[1], n), FLOAT, "Gemm")
        c = b.const(np.full((n,), value, np.float32), "Gemm")
        if b.planned("Gemm", "attr:transA") == NONDEFAULT:
            a = b.op("Transpose", [x], x.dtype, x.shape[::-1], perm=[1, 0])
            return b.op("Gemm", [a, w, c], FLOAT, (x.shape[0], n), transA=1)
        return b.op("Gemm", [x, w, c], FLOAT, (x.shape[0], n))
    if x.rank == 2:
        x = shape_ops.unsqueeze(b, x, [2, 3])
    m = b.rng.randint(1, 3)
    bias = b.const(np.full((m,), value, np.float32), "Conv")
    ones = (1,) * (x.rank - 2)
    if form == "ConvTranspose":
        w = weight(b, (x.shape[1], m, *ones), FLOAT, "ConvTranspose")
        return b.op("ConvTranspose", [x, w, bias], FLOAT, (x.shape[0], m, *x.shape[2:]))
    w = weight(b, (m, x.shape[1], *ones), FLOAT, "Conv")
    return b.op("Conv", [x, w, bias], FLOAT, (x.shape[0], m, *x.shape[2:]))


def _unit_operand(b: GraphBuilder, x: Value) -> Value:
    """x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1 with the unit a scalar, a one-element tensor
    or a tensor that broadcasts ``x`` to a higher rank."""
    op, unit = b.rng.choice([("Mul", 1.0), ("Add", 0.0), ("Sub", 0.0), ("Div", 1.0)])
    r = b.rng.random()
    shape: tuple[int, ...] = () if r < 0.5 else (1,) if r < 0.7 else (2, *x.shape) \
        if r < 0.85 else (1,) * (x.rank + 1)
    c = const(b, unit, x.dtype, shape, op)
    args = [c, x] if op in ("Mul", "Add") and b.rng.random() < 0.5 else [x, c]
    return b.op(op, args, x.dtype, broadcast(x.shape, shape), x.props)


def _hard_swish(b: GraphBuilder, x: Value) -> Value:
    """x * HardSigmoid(x, alpha=1/6, beta=0.5), x * Clip(x + 3, 0, 6) / 6 (each constant
    just off at times: a near miss), or HardSigmoid alone (rules.common's HardSwish /
    HardSigmoid fusions)."""
    form = b.rng.choice(["hardsigmoid", "clip", "sigmoid-only"])
    # a draw aimed at the Clip makes the Clip form; at HardSigmoid or Mul, the first
    form = {"Clip": "clip", "HardSigmoid": "hardsigmoid", "Mul": "hardsigmoid"}.get(
        b.variant("", ["Clip", "HardSigmoid", "Mul"]), form)
    if form == "clip":  # (Clip's bounds are attributes before opset 11)
        shifted = b.op("Add", [x, const(b, near(b, 3.0), x.dtype, (), "Add")], x.dtype,
                       x.shape)
        clipped = clip(b, shifted, near(b, 0.0), near(b, 6.0))
        prod = b.op("Mul", [x, clipped], x.dtype, x.shape)
        return b.op("Div", [prod, const(b, near(b, 6.0), x.dtype, (), "Div")], x.dtype,
                    x.shape)
    hs = b.op("HardSigmoid", [x], x.dtype, x.shape, alpha=1 / 6, beta=0.5)
    return hs if form == "sigmoid-only" else b.op("Mul", [x, hs], x.dtype, x.shape)


def _matmul_add(b: GraphBuilder, x: Value) -> Value:
    """MatMul (of x or Transpose(x)) by a weight (or a transposed one), then Add of a bias;
    or Gemm with a bias (GemmToMatMulAdd's pattern)."""
    if b.rng.random() < 0.25:
        return nn.gemm(b, x, trans_a=0, bias=True)
    a = x
    if b.rng.random() < 0.3:
        a = b.op("Transpose", [b.op("Transpose", [x], x.dtype, x.shape[::-1], perm=[1, 0])],
                 x.dtype, x.shape, perm=[1, 0])
    n = b.rng.randint(1, 4)
    w = weight(b, (x.shape[1], n), FLOAT, "MatMul")
    if b.rng.random() < 0.3:
        w = b.op("Transpose", [weight(b, (n, x.shape[1]), FLOAT, "MatMul")], FLOAT,
                 (x.shape[1], n), perm=[1, 0])
    m = b.op("MatMul", [a, w], FLOAT, (x.shape[0], n))
    bias = weight(b, b.rng.choice([(n,), (1, n), (x.shape[0], n)]), FLOAT, "Add")
    return b.op("Add", [m, bias], FLOAT, (x.shape[0], n))


#: binary ops onnxscript's Expand rules cover -> (operand type, first opset): the operand
#: type the op needs (float, bool, int32 bitwise, int64 Mod); BitShift, which needs unsigned
#: integers, has its own motif (``os-expand-bitshift`` in :mod:`.checks`).
_EXPAND_OPS: dict[str, tuple[int, int]] = {
    "Add": (FLOAT, 8), "Sub": (FLOAT, 8), "Mul": (FLOAT, 8), "Div": (FLOAT, 8),
    "Pow": (FLOAT, 8), "PRelu": (FLOAT, 8), "Equal": (INT64, 11), "Greater": (FLOAT, 9),
    "Less": (FLOAT, 9), "GreaterOrEqual": (FLOAT, 12), "LessOrEqual": (FLOAT, 12),
    "And": (BOOL, 8), "Or": (BOOL, 8), "Xor": (BOOL, 8), "Mod": (INT64, 10),
    "BitwiseAnd": (INT32, 18), "BitwiseOr": (INT32, 18),
    "BitwiseXor": (INT32, 18),
}
def _expand_binary(op: str) -> Callable[[GraphBuilder, Value], Value | None]:
    """An emitter of Expand(v, shape) then ``op`` with a constant of the expanded shape, of
    a smaller one, or (PRelu's slope) of a larger one than ``v``, the Expand on either side;
    ``v`` is ``x`` in the operand type ``op`` needs (:func:`.checks.operand_of`). At times
    an Expand to a symbolic or hidden shape instead (:func:`.checks.expand_to_symbolic`)."""
    dtype, since = _EXPAND_OPS[op]

    def emit(b: GraphBuilder, x: Value) -> Value | None:
        if b.opset < since:
            return None
        if b.rng.random() < 0.35:
            return expand_to_symbolic(b, x, op, dtype)
        second = b.rng.random() < 0.5  # the Expand as the op's second operand
        v = constant_operand(b, x.shape, dtype, op) if second and op == "Div" else \
            operand_of(b, x, op, dtype)  # a Div's divisor from 1
        target = (2, *x.shape) if b.rng.random() < 0.5 and not (second and op == "PRelu") \
            else x.shape
        e = b.op("Expand", [v, ints(b, list(target), "Expand")], dtype, target)
        other_shape = target if b.rng.random() < 0.5 or (second and op == "PRelu") \
            else x.shape[-1:]
        other = constant_operand(b, other_shape, dtype,
                                 "Div" if op == "Pow" and second else op)
        args = [other, e] if second else [e, other]
        out = BOOL if op in BOOL_OUT else dtype
        return b.op(op, args, out, broadcast(target, other_shape))
    return emit


def _conv_affine(b: GraphBuilder, x: Value) -> Value:
    """Conv with a bias followed by Mul and Add of scalars (ConvAffineFusion), or Mul and
    Add of scalars followed by a Conv with a bias and explicit ``pads=[0, 0, 0, 0]``
    (AffineConvFusion, whose pattern names both); near misses: no bias, a per-channel
    scale, pads left out, the Mul's operands swapped."""
    m = b.rng.randint(1, 3)
    c = x.shape[1]
    k = b.rng.choice([1, 1, min(3, *x.shape[2:])])
    scale = const(b, b.rng.choice([0.5, 2.0]), FLOAT, None, "Mul")
    shift = const(b, b.rng.choice([0.1, -1.0]), FLOAT, None, "Add")
    w = weight(b, (m, c, k, k), FLOAT, "Conv")
    inputs = [x, w, weight(b, (m,), FLOAT, "Conv")]
    if b.rng.random() < 0.1:
        inputs.pop()
    out = (x.shape[0], m, x.shape[2] - k + 1, x.shape[3] - k + 1)
    if b.rng.random() < 0.5:
        if b.rng.random() < 0.15:
            scale = weight(b, (m, 1, 1), FLOAT, "Mul")
        y = b.op("Conv", inputs, FLOAT, out)
        prod = b.op("Mul", [y, scale] if b.rng.random() < 0.85 else [scale, y], FLOAT, out)
        return b.op("Add", [prod, shift], FLOAT, out)
    if b.rng.random() < 0.15:
        scale = weight(b, (c, 1, 1), FLOAT, "Mul")
    prod = b.op("Mul", [x, scale] if b.rng.random() < 0.85 else [scale, x], FLOAT, x.shape)
    y = b.op("Add", [prod, shift], FLOAT, x.shape)
    pads = [0, 0, 0, 0] if b.rng.random() < 0.85 else None
    return b.op("Conv", [y, *inputs[1:]], FLOAT, out, pads=pads)


MOTIFS = (
    ort_motif("os-min-max", ("FuseSuccessiveMin", "FuseSuccessiveMax", "FuseMinMaxToClip",
                             "FuseMaxMinToClip"), repeat(_min_max, 2), since=8,
              anchors=("Min", "Max")),
    ort_motif("os-relu-clip", ("FuseSuccessiveRelu", "FuseSuccessiveClip",
                               "FuseSuccessiveClipRelu", "FuseSuccessiveReluClip"),
              repeat(_relu_clip, 3),
              anchors=("Relu", "Clip")),
    ort_motif("os-cast-chain", ("CastCast", "CastIdentity"), repeat(_cast_chain, 2),
              anchors=("Cast",)),
    ort_motif("os-constant-of-shape-cast", ("cast_constant_of_shape_rule",
                                            "cast_constant_of_shape_without_value_rule"),
              repeat(_constant_of_shape_cast, 2), since=9,
              anchors=("ConstantOfShape", "Cast")),
    ort_motif("os-reshape-matmul", ("one_reshape_matmul_reshape_rule",
                                    "two_reshapes_matmul_reshape_rule"),
              repeat(_reshape_matmul, 4),
              ranks=(2, 4),
              anchors=("Reshape", "MatMul")),
    ort_motif("os-reshape-chain", ("ReshapeReshape", "MaterializeReshapeShape"),
              repeat(_reshape_chain, 2),
              anchors=("Reshape",)),
    ort_motif("os-slices-split", ("SlicesSplit",), repeat(_slices_split, 2), since=10,
              anchors=("Slice",)),
    ort_motif("os-collapse-slice", ("collapse_slice_rule", "collapse_slice2_rule"),
              repeat(_collapse_slice, 3), since=10,
              anchors=("Slice",)),
    ort_motif("os-squeeze-reshape", ("SqueezeReshape1d",), repeat(_squeeze_reshape, 2),
              anchors=("Squeeze", "Reshape")),
    ort_motif("os-flatten", ("Flatten2Reshape",), repeat(_flatten, 2),
              anchors=("Flatten",)),
    ort_motif("os-scatter-all", ("ScatterAllStatic", "ScatterAllDynamic"),
              repeat(_scatter_all, 2),
              since=11,
              anchors=("ScatterND",)),
    ort_motif("os-gemm-bn", ("FuseBatchNormIntoGemm",), _gemm_bn, ranks=(2, 2),
              anchors=("Gemm", "BatchNormalization")),
    ort_motif("os-conv-transpose-bn", ("FuseBatchNormIntoConvTranspose",), _conv_transpose_bn,
              ranks=(4, 4),
              anchors=("ConvTranspose", "BatchNormalization")),
    ort_motif("os-zero-bias", ("RemoveOptionalBiasFromConv",
                               "RemoveOptionalBiasFromConvTranspose",
                               "RemoveOptionalBiasFromGemm"), repeat(_zero_bias, 2), ranks=(2, 4),
              anchors=("Conv", "ConvTranspose", "Gemm")),
    ort_motif("os-unit-operand", ("mul_by_1_rule", "add_0_rule", "sub_0_rule",
                                  "div_by_1_rule"), repeat(_unit_operand, 4),
              anchors=("Mul", "Add", "Sub", "Div")),
    ort_motif("os-hard-swish", ("HardSwishFusion", "HardSigmoidFusion",
                                "HardSwishFusionFromHardSigmoid"), repeat(_hard_swish, 3),
              anchors=("HardSigmoid", "Clip", "Mul")),
    ort_motif("os-matmul-add", ("MatMulAddToGemm", "TransAMatMulAddToGemm",
                                "TransBMatMulAddToGemm", "TransABMatMulAddToGemm",
                                "gemm_to_matmul_add_rule"), repeat(_matmul_add, 2), ranks=(2, 2),
              anchors=("MatMul", "Add", "Gemm")),
    *(ort_motif(f"os-expand-{op.lower()}", (f"ExpandFirst_{op}", f"ExpandSecond_{op}"),
                repeat(_expand_binary(op), 2), since=_EXPAND_OPS[op][1], anchors=("Expand", op))
      for op in _EXPAND_OPS),
    ort_motif("os-conv-affine", ("ConvAffineFusion", "AffineConvFusion"),
              repeat(_conv_affine, 2),
              ranks=(4, 4),
              anchors=("Conv", "Mul", "Add")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 140
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
