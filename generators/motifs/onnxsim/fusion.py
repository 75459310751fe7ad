"""Motifs for onnx-simplifier's own arithmetic fusions (``onnxsim/passes/``:
``fuse_consecutive_mul``, ``fuse_consecutive_reduce``, ``eliminate_nop_reduce``,
``fuse_lp_normalization``, ``fuse_gelu`` at opset 20, ``fuse_layer_norm`` at opset 17,
``fuse_attention``), with onnxslim's ``FusionReduce`` where a ReduceSum is involved.

Varied where the rewrites decide: constants that broadcast the other operand to a larger
shape or rank, in either operand slot, float, float16, double and integer types (the Mul
fusion folds only float and double), a first node with a second consumer; reductions of
every Reduce* op (ReduceLogSum and ReduceSumSquare do not compose), keepdims on either side,
negative or empty axes with ``noop_with_empty_axes``, a Reshape or Unsqueeze between two
reductions that does or does not restore the kept dims, axes of size 1 (a no-op only for
Sum, Mean, Max, Min and Prod), both attribute and input forms of ``axes``; the Lp norm with
``keepdims=1`` or two axes, the Div's operands swapped, an epsilon between the norm and the
Div (which must not fuse).
"""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.helpers import DOUBLE, const, ints, planned_integer, swap, tap, weight
from generators.motifs.shaped import shaped_motif
from generators.ops import shape_ops
from generators.values import FLOAT, FLOAT16, INT32, INT64, Value, broadcast

#: Reduce op -> the opset where ``axes`` became an input.
AXES_INPUT = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18,
              "ReduceProd": 18, "ReduceL1": 18, "ReduceL2": 18, "ReduceLogSumExp": 18,
              "ReduceLogSum": 18, "ReduceSumSquare": 18}
#: Reduce ops whose input must be positive (a log of the sum).
_POSITIVE = frozenset({"ReduceLogSum"})


def _mul_mul(b: GraphBuilder, x: Value) -> Value:
    """``Mul(Mul(x, C1), C2)`` with constants of the shapes exporters write and of shapes that
    broadcast ``x`` up."""
    dtype = b.rng.choice([x.dtype, x.dtype, FLOAT, DOUBLE, INT32])
    if dtype != x.dtype:
        x = b.op("Cast", [x], dtype, x.shape, x.props, to=dtype)

    def scale(v: Value) -> Value:
        shape = b.rng.choice([(), (1,), v.shape[-1:], v.shape, (2, *v.shape),
                              (v.shape[0],) + (1,) * (v.rank - 1)])
        c = weight(b, shape, dtype, "Mul", positive=True)
        return b.op("Mul", swap(b, v, c), dtype, broadcast(v.shape, shape))

    return scale(tap(b, scale(x), 0.15))


def reduce_op(b: GraphBuilder, op: str, x: Value, axes: list[int], keepdims: int | None,
              noop: int | None = None) -> Value:
    """``op`` of ``x`` over ``axes`` (may be negative, or empty with ``noop``) in the
    opset's form; ``keepdims`` None is the default (1)."""
    norm = {a % x.rank for a in axes} if axes or not noop else set()
    if not axes and not noop:
        norm = set(range(x.rank))
    keep = 1 if keepdims is None else keepdims
    out = tuple(1 if i in norm else d for i, d in enumerate(x.shape) if keep or i not in norm)
    attrs: dict = {"keepdims": keepdims}
    inputs = [x.name]
    if b.opset >= AXES_INPUT[op]:
        if axes or noop:
            inputs.append(ints(b, axes, op).name)
        attrs["noop_with_empty_axes"] = noop
    elif axes:
        attrs["axes"] = axes
    props = ("nonneg",) if op in ("ReduceL1", "ReduceL2", "ReduceSumSquare") else ()
    return b.op(op, inputs, x.dtype, out, props, **attrs)


def _positive(b: GraphBuilder, x: Value) -> Value:
    return b.op("Add", [b.op("Abs", [x], x.dtype, x.shape), const(b, 1.0, x.dtype)],
                x.dtype, x.shape, ("nonneg", "ge1"))


