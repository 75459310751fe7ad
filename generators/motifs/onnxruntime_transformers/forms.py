"""Pattern builders for the element-wise and normalization fusions of onnxruntime's Python
transformer optimizer (``onnxruntime/transformers/``): every spelling of GELU and of layer
normalization the fusions know, one spelling per draw, and near-misses of each. The motifs
``tb-bias-gelu`` and ``tb-bias-skip-layer-norm`` (blocks.py) draw them half the time.

Not a motif family: it exports no ``MOTIFS``.

- :func:`gelu_forms` (fusion_gelu.py, fusion_fastgelu.py, fusion_quickgelu.py,
  fusion_biasgelu.py): GELU with Erf in PyTorch's two forms (the 0.5
  on the input or on the product), Keras' (1/sqrt(2) as Div by Sqrt(2)) and TensorFlow's (Mul
  by 0.7071), GELU with Tanh in the four forms of fusion_fastgelu.py (Pow 3 with the 0.5 on
  the input or on the product, OpenAI's x * (1 + 0.044715 x * x), PyTorch's x * x * x), and
  x * Sigmoid(1.702 x). The input is sometimes a MatMul plus a 1-D bias, so the bias fusion
  meets the fused Gelu or FastGelu.
- :func:`layer_norm_forms` (fusion_layernorm.py, fusion_simplified_layernorm.py,
  fusion_skiplayernorm.py): the
  decomposed layer normalization with Pow 2 or Mul x*x, with Cast to float and back
  (mixed precision), TensorFlow's form (the mean subtracted after the scale), the RMS form
  (x / sqrt(mean(x^2) + eps) * gamma, the reciprocal spelled Div or Reciprocal, Cast or
  not), each sometimes behind a residual Add (the skip fusions).

The constants the fusions compare (sqrt(2), 0.7071, 0.5, 1, 0.044715, 0.7978, 3, 1.702, the
epsilon) sit on either side of their op and are sometimes just off (:func:`near`); an
intermediate sometimes has a second consumer or is a graph output (:func:`tap`), which the
fusions must respect. Element types are float32 and float16, both with CPU kernels for every
op here.
"""

from __future__ import annotations

import math

from generators.builder import GraphBuilder
from generators.motifs.helpers import (
    binary,
    const,
    float_view,
    near,
    tap,
    weight,
)
from generators.ops.reduce import reduce
from generators.values import FLOAT, FLOAT16, Value

SQRT2 = math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _c(b: GraphBuilder, value: float, x: Value, p: float = 0.06) -> Value:
    """A scalar-ish constant of x's type near ``value`` (just off it with probability p)."""
    return const(b, near(b, value, p), x.dtype)


def _mul(b: GraphBuilder, x: Value, y: Value) -> Value:
    """x * y with the operands in random order."""
    return binary(b, "Mul", x, y)


def _gelu_root(b: GraphBuilder, x: Value) -> Value:
    """The GELU input: x, or (a third of the time, rank >= 2) MatMul of x by a weight plus a
    1-D bias (sometimes a 2-D bias the bias fusion must refuse)."""
    if x.rank < 2 or b.rng.random() >= 0.35:
        return x
    n = b.rng.choice([x.shape[-1], 4, 6])
    m = b.op("MatMul", [x, weight(b, (x.shape[-1], n), x.dtype, "MatMul")], x.dtype,
             (*x.shape[:-1], n))
    bias = b.random_weight((n,) if b.rng.random() < 0.9 else (1, n), x.dtype, "Add")
    return binary(b, "Add", m, bias)


def _erf_gelu(b: GraphBuilder, x: Value, form: str) -> Value:
    """GELU with Erf in fusion_gelu.py's forms: ``erf-pt1`` (x*0.5) * (1 + erf(x/sqrt2)),
    ``erf-pt2`` (x * (1 + erf(x/sqrt2))) * 0.5, ``erf-keras`` ((1 + erf(x / s)) * 0.5) * x
    with s sqrt2 or Sqrt(2), ``erf-tf`` ((1 + erf(x * 0.7071)) * 0.5) * x."""
    dt = x.dtype
    if form == "erf-tf":
        inner = _mul(b, x, _c(b, 1 / SQRT2, x))
    elif form == "erf-keras" and b.rng.random() < 0.5:
        s = b.op("Sqrt", [_c(b, 2.0, x)], dt, ())
        inner = b.op("Div", [x, s], dt, x.shape)
    else:
        inner = b.op("Div", [x, _c(b, SQRT2, x)], dt, x.shape)
    e = tap(b, b.op("Erf", [inner], dt, x.shape, ("bounded",)), 0.04)
    one_plus = tap(b, binary(b, "Add", e, _c(b, 1.0, x)), 0.04)
    if form == "erf-pt1":
        return _mul(b, one_plus, tap(b, _mul(b, x, _c(b, 0.5, x)), 0.04))
    if form == "erf-pt2":
        return _mul(b, tap(b, _mul(b, x, one_plus), 0.04), _c(b, 0.5, x))
    return _mul(b, tap(b, _mul(b, one_plus, _c(b, 0.5, x)), 0.04), x)


