"""Motifs for onnxruntime's MatMul, Gemm and Conv fusions (``onnxruntime/core/optimizer/``):
MatMul + Add to Gemm (``matmul_add_fusion.cc``), Gemm + activation (``gemm_activation_fusion.cc``),
Transpose into Gemm (``gemm_transpose_fusion.cc``), Gemm + Sum (``gemm_sum_fusion.cc``), scalar
scales and Transposes into FusedMatMul (``matmul_scale_fusion.cc``,
``matmul_transpose_fusion.cc``), MatMul + BatchNormalization (``matmul_bn_fusion.cc``), Conv
with a per-channel Add, Mul or BatchNormalization (``conv_add_fusion.cc``,
``conv_mul_fusion.cc``, ``conv_bn_fusion.cc``) and Conv with activations
(``conv_activation_fusion.cc``, ``conv_add_act_fusion.cc``).

Variants as in :mod:`generators.motifs.onnxruntime.fusion`: float, float16 and double where the CPU
kernels exist, bias shapes that do and do not fit the fused op, constants that are
overridable graph inputs, intermediates with a second consumer.
"""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.fusion import conv
from generators.motifs.helpers import (
    ANY_FLOAT,
    DOUBLE,
    FLOAT_INPUT,
    Emit,
    activation,
    binary,
    const,
    float_view,
    matmul,
    ort_motif,
    placement,
    planned_integer,
    swap,
    tap,
    weight,
)
from generators.ops import nn
from generators.values import FLOAT, Value


# -- MatMul and Gemm ----------------------------------------------------------------------------
def _matmul_add(b: GraphBuilder, x: Value) -> Value:
    """MatMul then Add of a bias of shape (N,), (1, N), (M, N) or scalar (matmul_add_fusion.cc
    -> Gemm; 3-D inputs with a 1-D bias are reshaped around the Gemm)."""
    x = float_view(b, x, ANY_FLOAT)
    y = tap(b, matmul(b, x), 0.08)
    n = y.shape[-1]
    shapes = [(n,), (n,), (1, n), ()] + ([y.shape] if y.rank == 2 else [(1, 1, n)])
    return binary(b, "Add", y, weight(b, b.rng.choice(shapes), y.dtype, "Add"))


def gemm(b: GraphBuilder, a: Value, bias: bool | None = None) -> Value:
    """Gemm of 2-D ``a`` (dtype kept) by a constant B, random transB/alpha/beta, C present per
    ``bias`` (random where None; always before opset 11)."""
    m, k = a.shape
    n = b.rng.randint(1, 4)
    tb = b.rng.randrange(2)
    inputs = [a, weight(b, (n, k) if tb else (k, n), a.dtype, "Gemm")]
    if b.opset < 11 or bias or (bias is None and b.rng.random() < 0.6):
        inputs.append(weight(b, b.rng.choice([(n,), (1, n), (m, n), ()]), a.dtype, "Gemm"))
    attrs = {"transB": tb or None, "alpha": b.rng.choice([None, None, 0.5]),
             "beta": b.rng.choice([None, 2.0]) if len(inputs) == 3 else None}
    return b.op("Gemm", inputs, a.dtype, (m, n), **attrs)


def _gemm_activation(b: GraphBuilder, x: Value) -> Value:
    """Gemm then an activation (gemm_activation_fusion.cc -> FusedGemm)."""
    g = tap(b, gemm(b, float_view(b, x, (FLOAT, FLOAT, FLOAT, DOUBLE))), 0.08)
    return activation(b, g)


def _required_c(b: GraphBuilder, n: int, dtype: int) -> list[Value]:
    """Gemm's C where the opset requires it (before 11), else none."""
    return [weight(b, (n,), dtype, "Gemm")] if b.opset < 11 else []


def _gemm_transpose(b: GraphBuilder, x: Value) -> Value:
    """Transpose into Gemm's A or B, or out of a Gemm without C (gemm_transpose_fusion.cc)."""
    x = float_view(b, x, (FLOAT, FLOAT, DOUBLE))
    dt = x.dtype
    r = b.rng.random()
    if r < 0.4:
        t = tap(b, b.op("Transpose", [x], dt, x.shape[::-1], perm=[1, 0]), 0.08)
        ta = b.rng.randrange(2)
        m, k = (t.shape[1], t.shape[0]) if ta else t.shape
        n = b.rng.randint(1, 4)
        return b.op("Gemm", [t, weight(b, (k, n), dt, "Gemm"), *_required_c(b, n, dt)], dt,
                    (m, n), transA=ta or None)
    if r < 0.7:
        m, k = x.shape
        n = b.rng.randint(1, 4)
        wt = b.op("Transpose", [weight(b, (n, k), dt, "Gemm")], dt, (k, n), perm=[1, 0])
        return b.op("Gemm", [x, wt, *_required_c(b, n, dt)], dt, (m, n))
    g = gemm(b, x, bias=b.rng.random() < 0.2)
    return b.op("Transpose", [tap(b, g, 0.05)], dt, g.shape[::-1], perm=[1, 0])


