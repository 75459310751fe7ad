"""Motifs for the convolution fusions of onnxslim (``core/pattern/fusion/convbn.py``,
``convadd.py``, ``convmul.py``, ``padconv.py``: ``FusionConvBN``, ``FusionConvTransposeBN``,
``FusionConvAdd``, ``FusionConvTransposeAdd``, ``FusionConvMul``, ``FusionConvTransposeMul``,
``FusionPadConv``) and their onnx-simplifier counterparts (``fuse_bn_into_conv``,
``fuse_add_bias_into_conv``, ``fuse_mul_into_conv``, ``fuse_preceding_mul_into_conv``,
``fuse_pad_into_conv``).

Beyond the textbook pattern each motif draws what the specs allow and the rewrites must check:
Conv and ConvTranspose of 1-D and 2-D data, float or float16, grouped (depthwise) or not,
with or without bias, strides, dilations, pads, ``auto_pad``, ConvTranspose
``output_padding``; scales and biases shaped per channel (``[C, 1, 1]``, ``[1, C, 1, 1]``),
as a scalar, as a rank-expanding ``[1, 1, C, 1, 1]`` or ``[1, 1, 1, 1, 1]`` (the result
gains a dim), or along the last axis (``[W]`` where W equals C: no channel scale at all);
constants first or second; Pad in the attribute form (opset < 11), the input form with
``constant_value`` and the ``axes`` input (opset 18), modes, negative pads; a second
consumer of the intermediate the fusion removes. A Pad-Conv draw chains one to three of
them (the fusion's checks tell apart more than one pair shows).
"""

from __future__ import annotations

import math

from generators.builder import GraphBuilder
from generators.motifs.helpers import Emit, ints, swap, tap
from generators.motifs.onnxslim.symbolic import repeated
from generators.motifs.shaped import shaped_motif
from generators.ops import nn
from generators.schema.levels import NONDEFAULT
from generators.values import FLOAT, FLOAT16, Value, broadcast

#: element types Conv and ConvTranspose run in on onnxruntime's CPU execution provider.
CONV_TYPES = (FLOAT, FLOAT, FLOAT, FLOAT16)
_CONV_INPUT = frozenset({FLOAT, FLOAT16})


def _where(b: GraphBuilder) -> str:
    """Where one pattern's weights live, drawn once per pattern (a fusion needs all of them
    constant): initializers mostly, Constant nodes (constant only to a tool that folds them
    first) or overridable graph inputs at times."""
    r = b.rng.random()
    return "input" if r < 0.05 else ("constant" if r < 0.2 else "initializer")


def weight(b: GraphBuilder, shape: tuple[int, ...], dtype: int, op: str,
           positive: bool = False) -> Value:
    """A random weight at the placement of the pattern being emitted (:func:`placed`)."""
    return b.random_weight(shape, dtype, op, positive=positive)


def placed(emit: Emit) -> Emit:
    """Wrap ``emit`` so that all weights of one pattern share one placement (:func:`_where`),
    the builder's own one restored afterwards."""

    def wrapped(b: GraphBuilder, x: Value) -> Value | None:
        saved, b.weights = b.weights, _where(b)
        try:
            return emit(b, x)
        finally:
            b.weights = saved

    return wrapped


def _as_conv_dtype(b: GraphBuilder, x: Value) -> Value:
    dtype = b.rng.choice(CONV_TYPES)
    return x if dtype == x.dtype else b.op("Cast", [x], dtype, x.shape, x.props, to=dtype)


