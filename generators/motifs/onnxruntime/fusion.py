"""Motifs for onnxruntime's activation and normalization fusions
(``onnxruntime/core/optimizer/``): GELU in its Erf (``gelu_fusion.cc``), tanh
(``fast_gelu_fusion.cc``) and sigmoid (``quick_gelu_fusion.cc``, ``swiglu_fusion.cc``) forms,
Add then ONNX Gelu (``bias_gelu_fusion.cc``), layer norm and RMS norm built from primitives
(``layer_norm_fusion.cc``), Add then LayerNormalization (``skip_layer_norm_fusion.cc``), Add
then Softmax (``bias_softmax_fusion.cc``) and attention blocks, BERT's and the packed-QKV form
of MobileCLIP (``attention_fusion.cc``, ``attention_fusion_helper.h``).

Each motif varies what the op specs allow around the textbook pattern: the element type
(float, float16, double where onnxruntime has the CPU kernel), operand order, constants as
initializers, Constant nodes or overridable graph inputs (not constant to onnxruntime),
scalar or one-element constants, an intermediate with a second consumer or that is a graph
output, and constants that almost match (0.49 for 0.5), so the fusions' precondition checks
run both ways.
"""

from __future__ import annotations

import math

from generators.builder import GraphBuilder
from generators.motifs.helpers import (
    ANY_FLOAT,
    FLOAT_INPUT,
    NO_DOUBLE,
    binary,
    const,
    float_view,
    ints,
    matmul,
    near,
    near_exponent,
    ort_motif,
    tap,
    weight,
)
from generators.ops import shape_ops
from generators.ops.reduce import reduce
from generators.values import FLOAT, INT64, Value


# -- GELU forms ---------------------------------------------------------------------------------
def _gelu_erf(b: GraphBuilder, x: Value) -> Value:
    """x * 0.5 * (1 + erf(x / sqrt2)), both Mul orders (gelu_fusion.cc)."""
    x = float_view(b, x, NO_DOUBLE)
    dt = x.dtype
    root2 = b.rng.choice([math.sqrt(2)] * 4 + [1.4142099618911743] * 2 + [1.41])
    if b.rng.random() < 0.9:
        d = b.op("Div", [x, const(b, root2, dt)], dt, x.shape)
    else:
        d = b.op("Mul", [x, const(b, 1 / root2, dt)], dt, x.shape)
    e = tap(b, b.op("Erf", [d], dt, x.shape, ("bounded",)), 0.05)
    a = binary(b, "Add", e, const(b, near(b, 1.0), dt))
    half = const(b, near(b, 0.5), dt)
    if b.rng.random() < 0.5:
        return binary(b, "Mul", binary(b, "Mul", x, half), a)
    return binary(b, "Mul", binary(b, "Mul", x, a), half)


def _gelu_tanh(b: GraphBuilder, x: Value) -> Value:
    """x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) with Pow or Mul x*x
    (fast_gelu_fusion.cc: float only on CPU)."""
    x = float_view(b, x, ANY_FLOAT)
    dt = x.dtype
    if b.rng.random() < 0.5:  # the Pow form
        p = b.op("Pow", [x, const(b, near_exponent(b, 3.0), dt)], dt, x.shape)
        inner = binary(b, "Add", x, binary(b, "Mul", p, const(b, 0.044715, dt)))
        t_in = binary(b, "Mul", inner, const(b, near(b, 0.7978845834732056), dt))
    else:  # x * (0.7978845 * (1 + 0.044715 x*x)) spelled as GPT-2 exports do
        m1 = binary(b, "Mul", x, const(b, near(b, 0.044715), dt))
        m2 = binary(b, "Mul", m1, x)
        a1 = binary(b, "Add", m2, const(b, 1.0, dt))
        m4 = binary(b, "Mul", x, const(b, 0.7978845834732056, dt))
        t_in = binary(b, "Mul", m4, a1)
    t = tap(b, b.op("Tanh", [t_in], dt, x.shape, ("bounded",)), 0.05)
    a2 = binary(b, "Add", t, const(b, 1.0, dt))
    h = binary(b, "Mul", x, const(b, near(b, 0.5), dt))
    return binary(b, "Mul", h, a2)