def _gemm_sum(b: GraphBuilder, x: Value) -> Value:
    """Gemm without C, then Sum with one more operand (gemm_sum_fusion.cc); sometimes three
    operands or a Gemm that has C (no fusion)."""
    x = float_view(b, x, (FLOAT, FLOAT, DOUBLE))
    g = tap(b, gemm(b, x, bias=b.rng.random() < 0.1), 0.08)
    others = [weight(b, b.rng.choice([(g.shape[1],), g.shape, (1, g.shape[1])]), x.dtype,
                     "Sum")]
    if b.rng.random() < 0.15:
        others.append(weight(b, g.shape, x.dtype, "Sum"))
    return b.op("Sum", swap(b, g, others[0]) + others[1:], x.dtype, g.shape)


def _matmul_scale(b: GraphBuilder, x: Value) -> Value:
    """A scalar Mul/Div before or after MatMul (matmul_scale_fusion.cc -> FusedMatMul alpha);
    sometimes a per-column scale or the constant as Div's dividend (no fusion)."""
    x = float_view(b, x, ANY_FLOAT)
    dt = x.dtype
    s = b.rng.choice([0.125, 2.0, 0.5])
    if b.rng.random() < 0.5:
        x = binary(b, "Mul", x, const(b, s, dt))
    y = tap(b, matmul(b, x), 0.05)
    r = b.rng.random()
    # a row that gives Div an integer type divides by the constant (a MatMul's output may
    # be 0 in integers)
    if r < 0.4 or (r < 0.5 and planned_integer(b, "Div")):
        return b.op("Div", [y, const(b, s, dt)], dt, y.shape)
    if r < 0.5:
        return b.op("Div", [const(b, s, dt), y], dt, y.shape)
    if r < 0.6:
        return binary(b, "Mul", y, weight(b, (y.shape[-1],), dt, "Mul"))
    return binary(b, "Mul", y, const(b, s, dt))


def _swap_last(rank: int) -> list[int]:
    perm = list(range(rank))
    perm[-2:] = perm[-2:][::-1]
    return perm


def _matmul_transpose(b: GraphBuilder, x: Value) -> Value:
    """Transpose of the last two dims (or of batch dims) into either MatMul input
    (matmul_transpose_fusion.cc -> FusedMatMul transA/transB/transBatch)."""
    x = float_view(b, x, ANY_FLOAT)
    dt = x.dtype
    perm = _swap_last(x.rank)
    if x.rank >= 3 and b.rng.random() < 0.25:
        perm = [1, 0, *range(2, x.rank)] if b.rng.random() < 0.5 else \
            [*range(1, x.rank - 1), 0, x.rank - 1]
    t = tap(b, b.op("Transpose", [x], dt, tuple(x.shape[p] for p in perm), perm=perm), 0.08)
    n = b.rng.randint(1, 4)
    if b.rng.random() < 0.6:
        return matmul(b, t, n)
    k = t.shape[-2]
    if b.rng.random() < 0.5:  # both inputs transposed
        a = b.op("Transpose", [weight(b, (k, n), dt, "MatMul")], dt, (n, k), perm=[1, 0])
    else:
        a = weight(b, (n, k), dt, "MatMul")
    return b.op("MatMul", [a, t], dt, (*t.shape[:-2], n, t.shape[-1]))


def _matmul_bn(b: GraphBuilder, x: Value) -> Value:
    """MatMul by a constant (K, C) weight, an optional Reshape to the same shape, then
    BatchNormalization over C (matmul_bn_fusion.cc -> Gemm)."""
    c = b.rng.randint(1, 4)
    w = weight(b, (x.shape[1], c), FLOAT, "MatMul") if b.rng.random() < 0.9 else \
        b.random_weight((x.shape[1], c), FLOAT, "MatMul", placement="input")
    y = tap(b, b.op("MatMul", [x, w], FLOAT, (x.shape[0], c)), 0.08)
    if b.rng.random() < 0.4:
        y = b.op("Reshape", [y, b.ints(b.rng.choice([list(y.shape), [-1, c], [0, c]]))],
                 FLOAT, y.shape)
    return nn.batch_norm(b, y)


