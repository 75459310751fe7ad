"""Neural-network ops: Conv, ConvTranspose, BatchNormalization, InstanceNormalization,
LayerNormalization, LRN, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, MatMul, Gemm,
Einsum, Softmax, LogSoftmax, Dropout, Resize.

Output spatial sizes follow the ONNX operator definitions (floor mode):
``out = floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1``.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.ops.spec import OpSpec, axis
from generators.values import FLOAT, Value

_F = frozenset({FLOAT})


def window(b: GraphBuilder, spatial: tuple[int, ...], *, dilate: bool = True,
           pad: bool = True) -> dict:
    """Random kernel/strides/pads/dilations for ``spatial`` dims with output sizes >= 1 (a
    kernel that does not fit a dim falls back to size 1). Returns ``{"kernel_shape",
    "strides", "dilations", "pads", "out"}`` (``pads`` as begins then ends)."""
    ks, ss, ds, pb, pe, out = [], [], [], [], [], []
    for d in spatial:
        k = b.rng.randint(1, 3)
        dil = 2 if dilate and b.rng.random() < 0.15 else 1
        p0 = b.rng.choice([0, 0, 1]) if pad and k > 1 else 0
        p1 = b.rng.choice([p0, p0, 0, 1]) if pad and k > 1 else 0
        s = b.rng.choice([1, 1, 2])
        span = dil * (k - 1) + 1
        if d + p0 + p1 < span:
            k, dil, p0, p1, span = 1, 1, 0, 0, 1
        ks.append(k)
        ss.append(s)
        ds.append(dil)
        pb.append(p0)
        pe.append(p1)
        out.append((d + p0 + p1 - span) // s + 1)
    return {"kernel_shape": ks, "strides": ss, "dilations": ds, "pads": pb + pe, "out": out}


def _conv(b: GraphBuilder, x: Value) -> Value | None:
    n, c, *spatial = x.shape
    w = window(b, tuple(spatial))
    m = b.rng.randint(1, 4)
    group = 1
    if c > 1 and b.rng.random() < 0.25:
        group, m = c, c * b.rng.randint(1, 2)
    weight = b.random_weight((m, c // group, *w["kernel_shape"]), FLOAT, "Conv")
    inputs = [x, weight]
    if b.rng.random() < 0.5:
        inputs.append(b.random_weight((m,), FLOAT, "Conv"))
    attrs = {k: w[k] for k in ("kernel_shape", "strides", "pads")}
    if any(d != 1 for d in w["dilations"]) or b.rng.random() < 0.3:
        attrs["dilations"] = w["dilations"]
    if group > 1:
        attrs["group"] = group
    return b.op("Conv", inputs, FLOAT, (n, m, *w["out"]), **attrs)


def _conv_transpose(b: GraphBuilder, x: Value) -> Value:
    n, c, *spatial = x.shape
    m = b.rng.randint(1, 3)
    ks = [b.rng.randint(1, 3) for _ in spatial]
    ss = [b.rng.choice([1, 2]) for _ in spatial]
    pads = [0] * (2 * len(spatial))
    out = [(d - 1) * s + k for d, s, k in zip(spatial, ss, ks, strict=True)]
    weight = b.random_weight((c, m, *ks), FLOAT, "ConvTranspose")
    return b.op("ConvTranspose", [x, weight], FLOAT, (n, m, *out), kernel_shape=ks,
                strides=ss, pads=pads)


def bn_weights(b: GraphBuilder, c: int, placement: str | None = None) -> list[Value]:
    """Scale, bias, mean and (positive) variance of a BatchNormalization over ``c`` channels."""
    return [b.random_weight((c,), FLOAT, "BatchNormalization", placement=placement,
                            positive=True),
            b.random_weight((c,), FLOAT, "BatchNormalization", placement=placement),
            b.random_weight((c,), FLOAT, "BatchNormalization", placement=placement),
            b.random_weight((c,), FLOAT, "BatchNormalization", placement=placement,
                            positive=True)]


def batch_norm(b: GraphBuilder, x: Value, placement: str | None = None) -> Value:
    """BatchNormalization of ``x`` (N, C, ...) in inference mode."""
    eps = b.rng.choice([1e-5, 1e-3, None])
    return b.op("BatchNormalization", [x, *bn_weights(b, x.shape[1], placement)], FLOAT,
                x.shape, epsilon=eps)


def _batch_norm(b: GraphBuilder, x: Value) -> Value:
    return batch_norm(b, x)


def _instance_norm(b: GraphBuilder, x: Value) -> Value:
    c = x.shape[1]
    scale = b.random_weight((c,), FLOAT, "InstanceNormalization", positive=True)
    bias = b.random_weight((c,), FLOAT, "InstanceNormalization")
    return b.op("InstanceNormalization", [x, scale, bias], FLOAT, x.shape)


def _layer_norm(b: GraphBuilder, x: Value) -> Value:
    a = axis(b, x.rank)
    k = a % x.rank
    scale = b.random_weight(x.shape[k:], FLOAT, "LayerNormalization", positive=True)
    return b.op("LayerNormalization", [x, scale], FLOAT, x.shape, axis=a)


def _lrn(b: GraphBuilder, x: Value) -> Value:
    return b.op("LRN", [x], FLOAT, x.shape, size=b.rng.choice([1, 3, 5]))


def pool(b: GraphBuilder, op: str, x: Value) -> Value:
    """MaxPool / AveragePool over the spatial dims of ``x`` (N, C, ...): random window, pads
    smaller than the kernel, floor mode."""
    n, c, *spatial = x.shape
    w = window(b, tuple(spatial), dilate=False)
    r = len(spatial)
    pads = [min(p, k - 1) for p, k in zip(w["pads"], w["kernel_shape"] * 2, strict=True)]
    out = [(d + pads[i] + pads[i + r] - k) // s + 1 for i, (d, k, s) in
           enumerate(zip(spatial, w["kernel_shape"], w["strides"], strict=True))]
    attrs = {"kernel_shape": w["kernel_shape"], "strides": w["strides"], "pads": pads}
    if op == "AveragePool" and b.rng.random() < 0.5:
        attrs["count_include_pad"] = 1
    return b.op(op, [x], FLOAT, (n, c, *out), x.props if op == "MaxPool" else (), **attrs)


def _pool(op: str):
    return lambda b, x: pool(b, op, x)


def _global_pool(op: str):
    return lambda b, x: b.op(op, [x], FLOAT, x.shape[:2] + (1,) * (x.rank - 2), x.props)


def _matmul(b: GraphBuilder, x: Value) -> Value:
    k = x.shape[-1]
    n = b.rng.randint(1, 4)
    wshape: tuple[int, ...] = (k, n)
    if x.rank >= 3 and b.rng.random() < 0.3:
        wshape = (x.shape[-3] if b.rng.random() < 0.5 else 1, *wshape)
    w = b.random_weight(wshape, FLOAT, "MatMul")
    lead = x.shape[:-2]
    if len(wshape) == 3:
        lead = x.shape[:-3] + (max(x.shape[-3], wshape[0]),)
    return b.op("MatMul", [x, w], FLOAT, (*lead, x.shape[-2], n))


def gemm(b: GraphBuilder, a: Value, trans_a: int = 0, bias: bool | None = None) -> Value:
    """Gemm with ``a`` (M, K) or, with ``trans_a``, (K, M); random B, transB, bias, alpha."""
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    n = b.rng.randint(1, 4)
    trans_b = b.rng.randrange(2)
    w = b.random_weight((n, k) if trans_b else (k, n), FLOAT, "Gemm")
    inputs = [a, w]
    if bias or (bias is None and (b.opset < 11 or b.rng.random() < 0.6)):
        cshape = b.rng.choice([(n,), (1, n), (m, n), ()])
        inputs.append(b.random_weight(cshape, FLOAT, "Gemm"))
    attrs = {"transA": trans_a or None, "transB": trans_b or None}
    if b.rng.random() < 0.3:
        attrs["alpha"] = 0.5
    if b.rng.random() < 0.2 and len(inputs) == 3:
        attrs["beta"] = 2.0
    return b.op("Gemm", inputs, FLOAT, (m, n), **attrs)


def _gemm(b: GraphBuilder, x: Value) -> Value:
    return gemm(b, x, trans_a=b.rng.randrange(2))


_EINSUM = {2: ("ij,jk->ik", "ij,kj->ik"), 3: ("bij,bjk->bik", "bij,jk->bik"),
           4: ("bhij,bhjk->bhik",)}


def einsum(b: GraphBuilder, x: Value, eq: str) -> Value:
    """Einsum of ``x`` with a weight, equation ``eq`` (x's subscripts first)."""
    lhs, out_sub = eq.split("->")
    xs, ws = lhs.split(",")
    dims = dict(zip(xs, x.shape, strict=True))
    for s in ws:
        dims.setdefault(s, b.rng.randint(1, 4))
    w = b.random_weight(tuple(dims[s] for s in ws), FLOAT, "Einsum")
    return b.op("Einsum", [x, w], FLOAT, tuple(dims[s] for s in out_sub), equation=eq)


def _einsum(b: GraphBuilder, x: Value) -> Value:
    return einsum(b, x, b.rng.choice(_EINSUM[x.rank]))


def _softmax(op: str):
    def emit(b: GraphBuilder, x: Value) -> Value:
        props = ("bounded", "nonneg") if op == "Softmax" else ()
        return b.op(op, [x], FLOAT, x.shape, props, axis=axis(b, x.rank))
    return emit


def dropout(b: GraphBuilder, x: Value, ratio: float | None = None) -> Value:
    """Dropout (inference: identity) in the opset's form."""
    ratio = b.rng.choice([0.0, 0.1, 0.5]) if ratio is None else ratio
    if b.opset < 12:
        return b.op("Dropout", [x], x.dtype, x.shape, x.props, ratio=ratio)
    inputs = [x.name]
    if b.rng.random() < 0.6:
        inputs.append(b.scalar(ratio, FLOAT, "Dropout").name)
    return b.op("Dropout", inputs, x.dtype, x.shape, x.props)


def _dropout(b: GraphBuilder, x: Value) -> Value:
    return dropout(b, x)


def _resize(b: GraphBuilder, x: Value) -> Value:
    scales = [1.0, 1.0] + [float(b.rng.choice([1, 2])) for _ in x.shape[2:]]
    out = tuple(int(d * s) for d, s in zip(x.shape, scales, strict=True))
    mode = b.rng.choice(["nearest", "linear"])
    sc = b.const(np.asarray(scales, np.float32), "Resize")
    if b.opset < 13:
        roi = b.const(np.zeros((0,), np.float32), "Resize")
        inputs = [x.name, roi.name, sc.name]
    else:
        inputs = [x.name, "", sc.name]
    return b.op("Resize", inputs, FLOAT, out, mode=mode)


def specs() -> list[OpSpec]:
    """The neural-network op catalogue."""
    return [
        OpSpec("Conv", _conv, _F, (4, 4), weight=1.5, v1=True),
        OpSpec("Conv", _conv, _F, (3, 3), weight=0.3),
        OpSpec("ConvTranspose", _conv_transpose, _F, (4, 4), weight=0.5),
        OpSpec("BatchNormalization", _batch_norm, _F, (2, 4), since=7, v1=True),
        OpSpec("InstanceNormalization", _instance_norm, _F, (3, 4), since=6, weight=0.5),
        OpSpec("LayerNormalization", _layer_norm, _F, (1, 4), since=17, weight=0.5),
        OpSpec("LRN", _lrn, _F, (4, 4), weight=0.3),
        OpSpec("MaxPool", _pool("MaxPool"), _F, (4, 4), weight=0.8, v1=True),
        OpSpec("AveragePool", _pool("AveragePool"), _F, (4, 4), weight=0.8, v1=True),
        OpSpec("GlobalAveragePool", _global_pool("GlobalAveragePool"), _F, (3, 4),
               weight=0.5, v1=True),
        OpSpec("GlobalMaxPool", _global_pool("GlobalMaxPool"), _F, (3, 4), weight=0.3),
        OpSpec("MatMul", _matmul, _F, (2, 4), weight=1.2, v1=True),
        OpSpec("Gemm", _gemm, _F, (2, 2), weight=1.0, v1=True),
        OpSpec("Einsum", _einsum, _F, (2, 4), since=12, weight=0.6),
        OpSpec("Softmax", _softmax("Softmax"), _F, (1, 4), v1=True),
        OpSpec("LogSoftmax", _softmax("LogSoftmax"), _F, (1, 4)),
        OpSpec("Dropout", _dropout, _F, (1, 4), since=7, weight=0.5),
        OpSpec("Resize", _resize, _F, (4, 4), since=11, weight=0.5),
    ]