def _quick_gelu(b: GraphBuilder, x: Value) -> Value:
    """x * Sigmoid(alpha * x) (quick_gelu_fusion.cc), alpha 1.702 or 1 (SiLU: Sigmoid(x)),
    optionally gating a second branch of the same shape (SwiGLU, swiglu_fusion.cc)."""
    x = float_view(b, x, ANY_FLOAT)
    dt = x.dtype
    alpha = b.rng.choice([1.702, 1.702, 1.0, None, 2.0])
    s_in = x if alpha is None else binary(b, "Mul", x, const(b, alpha, dt))
    s = tap(b, b.op("Sigmoid", [s_in], dt, x.shape, ("bounded",)), 0.05)
    g = binary(b, "Mul", x, s)
    if b.rng.random() < 0.4:
        up = b.op("MatMul", [x, weight(b, (x.shape[-1], x.shape[-1]), dt, "MatMul")], dt,
                  x.shape) if x.rank >= 2 else binary(b, "Add", x, weight(b, x.shape, dt))
        g = binary(b, "Mul", g, up)
    return g


def _bias_gelu(b: GraphBuilder, x: Value) -> Value:
    """Add of a 1-D bias then Gelu (bias_gelu_fusion.cc; ONNX Gelu from opset 20)."""
    x = float_view(b, x, NO_DOUBLE)
    shape = b.rng.choice([(x.shape[-1],), (x.shape[-1],), x.shape])
    a = tap(b, binary(b, "Add", x, weight(b, shape, x.dtype, "Add")), 0.1)
    return b.op("Gelu", [a], x.dtype, x.shape, approximate=b.rng.choice([None, "tanh"]))


# -- normalizations -----------------------------------------------------------------------------
def _norm_axes(b: GraphBuilder, x: Value) -> list[int]:
    """Reduced axes of a norm: the last (as -1 or r-1), sometimes the last two, rarely the
    first (a pattern that must not fuse)."""
    r = x.rank
    last = [-1] if b.opset >= 11 and b.rng.random() < 0.6 else [r - 1]
    if r >= 2 and b.rng.random() < 0.15:
        return [r - 2, r - 1]
    if r >= 2 and b.rng.random() < 0.05:
        return [0]
    return last


def _scale_shift(b: GraphBuilder, y: Value, gamma: bool, beta: bool) -> Value:
    k = (y.shape[-1],)
    if gamma:
        y = binary(b, "Mul", y, weight(b, k, y.dtype, "Mul", positive=True))
    if beta:
        y = binary(b, "Add", y, weight(b, k, y.dtype, "Add"))
    return y


def _layer_norm(b: GraphBuilder, x: Value) -> Value:
    """ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta
    (layer_norm_fusion.cc), with the duplicated Sub of old PyTorch exports, a Cast to float
    after the Sub (mixed precision), gamma or beta left out."""
    x = float_view(b, x, ANY_FLOAT)
    dt = x.dtype
    axes = _norm_axes(b, x)
    m = reduce(b, "ReduceMean", x, axes=axes, keepdims=1)
    d = b.op("Sub", [x, m], dt, x.shape)
    dup = b.rng.random() < 0.15
    num = b.op("Sub", [x, m], dt, x.shape) if dup else d
    if dt != FLOAT and b.rng.random() < 0.3:
        d = b.op("Cast", [d], FLOAT, d.shape, to=FLOAT)
        num = b.op("Cast", [num], FLOAT, num.shape, to=FLOAT) if dup else d
    ft = d.dtype
    p = b.op("Pow", [d, const(b, near_exponent(b, 2.0), ft)], ft, d.shape, ("nonneg",))
    v = reduce(b, "ReduceMean", p, axes=axes, keepdims=1)
    e = binary(b, "Add", v, const(b, b.rng.choice([1e-5, 1e-12, 1e-6]), ft))
    s = b.op("Sqrt", [e], ft, e.shape)
    n = tap(b, b.op("Div", [num, s], ft, num.shape), 0.05)
    return _scale_shift(b, n, b.rng.random() < 0.9, b.rng.random() < 0.85)


def _rms_norm(b: GraphBuilder, x: Value) -> Value:
    """x / sqrt(mean(x^2) + eps) * gamma (SimplifiedLayerNormFusion in layer_norm_fusion.cc),
    with Div or Reciprocal+Mul, and the T5 form that computes in float between Casts."""
    x = float_view(b, x, ANY_FLOAT)
    xs = x
    if x.dtype != FLOAT and b.rng.random() < 0.4:
        xs = b.op("Cast", [x], FLOAT, x.shape, to=FLOAT)
    ft = xs.dtype
    axes = _norm_axes(b, xs)
    p = b.op("Pow", [xs, const(b, near_exponent(b, 2.0), ft)], ft, xs.shape, ("nonneg",))
    v = reduce(b, "ReduceMean", p, axes=axes, keepdims=1)
    e = binary(b, "Add", v, const(b, b.rng.choice([1e-5, 1e-6]), ft))
    s = b.op("Sqrt", [e], ft, e.shape)
    if b.rng.random() < 0.7:
        n = b.op("Div", [xs, s], ft, xs.shape)
    else:
        n = binary(b, "Mul", xs, b.op("Reciprocal", [s], ft, s.shape))
    n = tap(b, n, 0.05)
    if ft != x.dtype:
        n = b.op("Cast", [n], x.dtype, n.shape, to=x.dtype)
    return _scale_shift(b, n, b.rng.random() < 0.9, False)