def conv(b: GraphBuilder, x: Value, channels: int | None = None) -> Value:
    """A Conv of (N, C, spatial...) ``x``: random window (:func:`generators.ops.nn.window`),
    sometimes ``auto_pad`` SAME_UPPER or VALID instead of pads, grouped or depthwise at
    random, bias at random, ``channels`` output channels (random when None; rounded to the
    group)."""
    n, c, *spatial = x.shape
    auto = b.rng.choice([None] * 6 + ["SAME_UPPER", "VALID"])
    w = nn.window(b, tuple(spatial), pad=auto is None, dilate=auto != "SAME_UPPER")
    group = b.rng.choice([1, 1, 1, c]) if c > 1 else 1
    m = channels or group * b.rng.randint(1, 3)
    if m % group:
        group = 1
    out = list(w["out"])
    if auto == "SAME_UPPER":
        out = [-(-d // s) for d, s in zip(spatial, w["strides"], strict=True)]
    inputs = [x, weight(b, (m, c // group, *w["kernel_shape"]), x.dtype, "Conv")]
    if b.rng.random() < 0.5:
        inputs.append(weight(b, (m,), x.dtype, "Conv"))
    attrs = {"kernel_shape": w["kernel_shape"] if b.rng.random() < 0.8 else None,
             "strides": w["strides"], "group": group if group > 1 else None,
             "dilations": w["dilations"] if auto != "SAME_UPPER" else None}
    if auto is None:
        attrs["pads"] = w["pads"] if any(w["pads"]) or b.rng.random() < 0.5 else None
    else:
        attrs["auto_pad"] = auto
    return b.op("Conv", inputs, x.dtype, (n, m, *out), **attrs)


def conv_transpose(b: GraphBuilder, x: Value) -> Value:
    """A ConvTranspose of (N, C, spatial...) ``x``: kernel 1-3, stride 1-2, an
    ``output_padding`` below the stride, pads that keep the output non-empty, grouped at
    random (weight ``(C, M / group, k...)``), bias at random."""
    n, c, *spatial = x.shape
    group = c if c > 1 and b.rng.random() < 0.3 else 1
    per_group = b.rng.randint(1, 2)
    ks = [b.rng.randint(1, 3) for _ in spatial]
    ss = [b.rng.choice([1, 2]) for _ in spatial]
    extra = [b.rng.randrange(s) for s in ss]
    pads = [b.rng.choice([0, 0, 1]) if k > 1 else 0 for k in ks] * 2
    r = len(spatial)

    def size(pad: list[int]) -> list[int]:
        return [(d - 1) * s + k + e - pad[i] - pad[i + r]
                for i, (d, s, k, e) in enumerate(zip(spatial, ss, ks, extra, strict=True))]

    out = size(pads)
    if min(out) < 1:
        pads = [0] * (2 * r)
        out = size(pads)
    inputs = [x, weight(b, (c, per_group, *ks), x.dtype, "ConvTranspose")]
    if b.rng.random() < 0.5:
        inputs.append(weight(b, (per_group * group,), x.dtype, "ConvTranspose"))
    return b.op("ConvTranspose", inputs, x.dtype, (n, per_group * group, *out),
                kernel_shape=ks, strides=ss, pads=pads if any(pads) else None,
                output_padding=extra if any(extra) else None,
                group=group if group > 1 else None)


def _producer(b: GraphBuilder, x: Value, transposed: bool) -> Value:
    x = _as_conv_dtype(b, x)
    return conv_transpose(b, x) if transposed else conv(b, x)


def _channel_shape(b: GraphBuilder, y: Value) -> tuple[int, ...]:
    """A constant's shape for a per-channel operation on (N, C, spatial...) ``y``, drawn from
    the legal ones and the near misses: per channel at the ranks exporters use, a scalar or
    one-element tensor, rank-expanding (the result gains a dim), along the last axis."""
    c, rest = y.shape[1], y.rank - 2
    shapes = [(c,) + (1,) * rest, (1, c) + (1,) * rest, (), (1,), (1, 1, c) + (1,) * rest,
              (1,) * (y.rank + 1), (y.shape[-1],), (1, c) + (1,) * (rest - 1) + (y.shape[-1],)]
    return b.rng.choice(shapes[:3] * 3 + shapes[3:])


def _conv_affine(op: str, transposed: bool) -> Emit:
    def emit(b: GraphBuilder, x: Value) -> Value:
        y = tap(b, _producer(b, x, transposed), 0.15)
        const = weight(b, _channel_shape(b, y), y.dtype, op, positive=op == "Mul")
        return b.op(op, swap(b, y, const, 0.2), y.dtype, broadcast(y.shape, const.shape))
    return emit


def _conv_last_axis_scale(b: GraphBuilder, x: Value) -> Value:
    """A Conv with as many output channels as its output is wide, times a ``[W]`` constant:
    a scale along the last axis that has the length of a channel scale. A schema row that
    asks for a group gets the input's channels repeated ``W`` times where they share no
    divisor with ``W``."""
    x = _as_conv_dtype(b, x)
    probe = nn.window(b, tuple(x.shape[2:]), pad=False)
    width = probe["out"][-1]
    if b.planned("Conv", "attr:group") == NONDEFAULT and width > 1 and \
            math.gcd(x.shape[1], width) == 1:  # input channels a group can divide with width
        x = b.op("Concat", [x] * width, x.dtype, (x.shape[0], x.shape[1] * width,
                                                  *x.shape[2:]), axis=1)
    n, c = x.shape[:2]
    wgt = weight(b, (width, c, *probe["kernel_shape"]), x.dtype, "Conv")
    y = b.op("Conv", [x, wgt], x.dtype, (n, width, *probe["out"]),
             kernel_shape=probe["kernel_shape"], strides=probe["strides"],
             dilations=probe["dilations"])
    op = b.rng.choice(["Mul", "Mul", "Add"])
    const = weight(b, (width,), y.dtype, op, positive=True)
    return b.op(op, swap(b, y, const, 0.2), y.dtype, y.shape)


def _bn_inputs(b: GraphBuilder, c: int, dtype: int) -> list[Value]:
    """BatchNormalization's scale, bias, mean and variance, each of ``c`` channels: of the
    input's ``dtype``, or from opset 15 at times scale and bias of one float type (``T1``)
    and mean and variance of another (``T2``), as its schema allows and onnxruntime runs
    (float and float16 in any mix). A fold into the producer's weight must then cast them."""
    scale_type = mean_type = dtype
    if b.opset >= 15 and b.rng.random() < 0.3:
        scale_type, mean_type = b.rng.choice(sorted(_CONV_INPUT)), b.rng.choice(sorted(_CONV_INPUT))
    return [weight(b, (c,), scale_type, "BatchNormalization", positive=True),
            weight(b, (c,), scale_type, "BatchNormalization"),
            weight(b, (c,), mean_type, "BatchNormalization"),
            weight(b, (c,), mean_type, "BatchNormalization", positive=True)]


def _conv_bn(transposed: bool) -> Emit:
    def emit(b: GraphBuilder, x: Value) -> Value:
        y = tap(b, _producer(b, x, transposed), 0.15)
        attrs = {"epsilon": b.rng.choice([None, 1e-5, 1e-3, 0.1]),
                 "momentum": b.rng.choice([None, 0.9])}
        if b.opset >= 14 and b.rng.random() < 0.3:
            attrs["training_mode"] = 0
        return b.op("BatchNormalization", [y, *_bn_inputs(b, y.shape[1], y.dtype)], y.dtype,
                    y.shape, **attrs)
    return emit


def _preceding_mul(b: GraphBuilder, x: Value) -> Value:
    """``Conv(x * S)``: S per input channel, scalar, or along the last axis of x."""
    x = _as_conv_dtype(b, x)
    c, rest = x.shape[1], x.rank - 2
    fitting = [shape for shape in [(c,) + (1,) * rest, (1, c) + (1,) * rest, (), (1,),
                                   (x.shape[-1],), (c,)]
               if _keeps(x.shape, shape)]
    s = weight(b, b.rng.choice(fitting), x.dtype, "Mul", positive=True)
    scaled = tap(b, b.op("Mul", swap(b, x, s, 0.2), x.dtype, broadcast(x.shape, s.shape)),
                 0.1)
    return conv(b, scaled)


def _keeps(shape: tuple[int, ...], other: tuple[int, ...]) -> bool:
    """Whether broadcasting ``other`` against ``shape`` leaves ``shape`` as it is."""
    try:
        return broadcast(shape, other) == shape
    except ValueError:
        return False


def _pads(b: GraphBuilder, x: Value) -> tuple[list[int], list[int] | None]:
    """Pad's ``pads`` (and ``axes`` at opset 18 half the time): spatial pads mostly, a
    channel pad or a negative (cropping) pad sometimes."""
    r = x.rank
    begin = [0, 0] + [b.rng.choice([0, 1, 1, 2]) for _ in range(r - 2)]
    end = [0, 0] + [b.rng.choice([0, 1, 2]) for _ in range(r - 2)]
    roll = b.rng.random()
    if roll < 0.1:
        begin[1] = 1
    elif roll < 0.3 and x.shape[-1] > 1:
        end[-1] = -1
    if b.opset >= 18 and b.rng.random() < 0.5:
        axes = list(range(2, r))
        if b.rng.random() < 0.5:
            axes = [a - r for a in axes]
        return begin[2:] + end[2:], axes
    return begin + end, None


def _pad_conv(b: GraphBuilder, x: Value) -> Value:
    """Pad then Conv (FusionPadConv, fuse_pad_into_conv)."""
    x = _as_conv_dtype(b, x) if b.opset >= 11 else x
    pads, axes = _pads(b, x)
    r = x.rank
    full = pads if axes is None else [0, 0, *pads[:r - 2], 0, 0, *pads[r - 2:]]
    out = tuple(d + full[i] + full[i + r] for i, d in enumerate(x.shape))
    mode = b.rng.choice(["constant"] * 4 + ["reflect", "edge"])
    if mode == "reflect" and any(p >= d for p, d in zip(full, x.shape * 2, strict=True)):
        mode = "constant"
    value = b.rng.choice([None, None, 0.0, 0.5])
    if b.opset < 11:
        padded = b.op("Pad", [x], x.dtype, out, pads=full, mode=mode, value=value)
    else:
        inputs = [x.name, ints(b, pads, "Pad").name]
        if value is not None:
            inputs.append(b.scalar(value, x.dtype, "Pad").name)
        elif axes is not None:
            inputs.append("")
        if axes is not None:
            inputs.append(ints(b, axes, "Pad").name)
        padded = b.op("Pad", inputs, x.dtype, out, mode=mode if mode != "constant" or
                      b.rng.random() < 0.3 else None)
    return conv(b, tap(b, padded, 0.2))


_IN = {"dtypes": _CONV_INPUT, "ranks": (3, 4)}
MOTIFS = (
    shaped_motif("slim-conv-bn", ("FusionConvBN", "fuse_bn_into_conv"),
                 placed(_conv_bn(False)), **_IN,
                 anchors=("Conv", "BatchNormalization")),
    shaped_motif("slim-convtranspose-bn", ("FusionConvTransposeBN",),
                 placed(_conv_bn(True)), **_IN,
                 anchors=("ConvTranspose", "BatchNormalization")),
    shaped_motif("slim-conv-add", ("FusionConvAdd", "fuse_add_bias_into_conv"),
                 placed(_conv_affine("Add", False)), **_IN,
                 anchors=("Conv", "Add")),
    shaped_motif("slim-convtranspose-add", ("FusionConvTransposeAdd",),
                 placed(_conv_affine("Add", True)), **_IN,
                 anchors=("ConvTranspose", "Add")),
    shaped_motif("slim-conv-mul", ("FusionConvMul", "fuse_mul_into_conv"),
                 placed(_conv_affine("Mul", False)), **_IN,
                 anchors=("Conv", "Mul")),
    shaped_motif("slim-convtranspose-mul", ("FusionConvTransposeMul",),
                 placed(_conv_affine("Mul", True)), **_IN,
                 anchors=("ConvTranspose", "Mul")),
    shaped_motif("slim-conv-last-axis-scale", ("FusionConvMul", "FusionConvAdd",
                                               "fuse_mul_into_conv", "fuse_add_bias_into_conv"),
                 placed(_conv_last_axis_scale), **_IN,
                 anchors=("Conv", "Mul", "Add")),
    shaped_motif("sim-preceding-mul-conv", ("fuse_preceding_mul_into_conv",),
                 placed(_preceding_mul), **_IN,
                 anchors=("Mul", "Conv")),
    shaped_motif("slim-pad-conv", ("FusionPadConv", "fuse_pad_into_conv",
                                   "dead_node_elimination"),
                 repeated(placed(_pad_conv), 1, 3), **_IN,
                 anchors=("Pad", "Conv")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 160