def _tanh_gelu(b: GraphBuilder, x: Value, form: str) -> Value:
    """GELU with Tanh in fusion_fastgelu.py's forms: ``tanh-1`` Pow(x, 3) and (x*0.5) * (1 +
    tanh), ``tanh-2`` the same with ((1 + tanh) * 0.5) * x, ``tanh-openai`` tanh(0.7978 x *
    (1 + 0.044715 x * x)), ``tanh-torch`` x*x*x and ((1 + tanh) * x) * 0.5."""
    dt = x.dtype
    if form == "tanh-openai":
        sq = _mul(b, _mul(b, x, _c(b, 0.044715, x)), x)
        arg = _mul(b, binary(b, "Add", sq, _c(b, 1.0, x)), _mul(b, x, _c(b, SQRT_2_OVER_PI, x)))
    else:
        if form == "tanh-torch":
            cube = _mul(b, _mul(b, x, x), x)
        else:
            cube = b.op("Pow", [x, _c(b, 3.0, x)], dt, x.shape)
        arg = _mul(b, binary(b, "Add", _mul(b, cube, _c(b, 0.044715, x)), x),
                   _c(b, SQRT_2_OVER_PI, x))
    t = tap(b, b.op("Tanh", [arg], dt, x.shape, ("bounded",)), 0.04)
    one_plus = tap(b, binary(b, "Add", t, _c(b, 1.0, x)), 0.04)
    if form == "tanh-1" or form == "tanh-openai":
        return _mul(b, one_plus, tap(b, _mul(b, x, _c(b, 0.5, x)), 0.04))
    if form == "tanh-2":
        return _mul(b, tap(b, _mul(b, one_plus, _c(b, 0.5, x)), 0.04), x)
    return _mul(b, tap(b, _mul(b, x, one_plus), 0.04), _c(b, 0.5, x))


def _quick_gelu(b: GraphBuilder, x: Value) -> Value:
    """x * Sigmoid(x * 1.702) (fusion_quickgelu.py reads the Mul's second input as the
    constant and the outer Mul's first as x); rarely the operands swapped."""
    dt = x.dtype
    c = _c(b, 1.7021484375, x, 0.1)
    first = b.op("Mul", [x, c] if b.rng.random() < 0.9 else [c, x], dt, x.shape)
    s = b.op("Sigmoid", [first], dt, x.shape, ("bounded",))
    return b.op("Mul", [x, s] if b.rng.random() < 0.9 else [s, x], dt, x.shape)


GELU_FORMS = ("erf-pt1", "erf-pt2", "erf-keras", "erf-tf", "tanh-1", "tanh-2", "tanh-openai",
              "tanh-torch", "quick")


def gelu_forms(b: GraphBuilder, x: Value) -> Value:
    """One of :data:`GELU_FORMS` on ``x`` (float32 or float16, any rank) or on a biased
    projection of it (:func:`_gelu_root`); returns the GELU's output, of the root's shape."""
    x = float_view(b, x, (FLOAT, FLOAT, FLOAT16))
    root = _gelu_root(b, x)
    form = b.rng.choice(GELU_FORMS)
    if form == "quick":
        return _quick_gelu(b, root)
    if form.startswith("erf"):
        return _erf_gelu(b, root, form)
    return _tanh_gelu(b, root, form)


# -- layer normalization ----------------------------------------------------------------------
def _mean(b: GraphBuilder, x: Value) -> Value:
    """ReduceMean over the last axis, keepdims 1 (axes -1 or rank-1)."""
    axes = [-1] if b.opset >= 11 and b.rng.random() < 0.7 else [x.rank - 1]
    return reduce(b, "ReduceMean", x, axes=axes, keepdims=1)


def _square(b: GraphBuilder, d: Value, mul: float = 0.05) -> Value:
    """d^2 as Pow(d, 2), or Mul(d, d) with probability ``mul`` (fusion_simplified_layernorm.py
    indexes the Mul node itself where it means its inputs and raises on that form)."""
    if b.rng.random() >= mul:
        return b.op("Pow", [d, _c(b, 2.0, d)], d.dtype, d.shape, ("nonneg",))
    return b.op("Mul", [d, d], d.dtype, d.shape, ("nonneg",))


def _eps(b: GraphBuilder, v: Value) -> Value:
    """Add of epsilon (1e-5, 1e-6 or 1e-12; float16 keeps 1e-5)."""
    e = 1e-5 if v.dtype == FLOAT16 else b.rng.choice([1e-5, 1e-6, 1e-12])
    shape = () if b.rng.random() < 0.95 else (1,)  # see layer_norm_forms
    return binary(b, "Add", v, const(b, e, v.dtype, shape))