def layer_norm_op(b: GraphBuilder, x: Value, axis: int = -1, beta: bool = True) -> Value:
    """ONNX LayerNormalization (opset 17) of ``x`` over ``axis`` onward, constant scale and
    (if ``beta``) bias of the normalized shape."""
    k = axis % x.rank
    inputs = [x, weight(b, x.shape[k:], x.dtype, "LayerNormalization", positive=True)]
    if beta:
        inputs.append(weight(b, x.shape[k:], x.dtype, "LayerNormalization"))
    eps = b.rng.choice([None, 1e-5, 1e-12])
    return b.op("LayerNormalization", inputs, x.dtype, x.shape, axis=axis, epsilon=eps)


def _skip_layer_norm(b: GraphBuilder, x: Value) -> Value:
    """Add (skip), optional Add of a 1-D bias, LayerNormalization (skip_layer_norm_fusion.cc:
    3-D operands of one shape); the norm's axis is sometimes not the last."""
    x = float_view(b, x, NO_DOUBLE)
    dt, h = x.dtype, x.shape[-1]
    if b.rng.random() < 0.6:
        skip = b.op("MatMul", [x, weight(b, (h, h), dt, "MatMul")], dt, x.shape)
    else:
        skip = weight(b, x.shape if b.rng.random() < 0.85 else x.shape[1:], dt, "Add")
    r = b.rng.random()
    if r < 0.3:  # format 1: (x + skip) + bias
        s = binary(b, "Add", binary(b, "Add", x, skip, commute=False),
                   weight(b, (h,), dt, "Add"), commute=False)
    elif r < 0.5:  # format 2: x + (skip + bias)
        s = b.op("Add", [x, binary(b, "Add", skip, weight(b, (h,), dt, "Add"), False)], dt,
                 x.shape)
    else:
        s = binary(b, "Add", x, skip)
    s = tap(b, s, 0.08)
    axis = b.rng.choice([-1, -1, -1, 2, 1, -2])
    return layer_norm_op(b, s, axis, b.rng.random() < 0.8)


def _bias_softmax(b: GraphBuilder, x: Value) -> Value:
    """Add of a mask that broadcasts over the batch axes, then Softmax (bias_softmax_fusion.cc).
    """
    x = float_view(b, x, ANY_FLOAT)
    r = x.rank
    shape = list(x.shape)
    for i in range(r - 1):
        if b.rng.random() < 0.5:
            shape[i] = 1
    if b.rng.random() < 0.3:
        shape = shape[b.rng.randrange(r):] or shape
    mask = weight(b, tuple(shape), x.dtype, "Add")
    a = tap(b, binary(b, "Add", x, mask), 0.08)
    axis = b.rng.choice([-1, r - 1, -1, 0 if r > 1 else -1]) if b.opset >= 13 else \
        b.rng.choice([r - 1, 1 if r > 1 else 0])
    return b.op("Softmax", [a], x.dtype, a.shape, ("bounded", "nonneg"), axis=axis)