# -- Conv ---------------------------------------------------------------------------------------
def _channel_shape(b: GraphBuilder, y: Value) -> tuple[int, ...]:
    """A constant shape for a per-channel op on Conv output ``y``: (M, 1, ...) or
    (1, M, 1, ...) mostly, sometimes (1,) or one that spans the spatial dims (no fusion)."""
    m, ones = y.shape[1], (1,) * (y.rank - 2)
    return b.rng.choice([(m, *ones)] * 3 + [(1, m, *ones)] * 2 + [(1,), (m, *y.shape[2:])])


def _conv_affine(op: str) -> Emit:
    """An emitter of Conv then ``op``: a per-channel Add or Mul by a constant, or
    BatchNormalization (conv_add_fusion.cc, conv_mul_fusion.cc, conv_bn_fusion.cc)."""

    def emit(b: GraphBuilder, x: Value) -> Value:
        y = tap(b, conv(b, x, placement=placement(b)), 0.08)
        if op == "BatchNormalization":
            return nn.batch_norm(b, y)
        c = weight(b, _channel_shape(b, y), FLOAT, op, positive=op == "Mul")
        return binary(b, op, y, c)

    return emit


def _conv_activation(b: GraphBuilder, x: Value) -> Value:
    """Conv then Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, Clip ... (conv_activation_fusion.cc
    -> FusedConv); Clip bounds are sometimes not constant."""
    y = tap(b, conv(b, x), 0.08)
    if b.opset >= 11 and b.rng.random() < 0.1:
        lo = b.graph_input(FLOAT, ())
        b.pool.remove(lo)
        return b.op("Clip", [y, lo], FLOAT, y.shape)
    return activation(b, y, ("HardSwish",) if b.opset >= 14 else ())


def _conv_add_activation(b: GraphBuilder, x: Value) -> Value:
    """Conv, Add of a tensor of the Conv's shape (a residual), then Relu
    (conv_add_act_fusion.cc)."""
    y = conv(b, x, pads=False)
    other = conv(b, x, pads=False) if b.rng.random() < 0.3 else None
    if other is None or other.shape != y.shape:
        other = weight(b, y.shape, FLOAT, "Add")
    s = tap(b, binary(b, "Add", y, other), 0.05)
    return b.op(b.rng.choice(["Relu", "Relu", "Sigmoid"]), [s], FLOAT, s.shape)


MOTIFS = (
    ort_motif("ort-matmul-add", ("MatMulAddFusion",), _matmul_add, dtypes=FLOAT_INPUT,
              ranks=(2, 3),
              anchors=("MatMul", "Add")),
    ort_motif("ort-gemm-activation", ("GemmActivationFusion",), _gemm_activation,
              ranks=(2, 2),
              anchors=("Gemm",)),
    ort_motif("ort-gemm-transpose", ("GemmTransposeFusion",), _gemm_transpose, ranks=(2, 2),
              anchors=("Gemm", "Transpose")),
    ort_motif("ort-gemm-sum", ("GemmSumFusion",), _gemm_sum, ranks=(2, 2), since=11,
              anchors=("Gemm", "Sum")),
    ort_motif("ort-matmul-scale", ("MatMulScaleFusion",), _matmul_scale, dtypes=FLOAT_INPUT,
              ranks=(2, 4),
              anchors=("MatMul", "Mul", "Div")),
    ort_motif("ort-matmul-transpose", ("MatmulTransposeFusion",), _matmul_transpose,
              dtypes=FLOAT_INPUT, ranks=(2, 4),
              anchors=("MatMul", "Transpose")),
    ort_motif("ort-matmul-bn", ("MatMul_BatchNormalization_Fusion",), _matmul_bn, ranks=(2, 2),
              anchors=("MatMul", "BatchNormalization")),
    ort_motif("ort-conv-add", ("ConvAddFusion",), _conv_affine("Add"), ranks=(3, 4),
              anchors=("Conv", "Add")),
    ort_motif("ort-conv-mul", ("ConvMulFusion",), _conv_affine("Mul"), ranks=(3, 4),
              anchors=("Conv", "Mul")),
    ort_motif("ort-conv-bn", ("ConvBNFusion",), _conv_affine("BatchNormalization"),
              ranks=(3, 4),
              anchors=("Conv", "BatchNormalization")),
    ort_motif("ort-conv-activation", ("ConvActivationFusion",), _conv_activation,
              ranks=(3, 4),
              anchors=("Conv",)),
    ort_motif("ort-conv-add-activation", ("ConvAddActivationFusion",), _conv_add_activation,
              ranks=(4, 4),
              anchors=("Conv", "Add", "Relu")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 80