def _layer_norm(b: GraphBuilder, x: Value, form: str) -> Value:
    """Decomposed layer normalization of x over its last axis in ``form``: ``ln`` (Sub, Pow,
    ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta), ``ln-cast`` (the same with x cast
    to float after the Sub and the quotient cast back), ``ln-tf`` (TensorFlow's: x * (gamma /
    sqrt(var + eps)) + (beta - mean * gamma / sqrt(var + eps))), ``rms`` (x / sqrt(mean(x^2)
    + eps) * gamma, or x * Reciprocal(...)), ``rms-cast`` (the RMS form in float of a float16
    x, cast back before gamma)."""
    dt, h = x.dtype, x.shape[-1]
    gamma = b.random_weight((h,), dt, "Mul", positive=True)
    if form.startswith("rms"):
        src = x
        if form == "rms-cast":
            src = b.op("Cast", [x], FLOAT, x.shape, to=FLOAT)
        var = _mean(b, _square(b, src))
        s = b.op("Sqrt", [_eps(b, var)], src.dtype, var.shape, ("nonneg",))
        if b.rng.random() < 0.5:
            n = b.op("Div", [src, s], src.dtype, src.shape)
        else:
            n = _mul(b, src, b.op("Reciprocal", [s], src.dtype, s.shape))
        if form == "rms-cast":
            n = b.op("Cast", [n], dt, n.shape, to=dt)
        return binary(b, "Mul", n, gamma)
    beta = b.random_weight((h,), dt, "Add")
    mean = tap(b, _mean(b, x), 0.03)
    if form == "ln-tf":
        d = b.op("Sub", [x, mean], dt, x.shape)
        var = _mean(b, _square(b, d, 0.9))
        rs = b.op("Sqrt", [_eps(b, var)], dt, var.shape, ("nonneg",))
        r = b.op("Reciprocal", [rs], dt, rs.shape)
        scale = b.op("Mul", [r, gamma], dt, x.shape)
        # the fusion reads x as the first input of x * scale: rarely the other order
        swapped = b.rng.random() < 0.1
        shift = b.op("Sub", [beta, b.op("Mul", [mean, scale], dt, x.shape)], dt, x.shape)
        xs = b.op("Mul", [scale, x] if swapped else [x, scale], dt, x.shape)
        return b.op("Add", [xs, shift], dt, x.shape)
    d = tap(b, b.op("Sub", [x, mean], dt, x.shape), 0.03)
    if form == "ln-cast":
        d = b.op("Cast", [d], FLOAT, d.shape, to=FLOAT)
    var = _mean(b, _square(b, d))
    s = b.op("Sqrt", [_eps(b, var)], d.dtype, var.shape, ("nonneg",))
    n = b.op("Div", [d, s], d.dtype, d.shape)
    if form == "ln-cast":
        n = b.op("Cast", [n], dt, n.shape, to=dt)
    return binary(b, "Add", binary(b, "Mul", n, gamma), beta)


NORM_FORMS = ("ln", "ln", "ln-cast", "ln-tf", "rms", "rms", "rms-cast")


def layer_norm_forms(b: GraphBuilder, x: Value) -> Value:
    """One of :data:`NORM_FORMS` over the last axis of x (float32 or float16, rank 2-4),
    mostly of x plus a residual (:func:`_skip`; the skip fusions' Add, whose sum sometimes
    has a second consumer), else of x. The epsilon is a scalar but rarely a (1,) tensor,
    which the fusions pass to float() (a TypeError under numpy 2)."""
    form = b.rng.choice(NORM_FORMS)
    choices = (FLOAT16,) if form.endswith("cast") else (FLOAT, FLOAT, FLOAT16)
    x = float_view(b, x, choices)
    if b.rng.random() < 0.6:
        x = tap(b, binary(b, "Add", x, _skip(b, x)), 0.15)
    return _layer_norm(b, x, form)


def _skip(b: GraphBuilder, x: Value) -> Value:
    """A residual for x: Sigmoid(x) (x's shape), for a 3-D x its mean over the batch as
    (1, S, H) or (S, H) (the broadcast skips FusionSkipLayerNormalization takes), or rarely
    a constant of x's shape (an initializer input, which the fusion refuses)."""
    r = b.rng.random()
    if r < 0.1:
        return b.random_weight(x.shape, x.dtype, "Add")
    if x.rank == 3 and r < 0.5:
        keep = int(r < 0.3)
        return reduce(b, "ReduceMean", x, axes=[0], keepdims=keep)
    return b.op("Sigmoid", [x], x.dtype, x.shape, ("bounded", "nonneg"))