# -- attention ----------------------------------------------------------------------------------
def _bert_attention(b: GraphBuilder, x: Value) -> Value:
    """BERT self-attention after a LayerNormalization: Q, K, V MatMul + Add, Reshape to heads,
    Transpose, Q.K^T / sqrt(head size), the additive mask (Unsqueeze, Unsqueeze, Cast, 1 - m,
    * -10000), Softmax, MatMul with V, Transpose, Reshape, output projection and the residual
    Add (attention_fusion.cc, attention_fusion_helper.h)."""
    bsz, seq, _ = x.shape
    heads, head = b.rng.choice([1, 2, 2]), b.rng.choice([2, 4])
    hidden = heads * head
    ln = layer_norm_op(b, matmul(b, x, hidden), -1, beta=True)

    def dense(v: Value) -> Value:
        m = b.op("MatMul", [v, weight(b, (hidden, hidden), FLOAT, "MatMul")], FLOAT, v.shape)
        return b.op("Add", [m, weight(b, (hidden,), FLOAT, "Add")], FLOAT, v.shape)

    def split_heads(v: Value, perm: list[int]) -> Value:
        r = b.op("Reshape", [v, ints(b, [0, 0, heads, head], "Reshape")], FLOAT,
                 (bsz, seq, heads, head))
        return b.op("Transpose", [r], FLOAT, tuple(r.shape[i] for i in perm), perm=perm)

    q = split_heads(dense(ln), [0, 2, 1, 3])
    k = split_heads(dense(ln), [0, 2, 3, 1])
    v = split_heads(dense(ln), [0, 2, 1, 3])
    qk = b.op("MatMul", [q, k], FLOAT, (bsz, heads, seq, seq))
    scores = b.op("Div", [qk, const(b, near(b, math.sqrt(head)), FLOAT, ())], FLOAT, qk.shape)
    if b.rng.random() < 0.85:
        kind = INT64 if b.rng.random() < 0.8 else FLOAT
        mask = b.graph_input(kind, (bsz, seq))
        b.pool.remove(mask)
        u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, mask, [1]), [2])
        if kind != FLOAT:
            u = b.op("Cast", [u], FLOAT, u.shape, to=FLOAT)
        m = b.op("Mul", [b.op("Sub", [const(b, 1.0, FLOAT, ()), u], FLOAT, u.shape),
                         const(b, -10000.0, FLOAT, ())], FLOAT, u.shape)
        scores = b.op("Add", [scores, m], FLOAT, scores.shape)
    p = tap(b, b.op("Softmax", [scores], FLOAT, scores.shape, ("bounded", "nonneg"),
                    axis=b.rng.choice([3, -1])), 0.05)
    ctx = b.op("MatMul", [p, v], FLOAT, (bsz, heads, seq, head))
    t = b.op("Transpose", [ctx], FLOAT, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    r = b.op("Reshape", [t, ints(b, [0, 0, hidden], "Reshape")], FLOAT, (bsz, seq, hidden))
    return b.op("Add", [dense(r), ln], FLOAT, ln.shape)


def _squeeze(b: GraphBuilder, x: Value, axis: int) -> Value:
    return b.op("Squeeze", [x, ints(b, [axis], "Squeeze")], x.dtype,
                x.shape[:axis] + x.shape[axis + 1:])


def _packed_attention(b: GraphBuilder, x: Value) -> Value:
    """Attention over a feature map with one packed QKV MatMul (the MobileCLIP form that
    attention_fusion.cc turns into MultiHeadAttention): a channel projection to the hidden
    size, Reshape to (B, C, HW), Transpose, MatMul by a (C, 3C) weight, Reshape to
    (B, S, 3, N, H), Split, Transpose/Squeeze per branch, scale Mul on Q, Softmax(-1),
    MatMul with V, Transpose, Reshape and the output projection (MatMul + Add, or Gemm
    between Reshapes)."""
    bsz = x.shape[0]
    heads, head = b.rng.choice([1, 2, 2]), b.rng.choice([2, 4])
    hidden = heads * head
    channels_last = b.op("Transpose", [x], FLOAT, (bsz, *x.shape[2:], x.shape[1]),
                         perm=[0, 2, 3, 1])
    y = b.op("Transpose", [matmul(b, channels_last, hidden)], FLOAT,
             (bsz, hidden, *x.shape[2:]), perm=[0, 3, 1, 2])
    seq = int(math.prod(x.shape[2:]))
    r = b.op("Reshape", [y, ints(b, [0, 0, -1], "Reshape")], FLOAT, (bsz, hidden, seq))
    t = b.op("Transpose", [r], FLOAT, (bsz, seq, hidden), perm=[0, 2, 1])
    qkv = b.op("MatMul", [t, weight(b, (hidden, 3 * hidden), FLOAT, "MatMul")], FLOAT,
               (bsz, seq, 3 * hidden))
    lead = b.rng.choice([[bsz, seq], [0, 0], [0, -1]])  # static, copied or inferred dims
    five = b.op("Reshape", [qkv, ints(b, [*lead, 3, heads, head], "Reshape")], FLOAT,
                (bsz, seq, 3, heads, head))
    q5, k5, v5 = shape_ops.split(b, five, 2, [1, 1, 1])
    perm = [2, 0, 3, 1, 4]

    def heads_first(v: Value) -> Value:
        tr = b.op("Transpose", [v], FLOAT, tuple(v.shape[i] for i in perm), perm=perm)
        return _squeeze(b, tr, 0)

    q = binary(b, "Mul", heads_first(q5), const(b, near(b, head ** -0.5), FLOAT, ()))
    k = _squeeze(b, k5, 2)
    k = b.op("Transpose", [k], FLOAT, (bsz, heads, head, seq), perm=[0, 2, 3, 1])
    v = heads_first(v5)
    scores = b.op("MatMul", [q, k], FLOAT, (bsz, heads, seq, seq))
    p = tap(b, b.op("Softmax", [scores], FLOAT, scores.shape, ("bounded", "nonneg"),
                    axis=-1 if b.rng.random() < 0.9 else 3), 0.05)
    ctx = b.op("MatMul", [p, v], FLOAT, (bsz, heads, seq, head))
    ctx = b.op("Transpose", [ctx], FLOAT, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    if b.rng.random() < 0.7:
        out = b.op("Reshape", [ctx, ints(b, [*lead, hidden], "Reshape")], FLOAT,
                   (bsz, seq, hidden))
        m = b.op("MatMul", [out, weight(b, (hidden, hidden), FLOAT, "MatMul")], FLOAT,
                 out.shape)
        return binary(b, "Add", m, weight(b, (hidden,), FLOAT, "Add"))
    flat = b.op("Reshape", [ctx, ints(b, [b.rng.choice([-1, bsz * seq]), hidden], "Reshape")],
                FLOAT, (bsz * seq, hidden))
    g = b.op("Gemm", [flat, weight(b, (hidden, hidden), FLOAT, "Gemm"),
                      weight(b, (hidden,), FLOAT, "Gemm")], FLOAT, flat.shape)
    return b.op("Reshape", [g, ints(b, [bsz, seq, hidden], "Reshape")], FLOAT,
                (bsz, seq, hidden))  # a static shape: Gemm's rows no longer carry the batch


def _attention(b: GraphBuilder, x: Value) -> Value:
    """One of the attention blocks: BERT (3-D input) or packed-QKV MobileCLIP (4-D)."""
    return _bert_attention(b, x) if x.rank == 3 else _packed_attention(b, x)


MOTIFS = (
    ort_motif("ort-gelu-erf", ("GeluFusionL1", "GeluFusionL2"), _gelu_erf,
              dtypes=FLOAT_INPUT, ranks=(1, 4), since=9,
              anchors=("Erf", "Div", "Mul")),
    ort_motif("ort-gelu-tanh", ("FastGeluFusion",), _gelu_tanh, dtypes=FLOAT_INPUT, ranks=(1, 4),
              anchors=("Tanh", "Pow", "Mul")),
    ort_motif("ort-quick-gelu", ("QuickGeluFusion", "SwiGluFusion"), _quick_gelu,
              dtypes=FLOAT_INPUT, ranks=(1, 4),
              anchors=("Sigmoid", "Mul")),
    ort_motif("ort-bias-gelu", ("BiasGeluFusion",), _bias_gelu, dtypes=FLOAT_INPUT, ranks=(1, 4),
              since=20,
              anchors=("Add", "Gelu")),
    ort_motif("ort-layer-norm", ("LayerNormFusionL1", "LayerNormFusionL2"), _layer_norm,
              dtypes=FLOAT_INPUT, ranks=(1, 4),
              anchors=("ReduceMean", "Sub", "Pow", "Sqrt", "Div")),
    ort_motif("ort-rms-norm", ("SimplifiedLayerNormFusion",), _rms_norm, dtypes=FLOAT_INPUT,
              ranks=(1, 4),
              anchors=("Pow", "ReduceMean", "Sqrt", "Div")),
    ort_motif("ort-skip-layer-norm", ("SkipLayerNormFusion", "BiasSkipLayerNormFusion"),
              _skip_layer_norm, dtypes=FLOAT_INPUT, ranks=(3, 3), since=17,
              anchors=("Add", "LayerNormalization")),
    ort_motif("ort-bias-softmax", ("BiasSoftmaxFusion",), _bias_softmax, dtypes=FLOAT_INPUT,
              ranks=(2, 4),
              anchors=("Add", "Softmax")),
    ort_motif("ort-attention", ("AttentionFusion",), _attention, ranks=(3, 4), since=17,
              anchors=("MatMul", "Softmax", "Transpose"),
              pins=(("Transpose|attr:perm", ("nondefault",),
                     "the attention pattern's Transposes move the head, sequence and key axes "
                     "(perm 0,2,1,3 or 0,2,3,1, say): without perm a Transpose reverses every "
                     "axis, which the MatMul after it does not take"),)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 70