def _reduce_reduce(b: GraphBuilder, x: Value) -> Value:
    """Two reductions over disjoint axes, the same op mostly, with keepdims on either side and
    at times a Reshape or Unsqueeze between them that restores the reduced dims."""
    ops = list(AXES_INPUT)
    op1 = b.variant(b.rng.choice(ops), ops)
    op2 = op1 if b.rng.random() < 0.75 else b.rng.choice(ops)
    if {op1, op2} & _POSITIVE:
        x = _positive(b, x)
    first = sorted(b.rng.sample(range(x.rank - 1), b.rng.randint(1, max(1, x.rank // 2))))
    spell = [a - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in first]
    ka = b.rng.choice([0, 1, None])
    y = tap(b, reduce_op(b, op1, x, spell, ka), 0.1)
    if ka == 0 and b.rng.random() < 0.5:
        if b.rng.random() < 0.5:
            y = shape_ops.unsqueeze(b, y, first)
        else:
            kept = tuple(1 if i in first else d for i, d in enumerate(x.shape))
            y = b.op("Reshape", [y, ints(b, list(kept), "Reshape")], y.dtype, kept)
    free = [i for i in range(y.rank) if y.shape[i] != 1 or i not in first]
    second = sorted(b.rng.sample(free, 1)) if free else [0]
    if b.rng.random() < 0.1:
        second = [first[0]] if first[0] < y.rank else second
    spell2 = [a - y.rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in second]
    return reduce_op(b, op2, y, spell2, b.rng.choice([0, 1, None]))


def _nop_reduce(b: GraphBuilder, x: Value) -> Value:
    """A reduction over size-1 axes (inserted by Unsqueeze), or over empty axes with
    ``noop_with_empty_axes=1`` (opset 13 / 18 forms)."""
    op = b.variant(b.rng.choice(list(AXES_INPUT)), AXES_INPUT)
    if op in _POSITIVE:
        x = _positive(b, x)
    if b.opset >= AXES_INPUT[op] and b.rng.random() < 0.25:
        return reduce_op(b, op, x, [], b.rng.choice([0, 1]), noop=1)
    a = b.rng.randrange(x.rank + 1)
    y = shape_ops.unsqueeze(b, x, [a])
    spell = a - y.rank if b.opset >= 11 and b.rng.random() < 0.4 else a
    return reduce_op(b, op, y, [spell], b.rng.choice([0, 1, None]))


def _lp_norm(b: GraphBuilder, x: Value) -> Value:
    """``x / ReduceL2(x)`` or ReduceL1 over one axis with keepdims=1; at times two axes, the
    Div's operands swapped, or a Max with an epsilon between the norm and the Div. A schema
    row that gives an anchor an integer type gets 1 added to the norm (0 for a zero slice)."""
    op = b.variant(b.rng.choice(["ReduceL2", "ReduceL2", "ReduceL1"]), ("ReduceL2", "ReduceL1"))
    axes = [b.rng.randrange(x.rank)]
    if x.rank >= 2 and b.rng.random() < 0.15:
        axes = sorted(b.rng.sample(range(x.rank), 2))
    spell = [a - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in axes]
    n = tap(b, reduce_op(b, op, x, spell, b.rng.choice([1, 1, None])), 0.1)
    if b.opset >= 8 and b.rng.random() < 0.15:  # Max broadcasts from opset 8
        n = b.op("Max", [n, const(b, 1e-12, n.dtype)], n.dtype, n.shape, ("nonneg",))
    n = b.op("Add", [n, const(b, 1e-3, n.dtype)], n.dtype, n.shape, ("nonneg",)) \
        if b.rng.random() < 0.1 else n
    if planned_integer(b, "ReduceL2", "ReduceL1", "Div"):
        # an integer row: the norm of an all-zero slice is 0, and 1 keeps it a divisor
        n = b.op("Add", [n, const(b, 1.0, n.dtype)], n.dtype, n.shape, ("nonneg",))
    if b.rng.random() < 0.1:
        return b.op("Div", [n, b.op("Add", [b.op("Abs", [x], x.dtype, x.shape),
                                            const(b, 1.0, x.dtype)], x.dtype, x.shape)],
                    x.dtype, x.shape)
    return b.op("Div", [x, n], x.dtype, x.shape, ("bounded",))


def _head_split(b: GraphBuilder, x: Value, heads: int, size: int, perm: list[int]) -> Value:
    """Project (B, S, E) ``x`` to heads * size, Reshape to (B, S, heads, size), Transpose."""
    bsz, seq = x.shape[0], x.shape[1]
    w = weight(b, (x.shape[-1], heads * size), x.dtype, "MatMul")
    y = b.op("MatMul", [x, w], x.dtype, (bsz, seq, heads * size))
    if b.rng.random() < 0.7:
        y = b.op("Add", swap(b, y, weight(b, (heads * size,), x.dtype, "Add")), x.dtype,
                 y.shape)
    split = (bsz, seq, heads, size)
    spec = [0, 0, heads, size] if b.rng.random() < 0.5 else list(split)
    r = b.op("Reshape", [y, ints(b, spec, "Reshape")], x.dtype, split)
    return b.op("Transpose", [r], x.dtype, tuple(split[p] for p in perm), perm=perm)


def _self_attention(b: GraphBuilder, x: Value) -> Value:
    """Multi-head self-attention without mask as eager implementations write it (Q, K, V
    projections, head split with K transposed to (0, 2, 3, 1), scores scaled by a Div or a
    Mul, Softmax over the last axis, context transposed back and merged, output
    projection); at times the scale is not 1/sqrt(head size), V has another head size, or
    the Softmax runs over another axis."""
    if x.rank == 2:
        x = shape_ops.unsqueeze(b, x, [0])
    heads, size = b.rng.randint(1, 3), b.rng.choice([2, 4, 8])
    v_size = size if b.rng.random() < 0.8 else b.rng.choice([1, 2, 3])
    q = _head_split(b, x, heads, size, [0, 2, 1, 3])
    k = _head_split(b, x, heads, size, [0, 2, 3, 1])
    v = _head_split(b, x, heads, v_size, [0, 2, 1, 3])
    bsz, seq = x.shape[0], x.shape[1]
    scores = b.op("MatMul", [q, k], x.dtype, (bsz, heads, seq, seq))
    root = size ** 0.5 if b.rng.random() < 0.85 else b.rng.choice([2.0, 3.0])
    if b.rng.random() < 0.5:
        scores = b.op("Div", [scores, const(b, root, x.dtype)], x.dtype, scores.shape)
    else:
        scores = b.op("Mul", swap(b, scores, const(b, 1 / root, x.dtype)), x.dtype,
                      scores.shape)
    axis = b.rng.choice([-1, -1, 3, 2])
    probs = b.op("Softmax", [scores], x.dtype, scores.shape, ("bounded", "nonneg"), axis=axis)
    ctx = b.op("MatMul", [probs, v], x.dtype, (bsz, heads, seq, v_size))
    ctx = b.op("Transpose", [ctx], x.dtype, (bsz, seq, heads, v_size), perm=[0, 2, 1, 3])
    merged = b.op("Reshape", [ctx, ints(b, [0, 0, heads * v_size], "Reshape")], x.dtype,
                  (bsz, seq, heads * v_size))
    w = weight(b, (heads * v_size, x.shape[-1]), x.dtype, "MatMul")
    return b.op("MatMul", [merged, w], x.dtype, x.shape)


def _gelu(b: GraphBuilder, x: Value) -> Value:
    """``0.5 * x * (1 + Erf(x / sqrt(2)))`` in the association orders exporters write, the
    division as a Mul by 1/sqrt(2) at times, and at times a constant off by a little (a
    different function, which fuse_gelu must leave alone)."""
    root2 = b.rng.choice([2 ** 0.5] * 5 + [1.41])
    d = b.op("Div", [x, const(b, root2, x.dtype)], x.dtype, x.shape) if b.rng.random() < 0.7 \
        else b.op("Mul", swap(b, x, const(b, 1 / root2, x.dtype)), x.dtype, x.shape)
    e = tap(b, b.op("Erf", [d], x.dtype, x.shape, ("bounded",)), 0.05)
    one = b.op("Add", swap(b, e, const(b, b.rng.choice([1.0] * 5 + [1.01]), x.dtype)),
               x.dtype, x.shape)
    half = const(b, b.rng.choice([0.5] * 5 + [0.49]), x.dtype)
    order = b.rng.randrange(3)
    if order == 0:
        return b.op("Mul", swap(b, b.op("Mul", swap(b, x, half), x.dtype, x.shape), one),
                    x.dtype, x.shape)
    if order == 1:
        return b.op("Mul", swap(b, x, b.op("Mul", swap(b, one, half), x.dtype, x.shape)),
                    x.dtype, x.shape)
    return b.op("Mul", swap(b, b.op("Mul", swap(b, x, one), x.dtype, x.shape), half),
                x.dtype, x.shape)


def _layer_norm(b: GraphBuilder, x: Value) -> Value:
    """The last-axis LayerNorm decomposition (ReduceMean, Sub, Pow 2 or Mul, ReduceMean, Add
    eps, Sqrt, Div, Mul scale, Add bias) at opset 17, the axis written -1 or as an index, at
    times another axis (no layer norm over the last dim), scale and bias of shape [D] or
    scalar."""
    last = x.rank - 1
    axis = b.rng.choice([-1, -1, last, 0 if x.rank > 1 else -1])
    mean = reduce_op(b, "ReduceMean", x, [axis], 1)
    diff = b.op("Sub", [x, mean], x.dtype, x.shape)
    sq = b.op("Pow", [diff, const(b, 2.0, x.dtype)], x.dtype, x.shape) \
        if b.rng.random() < 0.5 else b.op("Mul", [diff, diff], x.dtype, x.shape)
    var = reduce_op(b, "ReduceMean", sq, [axis], 1)
    eps = b.op("Add", swap(b, var, const(b, b.rng.choice([1e-5, 1e-6, 1e-12]), x.dtype)),
               x.dtype, var.shape, ("nonneg",))
    norm = b.op("Div", [diff, b.op("Sqrt", [eps], x.dtype, eps.shape)], x.dtype, x.shape)
    k = (x.shape[-1],) if b.rng.random() < 0.8 else ()
    scaled = b.op("Mul", swap(b, norm, weight(b, k, x.dtype, "Mul", positive=True)), x.dtype,
                  x.shape)
    return b.op("Add", swap(b, scaled, weight(b, k, x.dtype, "Add")), x.dtype, x.shape)


_ANY_FLOAT = frozenset({FLOAT, FLOAT16})
MOTIFS = (
    shaped_motif("sim-mul-mul", ("fuse_consecutive_mul", "constant_folding"), _mul_mul,
                 dtypes=frozenset({FLOAT, FLOAT16, INT64}), ranks=(1, 3),
                 anchors=("Mul",)),
    shaped_motif("sim-reduce-reduce", ("fuse_consecutive_reduce", "FusionReduce"),
                 _reduce_reduce, dtypes=frozenset({FLOAT}), ranks=(2, 4),
                 anchors=tuple(AXES_INPUT)),
    shaped_motif("sim-nop-reduce", ("eliminate_nop_reduce",), _nop_reduce,
                 dtypes=frozenset({FLOAT}), ranks=(1, 3), anchors=tuple(AXES_INPUT)),
    shaped_motif("sim-self-attention", ("fuse_attention", "AttentionFusion"), _self_attention,
                 dtypes=frozenset({FLOAT}), ranks=(2, 3), since=13,
                 anchors=("MatMul", "Softmax")),
    shaped_motif("sim-gelu-erf", ("fuse_gelu",), _gelu, dtypes=_ANY_FLOAT, ranks=(1, 4),
                 since=20,
                 anchors=("Erf", "Div", "Mul")),
    shaped_motif("sim-layer-norm", ("fuse_layer_norm",), _layer_norm,
                 dtypes=frozenset({FLOAT}), ranks=(1, 4), since=17, until=17,
                 anchors=("ReduceMean", "Sub", "Pow", "Sqrt", "Div")),
    shaped_motif("sim-lp-normalization", ("fuse_lp_normalization",), _lp_norm,
                 dtypes=_ANY_FLOAT, ranks=(1, 4),
                 anchors=("ReduceL2", "ReduceL1", "Div")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 210
