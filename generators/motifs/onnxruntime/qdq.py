"""Motifs for onnxruntime's quantization transformers (``onnxruntime/core/optimizer/
qdq_transformer/``, ``double_qdq_pairs_remover.cc``, ``matmul_integer_to_float.cc``,
``nhwc_transformer.cc``): QuantizeLinear/DequantizeLinear node units around Conv, MatMul,
Gemm and other ops, float weights behind a quantized activation, a DequantizeLinear shared
by two units, two QDQ pairs in a row, Q/DQ pairs next to data-movement ops, Relu or Clip
before QuantizeLinear, Where with a dequantized branch, the dynamic-quantization MatMul
pattern and QLinearConv.

Quantization parameters vary the way exporters differ: uint8 or int8 (int16 and uint16 from
opset 21), zero points at the range edge or in the middle, per-tensor or per-channel weight
scales (opset 13), optional zero points left out, and scales that do or do not agree
between neighbouring pairs.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

from generators.builder import GraphBuilder
from generators.motifs.helpers import binary, clip, const, ort_motif, room_for_axis, tap, weight
from generators.ops import nn
from generators.values import FLOAT, Value

UINT8, INT8 = TensorProto.UINT8, TensorProto.INT8
UINT16, INT16, INT32 = TensorProto.UINT16, TensorProto.INT16, TensorProto.INT32
#: quantized type -> numpy type and the range of its values.
_QTYPES = {UINT8: (np.uint8, 0, 255), INT8: (np.int8, -128, 127),
           UINT16: (np.uint16, 0, 65535), INT16: (np.int16, -32768, 32767),
           INT32: (np.int32, -(2**31), 2**31 - 1)}


def qconst(b: GraphBuilder, array: np.ndarray, op: str = "Const",
           constant_node: bool = False) -> Value:
    """A constant of a quantized integer type (uint8, int8, int16, uint16, int32), stored as
    an initializer or, with ``constant_node``, a Constant node (the builder's weights cover
    the float and int64 types only)."""
    t = numpy_helper.from_array(array, b.namer.weight(op))
    if constant_node:
        b.node("Constant", [], outputs=[t.name], value=t)
    else:
        b.initializers.append(t)
    return Value(t.name, t.data_type, tuple(array.shape), const=array)


def qtype(b: GraphBuilder, wide: bool = True) -> int:
    """A quantized element type: uint8 or int8, int16/uint16 too from opset 21."""
    kinds = [UINT8, UINT8, INT8] + ([UINT16, INT16] if wide and b.opset >= 21 else [])
    return b.rng.choice(kinds)


def qparams(b: GraphBuilder, kind: int, scale: float | None = None,
            zero: int | None = None) -> list[Value]:
    """Scale and zero point of ``kind`` (a zero point in the middle or at the low edge of the
    range, or 0); the uint8 zero point of 0 is sometimes left out."""
    np_t, lo, hi = _QTYPES[kind]
    scale = scale or b.rng.choice([0.02, 0.05, 0.03125, 0.1])
    if zero is None:
        zero = b.rng.choice([0, (lo + hi + 1) // 2, lo])
    s = const(b, scale, FLOAT, ())
    if kind == UINT8 and zero == 0 and b.rng.random() < 0.2:
        return [s]
    return [s, qconst(b, np.array(zero, np_t), "ZeroPoint", b.rng.random() < 0.2)]


def quantize(b: GraphBuilder, x: Value, kind: int, params: list[Value] | None = None) -> Value:
    """QuantizeLinear of float ``x`` to ``kind``."""
    params = params or qparams(b, kind)
    return b.op("QuantizeLinear", [x, *params], kind, x.shape)


def dequantize(b: GraphBuilder, q: Value, params: list[Value], **attrs: int) -> Value:
    """DequantizeLinear of ``q`` to float."""
    return b.op("DequantizeLinear", [q, *params], FLOAT, q.shape, **attrs)


def qdq(b: GraphBuilder, x: Value, kind: int | None = None) -> Value:
    """A QuantizeLinear/DequantizeLinear pair on ``x`` with shared parameters."""
    kind = kind or qtype(b)
    params = qparams(b, kind)
    return dequantize(b, quantize(b, x, kind, params), params)


def qweight(b: GraphBuilder, shape: tuple[int, ...], axis: int | None = None) -> Value:
    """A weight stored quantized (int8 or uint8) and dequantized per tensor or, from opset
    13, per channel along ``axis``."""
    kind = b.rng.choice([INT8, INT8, UINT8])
    np_t, lo, hi = _QTYPES[kind]
    q = qconst(b, b.nprng.integers(max(lo, -60), min(hi, 60) + 1, size=shape).astype(np_t),
               "Weight")
    if axis is not None and b.opset >= 13 and b.rng.random() < 0.5:
        n = shape[axis]
        scales = b.const(np.full((n,), 0.01, np.float32) * (1 + np.arange(n, dtype=np.float32)))
        zeros = qconst(b, np.zeros((n,), np_t), "ZeroPoint")
        return b.op("DequantizeLinear", [q, scales, zeros], FLOAT, shape, axis=axis)
    zero = 0 if kind == INT8 else 60
    return dequantize(b, q, qparams(b, kind, 0.01, zero))


def _conv_unit(b: GraphBuilder, x: Value, quantized: bool) -> Value:
    n, c, *spatial = x.shape
    m = b.rng.randint(1, 4)
    k = [min(d, b.rng.randint(1, 3)) for d in spatial]
    shape = (m, c, *k)
    w = qweight(b, shape, 0) if quantized else weight(b, shape, FLOAT, "Conv")
    inputs = [x, w]
    if b.rng.random() < 0.6:
        if quantized and b.rng.random() < 0.7:
            bq = qconst(b, b.nprng.integers(-50, 50, size=(m,)).astype(np.int32), "Bias")
            inputs.append(dequantize(b, bq, [const(b, 0.0005, FLOAT, ())]))
        else:
            inputs.append(weight(b, (m,), FLOAT, "Conv"))
    out = tuple(d - kk + 1 for d, kk in zip(spatial, k, strict=True))
    return b.op("Conv", inputs, FLOAT, (n, m, *out), kernel_shape=k)


def _qdq_unit(b: GraphBuilder, x: Value) -> Value:
    """Q/DQ on the activation, an op (Conv, MatMul, Gemm, pooling, Add, Sigmoid, Transpose
    ...) with quantized or float weights, Q/DQ on its output (the node units that
    qdq_selector_action_transformer.cc turns into QLinear ops; weight_bias_quantization.cc
    quantizes float weights; ensure_unique_dq_for_node_unit.cc splits a shared
    DequantizeLinear; qdq_s8_to_u8.cc converts int8 activations)."""
    kind = b.rng.choice([UINT8, UINT8, INT8])
    x = room_for_axis(b, x, "QuantizeLinear", "DequantizeLinear")
    a = qdq(b, x, kind)
    quantized = b.rng.random() < 0.6
    ops = ["MatMul", "Add", "Mul", "Sigmoid", "LeakyRelu", "Transpose", "Reshape"]
    ops += ["Conv", "Conv", "MaxPool", "AveragePool", "GlobalAveragePool"] if x.rank >= 3 \
        else []
    ops += ["Gemm"] if x.rank == 2 else []
    op = b.rng.choice(ops)
    if op == "Conv":
        y = _conv_unit(b, a, quantized)
    elif op in ("MatMul", "Gemm"):
        n = b.rng.randint(1, 4)
        w = qweight(b, (x.shape[-1], n), 1) if quantized else weight(b, (x.shape[-1], n),
                                                                       FLOAT, op)
        y = b.op(op, [a, w], FLOAT, (*x.shape[:-1], n))
        if b.rng.random() < 0.2:  # the same dequantized weight in a second unit
            b.op(op, [a, w], FLOAT, y.shape)
    elif op in ("Add", "Mul"):
        other = qdq(b, weight(b, x.shape, FLOAT, op), kind) if quantized else \
            weight(b, x.shape, FLOAT, op)
        y = binary(b, op, a, other)
    elif op in ("MaxPool", "AveragePool"):
        y = nn.pool(b, op, a)
    elif op == "GlobalAveragePool":
        y = b.op(op, [a], FLOAT, x.shape[:2] + (1,) * (x.rank - 2))
    elif op == "Transpose":
        y = b.op(op, [a], FLOAT, x.shape[::-1], perm=list(range(x.rank))[::-1])
    elif op == "Reshape":
        y = b.op(op, [a, b.ints([-1])], FLOAT, (x.size,))
    else:
        y = b.op(op, [a], FLOAT, x.shape)
    if b.rng.random() < 0.15:
        b.op("Neg", [a], FLOAT, a.shape)  # the activation's DequantizeLinear consumed twice
    if b.rng.random() < 0.85:
        y = qdq(b, y, kind if b.rng.random() < 0.9 else qtype(b))
    return y


def _double_qdq(b: GraphBuilder, x: Value) -> Value:
    """Q1 -> DQ1 -> Q2 -> DQ2 (double_qdq_pairs_remover.cc drops the middle pair and
    recomputes the parameters), with equal or different scales, zero points and types; or a
    DQ -> Q pair with equal parameters between two units (qdq_final_cleanup.cc)."""
    k1 = qtype(b)
    p1 = qparams(b, k1)
    d1 = tap(b, dequantize(b, quantize(b, x, k1, p1), p1), 0.08)
    k2 = k1 if b.rng.random() < 0.7 else qtype(b)
    p2 = p1 if k2 == k1 and b.rng.random() < 0.3 else qparams(b, k2)
    q2 = quantize(b, d1, k2, p2)
    if b.rng.random() < 0.3:  # DQ -> Q with the same parameters, then one more DQ
        q2 = quantize(b, dequantize(b, q2, p2), k2, p2)
    return dequantize(b, q2, p2)


_MOVERS = ("Transpose", "Reshape", "Squeeze", "Unsqueeze", "MaxPool", "Slice", "Flatten")


def _mover(b: GraphBuilder, x: Value) -> Value:
    """A data-movement op (what QDQ propagation looks through) on ``x``."""
    op = b.rng.choice([o for o in _MOVERS if o != "MaxPool" or x.rank >= 3])
    if op == "Transpose":
        return b.op(op, [x], FLOAT, x.shape[::-1], perm=list(range(x.rank))[::-1])
    if op == "Reshape":
        return b.op(op, [x, b.ints([1, -1])], FLOAT, (1, x.size))
    if op == "Flatten":
        return b.op(op, [x], FLOAT, (x.shape[0], x.size // x.shape[0]), axis=1)
    if op in ("Squeeze", "Unsqueeze"):
        from generators.ops import shape_ops

        u = shape_ops.unsqueeze(b, x, [0])
        if op == "Unsqueeze":
            return u
        form = shape_ops.axes_operand(b, "Squeeze", [0], 13)
        return b.op("Squeeze", [u, *form["inputs"]], FLOAT, x.shape, **form["attrs"])
    if op == "MaxPool":
        return nn.pool(b, op, x)
    d = x.shape[-1]
    from generators.motifs.onnxruntime.transformer import slice_op

    return slice_op(b, x, [0], [max(1, d - 1)], [x.rank - 1])


def _qdq_propagation(b: GraphBuilder, x: Value) -> Value:
    """A Q/DQ pair before a data-movement op with no Q after it, or after one with no DQ
    before it (qdq_propagation.cc carries the pair across)."""
    if b.rng.random() < 0.6:
        y = _mover(b, qdq(b, x))
        return _mover(b, y) if b.rng.random() < 0.3 else y
    return qdq(b, _mover(b, x))


def _quant_after_act(b: GraphBuilder, x: Value) -> Value:
    """Relu or Clip right before QuantizeLinear (relu_quantizelinear.cc and
    clip_quantizelinear.cc drop it where the quantized range already clips): zero points at
    the range minimum or not, Clip ranges inside or outside the quantized range. A schema
    row that gives the quantized type a float 8 one gets the zero point 0 (onnxruntime's
    DequantizeLinear takes no other for float 8)."""
    kind = b.rng.choice([UINT8, UINT8, INT8])
    _, lo, hi = _QTYPES[kind]
    zero = b.rng.choice([lo, lo, 0, 10 + lo])
    if any((b.planned(op, f) or "").startswith("float8") for op, f in (
            ("QuantizeLinear", "dtype:T2"), ("DequantizeLinear", "dtype:T1"))):
        zero = 0
    x = room_for_axis(b, x, "QuantizeLinear", "DequantizeLinear")
    scale = b.rng.choice([6 / 255, 0.02, 0.02, 0.05])
    if b.rng.random() < 0.5:
        y = b.op("Relu", [x], FLOAT, x.shape, ("nonneg",))
    else:
        bounds = b.rng.choice([(0.0, 6.0), (0.0, None), (0.0, 1.0), (-1.0, 6.0)])
        y = clip(b, x, *bounds)
    params = qparams(b, kind, scale, zero)
    return dequantize(b, quantize(b, tap(b, y, 0.05), kind, params), params)


def _where_dq(b: GraphBuilder, x: Value) -> Value:
    """Where with a dequantized branch and a float scalar constant, then Q/DQ
    (where_dummy_dq.cc gives the constant its own DequantizeLinear)."""
    kind = b.rng.choice([UINT8, INT8])
    d = qdq(b, x, kind)
    cond = b.op("Greater", [x, const(b, 0.0, FLOAT, ())], TensorProto.BOOL, x.shape)
    c = const(b, b.rng.choice([0.0, 1.0, -1.0]), FLOAT, ())
    branches = [d, c] if b.rng.random() < 0.6 else [c, d]
    w = b.op("Where", [cond, *branches], FLOAT, x.shape)
    return qdq(b, w, kind)


def _matmul_integer(b: GraphBuilder, x: Value) -> Value:
    """DynamicQuantizeLinear, MatMulInteger, Cast to float, Mul by the product of the scales,
    optional bias Add (matmul_integer_to_float.cc -> MatMulIntegerToFloat;
    dynamic_quantize_matmul_fusion.cc)."""
    names = b.node("DynamicQuantizeLinear", [x.name], n_out=3)
    aq = Value(names[0], UINT8, x.shape)
    a_scale, a_zero = Value(names[1], FLOAT, ()), Value(names[2], UINT8, ())
    k, n = x.shape[-1], b.rng.randint(1, 4)
    kind = b.rng.choice([UINT8, INT8])
    np_t = _QTYPES[kind][0]
    w = qconst(b, b.nprng.integers(0, 60, size=(k, n)).astype(np_t), "Weight")
    inputs = [aq, w, a_zero]
    if b.rng.random() < 0.8:
        inputs.append(qconst(b, np.array(0 if kind == INT8 else 30, np_t), "ZeroPoint"))
    mm = b.op("MatMulInteger", inputs, INT32, (*x.shape[:-1], n))
    f = b.op("Cast", [mm], FLOAT, mm.shape, to=FLOAT)
    w_scale = const(b, 0.01, FLOAT, (n,) if b.rng.random() < 0.3 else ())
    scale = b.op("Mul", [a_scale, w_scale], FLOAT, w_scale.shape)
    y = binary(b, "Mul", f, scale)
    if b.rng.random() < 0.5:
        y = binary(b, "Add", y, weight(b, (n,), FLOAT, "Add"))
    return y


def _qlinear_conv(b: GraphBuilder, x: Value) -> Value:
    """QuantizeLinear, QLinearConv with a constant int8 or uint8 weight and optional int32
    bias, DequantizeLinear (nhwc_transformer.cc moves it to the NHWC kernel)."""
    kind = b.rng.choice([UINT8, UINT8, INT8])
    xp = qparams(b, kind, zero=_QTYPES[kind][1] // 2 + 64 if kind == UINT8 else 0)
    xq = quantize(b, x, kind, xp)
    if len(xp) == 1:
        xp.append(qconst(b, np.array(0, np.uint8), "ZeroPoint"))
    n, c, *spatial = x.shape
    m = b.rng.randint(1, 4)
    k = [min(d, b.rng.randint(1, 3)) for d in spatial]
    wkind = b.rng.choice([INT8, INT8, UINT8]) if kind == UINT8 else INT8
    np_w = _QTYPES[wkind][0]
    w = qconst(b, b.nprng.integers(0, 40, size=(m, c, *k)).astype(np_w), "Weight")
    wp = [const(b, 0.01, FLOAT, ()), qconst(b, np.array(0, np_w), "ZeroPoint")]
    yp = qparams(b, kind, 0.05, xp[1].const.item())
    inputs = [xq, *xp, w, *wp, *yp]
    if b.rng.random() < 0.5:
        inputs.append(qconst(b, b.nprng.integers(-100, 100, size=(m,)).astype(np.int32), "Bias"))
    out = tuple(d - kk + 1 for d, kk in zip(spatial, k, strict=True))
    y = b.op("QLinearConv", inputs, kind, (n, m, *out), kernel_shape=k)
    return dequantize(b, y, yp)


MOTIFS = (
    ort_motif("ort-qdq-unit", ("QDQSelectorActionTransformer", "WeightBiasQuantization",
                               "EnsureUniqueDQForNodeUnit", "QDQS8ToU8Transformer",
                               "QDQFinalCleanupTransformer"), _qdq_unit, ranks=(2, 4),
              since=10,
              anchors=("QuantizeLinear", "DequantizeLinear")),
    ort_motif("ort-double-qdq", ("DoubleQDQPairsRemover", "QDQFinalCleanupTransformer"),
              _double_qdq, ranks=(1, 4), since=10,
              anchors=("QuantizeLinear", "DequantizeLinear")),
    ort_motif("ort-qdq-propagation", ("QDQPropagationTransformer",), _qdq_propagation,
              ranks=(2, 4), since=10,
              anchors=("QuantizeLinear", "DequantizeLinear")),
    ort_motif("ort-quant-after-act", ("ClipQuantRewrite", "ReluQuantRewrite"), _quant_after_act,
              ranks=(1, 4), since=10,
              anchors=("Relu", "Clip", "QuantizeLinear")),
    ort_motif("ort-where-dq", ("WhereDummyDq",), _where_dq, ranks=(1, 4), since=10,
              anchors=("Where", "DequantizeLinear")),
    ort_motif("ort-matmul-integer", ("MatMulIntegerToFloatFusion",
                                     "DynamicQuantizeMatMulFusion"), _matmul_integer,
              ranks=(2, 3), since=11,
              anchors=("DynamicQuantizeLinear", "MatMulInteger")),
    ort_motif("ort-qlinear-conv", ("NhwcTransformer",), _qlinear_conv, ranks=(4, 4),
              since=10,
              anchors=("QLinearConv",)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 110
