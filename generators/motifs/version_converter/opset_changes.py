"""Motifs for onnx's version converter: ops whose form or meaning changed between opsets,
built in the form of the opset the model declares, named by the converter's adapters
(``"<op> <from>-><to>"``, ``fuzzer/targets/version_converter/adapters.py``) that convert
them one step up or down. The version-converter target pins the opset with an
``opset=<from>`` hint, so each motif exists exactly where its ``since``/``until`` say.

What changed (ONNX Changelog.md): Upsample (scales an attribute until 9, an input at 9,
deprecated for Resize at 10); Resize (10: X and scales; 11: roi, sizes,
coordinate_transformation_mode, nearest_mode, cubic; 13: optional roi; 18: antialias,
axes, keep_aspect_ratio_policy; 19: half_pixel_symmetric); Split (sizes an attribute until
13, an input from 13, ``num_outputs`` from 18); Squeeze/Unsqueeze (axes an input from 13,
negative from 11); Reduce* (axes an input from 13 for ReduceSum, from 18 for the rest,
``noop_with_empty_axes``); Pad (attributes until 11; axes at 18; wrap at 19); Clip (bounds
attributes until 11); BatchNormalization (``spatial`` until 9, ``training_mode`` at 14);
Dropout (mask output at 10, ratio and training_mode inputs at 12); Softmax, LogSoftmax,
Hardmax (2-D coercion around ``axis`` until 13, one axis from 13); TopK (k an input at
10, largest and sorted at 11); Slice (attributes until 10); Scatter (ScatterElements at
11); Max, Min, Mean, Sum (broadcasting at 8); MaxPool (Indices and storage_order at 8,
ceil_mode and dilations at 10); GridSample (bilinear/bicubic renamed linear/cubic at
20); subgraphs (If) whose bodies hold such ops; model-local functions whose bodies do.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs import functions
from generators.motifs.fusion import pad
from generators.motifs.helpers import clip, room_for_axis, sealed, slice_op
from generators.motifs.spec import Motif
from generators.ops import control, nn, shape_ops
from generators.ops.reduce import reduce
from generators.ops.spec import axis
from generators.values import FLOAT, INT64, Value

#: the opset range generated models declare (generators.versions).
LOW, HIGH = 7, 21


def adapters(op: str, versions: tuple[int, ...]) -> tuple[str, ...]:
    """Adapter names of ``op`` around the opsets at which its schema changed
    (``versions``): ``v-1->v`` up and ``v->v-1`` down for each."""
    names = []
    for v in versions:
        names += [f"{op} {v - 1}->{v}", f"{op} {v}->{v - 1}"]
    return tuple(names)


def motif(name: str, ops: dict[str, tuple[int, ...]], emit: object, since: int = LOW,
          until: int = 99, ranks: tuple[int, int] = (1, 4),
          anchors: tuple[str, ...] | None = None) -> Motif:
    """A sealed :class:`Motif` named for the adapters of ``ops`` (op -> schema versions);
    its anchor ops are ``anchors``, by default the ops of ``ops`` (the ops the adapters
    rewrite)."""
    passes = tuple(a for op, versions in ops.items() for a in adapters(op, versions))
    return Motif(name, passes, emit=sealed(emit), since=since, until=until, ranks=ranks,
                 anchors=tuple(ops) if anchors is None else anchors)


def _scales(b: GraphBuilder, rank: int) -> list[float]:
    spatial = [float(b.rng.choice([1, 2, 2, 3])) for _ in range(rank - 2)]
    return [1.0, 1.0, *spatial]


def _upsample(b: GraphBuilder, x: Value) -> Value:
    """Upsample (nearest or linear) with integer scales over the spatial dims: the scales
    an attribute at opsets 7-8, an input at 9."""
    scales = _scales(b, x.rank)
    out = tuple(int(d * s) for d, s in zip(x.shape, scales, strict=True))
    mode = b.rng.choice(["nearest", "nearest", "linear", None])
    if b.opset < 9:
        return b.op("Upsample", [x], FLOAT, out, mode=mode, scales=scales)
    sc = b.const(np.asarray(scales, np.float32), "Upsample")
    return b.op("Upsample", [x, sc], FLOAT, out, mode=mode)


def _resize10(b: GraphBuilder, x: Value) -> Value:
    """Resize-10: X and scales, nearest or linear."""
    scales = _scales(b, x.rank)
    out = tuple(int(d * s) for d, s in zip(x.shape, scales, strict=True))
    sc = b.const(np.asarray(scales, np.float32), "Resize")
    return b.op("Resize", [x, sc], FLOAT, out, mode=b.rng.choice(["nearest", "linear"]))


_COORD = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize(b: GraphBuilder, x: Value) -> Value:
    """Resize from opset 11: scales or sizes, every coordinate transformation and nearest
    mode, cubic; from 18 antialias, axes and keep_aspect_ratio_policy; from 19
    half_pixel_symmetric."""
    mode = b.rng.choice(["nearest", "linear", "cubic"])
    coord = b.rng.choice(_COORD + (("half_pixel_symmetric",) if b.opset >= 19 else ()))
    attrs: dict = {"mode": mode, "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = b.rng.choice(_NEAREST)
    if mode == "cubic" and b.rng.random() < 0.3:
        attrs["cubic_coeff_a"] = -0.5
    spatial = list(range(2, x.rank))
    use_axes = b.opset >= 18 and b.rng.random() < 0.3
    if use_axes:
        attrs["axes"] = spatial
    if b.opset >= 18 and mode != "nearest" and b.rng.random() < 0.2:
        attrs["antialias"] = 1
    scales = _scales(b, x.rank)
    out = tuple(int(d * s) for d, s in zip(x.shape, scales, strict=True))
    roi = b.const(np.zeros((0,), np.float32), "Resize").name if b.opset < 13 else ""
    if b.rng.random() < 0.35:
        sizes = [out[i] for i in spatial] if use_axes else list(out)
        if b.opset >= 18 and b.rng.random() < 0.3:
            attrs["keep_aspect_ratio_policy"] = b.rng.choice(["stretch", "not_larger"])
            if attrs["keep_aspect_ratio_policy"] != "stretch":
                attrs["keep_aspect_ratio_policy"] = "stretch"
        inputs = [x.name, roi or b.const(np.zeros((0,), np.float32), "Resize").name,
                  b.const(np.zeros((0,), np.float32), "Resize").name
                  if b.opset < 13 else "", b.ints(sizes, "Resize").name]
        return b.op("Resize", inputs, FLOAT, out, **attrs)
    values = [scales[i] for i in spatial] if use_axes else scales
    return b.op("Resize", [x.name, roi, b.const(np.asarray(values, np.float32),
                                                "Resize").name], FLOAT, out, **attrs)


def _split(b: GraphBuilder, x: Value) -> Value | None:
    """Split in the opset's form: sizes as an attribute or input, or none (equal parts by
    the number of outputs), ``num_outputs`` from 18 (the last part smaller when uneven)."""
    cands = [i for i, d in enumerate(x.shape) if d >= 2]
    if not cands:
        return None
    k = b.rng.choice(cands)
    a = k - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else k
    d = x.shape[k]
    r = b.rng.random()
    if r < 0.35:
        parts = b.rng.choice([n for n in (2, 3) if n <= d and (d % n == 0 or b.opset >= 18)]
                             or [1])
        chunk = -(-d // parts)
        sizes = [chunk] * (d // chunk) + ([d % chunk] if d % chunk else [])
        attrs = {"num_outputs": len(sizes)} if b.opset >= 18 else {}
        names = b.node("Split", [x.name], n_out=len(sizes), axis=a, **attrs)
        return b.rng.choice([b.add(Value(n, x.dtype, x.shape[:k] + (part,) + x.shape[k + 1:],
                                         x.props)) for n, part in zip(names, sizes, strict=True)])
    return b.rng.choice(shape_ops.split(b, x, a, shape_ops.split_sizes(b, d)))


def _unsqueeze_axes(b: GraphBuilder, x: Value) -> list[int]:
    """One to three axes for an Unsqueeze of ``x`` (output positions): unsorted and
    negative at times from opset 11, sorted before (Unsqueeze-1's inference needs it)."""
    n = b.rng.randint(1, 3)
    r = x.rank + n
    axes = b.rng.sample(range(r), n)
    return [a - r if b.rng.random() < 0.4 else a for a in axes] if b.opset >= 11 \
        else sorted(axes)


def _squeeze_unsqueeze(b: GraphBuilder, x: Value) -> Value:
    """Unsqueeze at :func:`_unsqueeze_axes`, then Squeeze of some of them, or of every
    1-dim with no axes at all."""
    axes = _unsqueeze_axes(b, x)
    u = shape_ops.unsqueeze(b, x, axes)
    r = u.rank
    if b.rng.random() < 0.3:
        out = tuple(d for d in u.shape if d != 1)
        return b.op("Squeeze", [u], x.dtype, out, x.props)
    ones = sorted(a % r for a in axes)
    chosen = b.rng.sample(ones, b.rng.randint(1, len(ones)))
    if b.opset < 11:
        chosen.sort()
    out = tuple(d for i, d in enumerate(u.shape) if i not in chosen)
    picked = [c - r if b.opset >= 11 and b.rng.random() < 0.4 else c for c in chosen]
    form = shape_ops.axes_operand(b, "Squeeze", picked, 13)
    return b.op("Squeeze", [u, *form["inputs"]], x.dtype, out, x.props, **form["attrs"])


def _squeeze(b: GraphBuilder, x: Value) -> Value:
    """Squeeze of some 1-dims of ``x`` (negative axes from 11), or of all with no axes; an
    ``x`` without one is unsqueezed first."""
    if 1 not in x.shape:
        x = shape_ops.unsqueeze(b, x, [b.rng.randint(0, x.rank)])
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if b.rng.random() < 0.3:
        return b.op("Squeeze", [x], x.dtype, tuple(d for d in x.shape if d != 1), x.props)
    chosen = sorted(b.rng.sample(ones, b.rng.randint(1, len(ones))))
    out = tuple(d for i, d in enumerate(x.shape) if i not in chosen)
    picked = [c - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else c for c in chosen]
    form = shape_ops.axes_operand(b, "Squeeze", picked, 13)
    return b.op("Squeeze", [x, *form["inputs"]], x.dtype, out, x.props, **form["attrs"])


def _unsqueeze(b: GraphBuilder, x: Value) -> Value:
    """Unsqueeze at :func:`_unsqueeze_axes`."""
    return shape_ops.unsqueeze(b, x, _unsqueeze_axes(b, x))


_REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
           "ReduceSumSquare", "ReduceL2", "ReduceL1", "ReduceLogSumExp")


def _reduce(b: GraphBuilder, x: Value) -> Value:
    """A Reduce* op in the opset's form: some axes (negative from 11), or none (every axis,
    or with ``noop_with_empty_axes`` where axes are an input, none)."""
    op = b.rng.choice(_REDUCE)
    since = 13 if op == "ReduceSum" else 18
    if op in ("ReduceL1", "ReduceLogSumExp"):
        x = b.op("Tanh", [x], FLOAT, x.shape, ("bounded",))
    if op not in ("ReduceL1", "ReduceLogSumExp") and b.rng.random() < 0.7:
        return reduce(b, op, x) if op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                          "ReduceProd", "ReduceSumSquare", "ReduceL2") \
            else reduce(b, "ReduceSum", x)
    keep = b.rng.randrange(2)
    if b.rng.random() < 0.5:
        axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
        out = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or
                    i not in axes)
        form = shape_ops.axes_operand(b, op, axes, since)
        return b.op(op, [x, *form["inputs"]], FLOAT, out, keepdims=keep, **form["attrs"])
    if b.opset >= since and b.rng.random() < 0.5:
        return b.op(op, [x], FLOAT, x.shape, keepdims=keep, noop_with_empty_axes=1)
    out = (1,) * x.rank if keep else ()
    return b.op(op, [x], FLOAT, out, keepdims=keep)


def _pad(b: GraphBuilder, x: Value) -> Value:
    """Pad in the opset's form: constant (with or without a value), reflect or edge, wrap
    from 19, pads on some axes only (the ``axes`` input) from 18."""
    modes = ["constant", "constant", "reflect", "edge"] + (["wrap"] if b.opset >= 19 else [])
    mode = b.rng.choice(modes)
    limit = [d - 1 if mode == "reflect" else 2 for d in x.shape]
    pads = [b.rng.randint(0, max(0, min(2, lim))) for lim in limit] * 2
    if mode == "wrap":
        pads = [min(p, d) for p, d in zip(pads, list(x.shape) * 2, strict=True)]
    out = tuple(d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape))
    if b.opset < 11:
        return b.op("Pad", [x], FLOAT, out, pads=pads, mode=mode,
                    value=0.5 if mode == "constant" and b.rng.random() < 0.5 else None)
    if b.opset >= 18 and b.rng.random() < 0.3:
        axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
        sub = [pads[a] for a in axes] + [pads[a + x.rank] for a in axes]
        out = tuple(d + (pads[i] + pads[i + x.rank] if i in axes else 0)
                    for i, d in enumerate(x.shape))
        value = b.scalar(0.5, FLOAT, "Pad").name if mode == "constant" else ""
        return b.op("Pad", [x.name, b.ints(sub, "Pad").name, value,
                            b.ints([a - x.rank if b.rng.random() < 0.4 else a
                                    for a in axes], "Pad").name], FLOAT, out, mode=mode)
    if mode == "constant":
        return pad(b, x, pads, b.rng.choice([0.0, 0.5, None]))
    return b.op("Pad", [x, b.ints(pads, "Pad")], FLOAT, out, mode=mode)


def _clip(b: GraphBuilder, x: Value) -> Value:
    """Clip with both bounds, one, or none, in the opset's form (attributes until 11)."""
    ranges = [(-0.5, 0.5), (0.0, 6.0), (None, 0.3), (-0.2, None), (None, None)]
    lo, hi = b.rng.choice(ranges + ([(1.0, -1.0)] if b.opset >= 11 else []))
    if b.opset >= 11 and lo is None and hi is not None:
        return b.op("Clip", [x.name, "", b.scalar(hi, FLOAT, "Clip").name], FLOAT, x.shape)
    return clip(b, x, lo, hi)


def _batch_norm(b: GraphBuilder, x: Value) -> Value:
    """BatchNormalization in inference mode: ``spatial`` = 1 at opsets 7-8 at times,
    ``training_mode`` = 0 spelled out from 14 at times, momentum at times."""
    attrs: dict = {}
    if b.opset < 9 and b.rng.random() < 0.5:
        attrs["spatial"] = 1
    if b.opset >= 14 and b.rng.random() < 0.4:
        attrs["training_mode"] = 0
    if b.rng.random() < 0.3:
        attrs["momentum"] = 0.8
    eps = b.rng.choice([1e-5, 1e-3, None])
    return b.op("BatchNormalization", [x, *nn.bn_weights(b, x.shape[1])], FLOAT, x.shape,
                epsilon=eps, **attrs)


def _dropout(b: GraphBuilder, x: Value) -> Value:
    """Dropout in inference: the ratio an attribute until 12, an input from 12 (with
    training_mode false at times); the mask output as a graph output at times from 12
    (onnxruntime's Dropout-10 kernel gives an all-False mask in inference where onnx's
    reference evaluator gives all True: a difference of the reference runtime's, not of a
    conversion)."""
    ratio = b.rng.choice([0.0, 0.2, 0.5])
    mask = b.opset >= 12 and b.rng.random() < 0.4
    if b.opset < 12:
        names = b.node("Dropout", [x.name], n_out=2 if mask else 1, ratio=ratio)
    else:
        inputs = [x.name, b.scalar(ratio, FLOAT, "Dropout").name]
        if b.rng.random() < 0.4:
            inputs.append(b.const(np.asarray(False), "Dropout").name)
        names = b.node("Dropout", inputs, n_out=2 if mask else 1)
    if mask:
        from generators.values import BOOL

        b.graph_output(Value(names[1], BOOL, x.shape))
    return b.add(Value(names[0], FLOAT, x.shape, x.props))


def _softmax_axis(b: GraphBuilder, x: Value) -> Value:
    """Softmax, LogSoftmax or Hardmax over an axis that is not the last (before 13 the
    input is coerced to 2-D around it), or with the default axis (1 before 13, -1 from
    13)."""
    op = b.rng.choice(["Softmax", "Softmax", "LogSoftmax", "Hardmax"])
    x = room_for_axis(b, x, op)
    a = None if b.rng.random() < 0.3 else b.rng.randrange(max(1, x.rank - 1))
    if a is not None and b.opset >= 11 and b.rng.random() < 0.3:
        a -= x.rank
    return b.op(op, [x], FLOAT, x.shape, axis=a)


def _topk(b: GraphBuilder, x: Value) -> Value:
    """TopK with k an attribute until 10, an input from 10; largest and sorted from 11."""
    a = axis(b, x.rank)
    k = b.rng.randint(1, x.shape[a % x.rank])
    out = tuple(k if i == a % x.rank else d for i, d in enumerate(x.shape))
    attrs: dict = {"axis": a if b.opset >= 11 or a >= 0 else a % x.rank}
    if b.opset < 10:
        names = b.node("TopK", [x.name], n_out=2, k=k, **attrs)
    else:
        if b.opset >= 11:
            attrs["largest"] = b.rng.choice([0, 1, None])
            attrs["sorted"] = b.rng.choice([1, None])
        names = b.node("TopK", [x.name, b.ints([k], "TopK").name], n_out=2, **attrs)
    b.add(Value(names[1], INT64, out, frozenset({"nonneg"})))
    return b.add(Value(names[0], FLOAT, out, x.props))


def _slice_attrs(b: GraphBuilder, x: Value) -> Value:
    """Slice-1 (starts, ends, axes attributes) with ends past the dim or negative, axes
    left out at times."""
    starts, ends, axes, _, out = shape_ops.slice_params(b, x)
    steps_one = [1] * len(axes)
    if b.opset < 10 and b.rng.random() < 0.3 and axes == list(range(len(axes))):
        return b.op("Slice", [x], FLOAT, out, x.props, starts=starts, ends=ends)
    return slice_op(b, x, starts, ends, axes, steps_one if b.opset >= 10 else None)


def _scatter(b: GraphBuilder, x: Value) -> Value:
    """Scatter (opsets 9-10) along an axis with in-range indices."""
    a = b.rng.randrange(x.rank)
    idx_shape = tuple(b.rng.randint(1, d) for d in x.shape)
    idx = b.const(np.asarray(b.nprng.integers(0, x.shape[a], size=idx_shape), np.int64),
                  "Scatter")
    upd = b.random_weight(idx_shape, FLOAT, "Scatter")
    return b.op("Scatter", [x, idx, upd], FLOAT, x.shape, axis=a)


def _variadic(b: GraphBuilder, x: Value) -> Value:
    """Max, Min, Mean or Sum of three operands that broadcast (from 8) or of two of one
    shape."""
    op = b.rng.choice(["Max", "Min", "Mean", "Sum"])
    others = [b.random_weight(x.shape[-1:], FLOAT, op), b.random_weight((1,), FLOAT, op)]
    if b.opset < 8 or b.rng.random() < 0.4:
        others = [b.random_weight(x.shape, FLOAT, op)]
    return b.op(op, [x, *others], FLOAT, x.shape)


def _maxpool(b: GraphBuilder, x: Value) -> Value:
    """MaxPool with the Indices output (storage_order at times) from 8, ceil_mode and
    dilations from 10."""
    n, c, *spatial = x.shape
    k = [min(2, d) for d in spatial]
    attrs: dict = {"kernel_shape": k}
    ceil = b.opset >= 10 and b.rng.random() < 0.4
    if ceil:
        attrs["ceil_mode"] = 1
        attrs["strides"] = [2] * len(spatial)
    stride = 2 if ceil else 1
    out = [(-(-(d - kk) // stride) if ceil else (d - kk) // stride) + 1
           for d, kk in zip(spatial, k, strict=True)]
    indices = b.opset >= 8 and b.rng.random() < 0.5
    if indices and b.rng.random() < 0.5:
        attrs["storage_order"] = 1
    names = b.node("MaxPool", [x.name], n_out=2 if indices else 1, **attrs)
    if indices:
        b.graph_output(Value(names[1], INT64, (n, c, *out)))
    return b.add(Value(names[0], FLOAT, (n, c, *out), x.props))


def _grid_sample(b: GraphBuilder, x: Value) -> Value:
    """GridSample-16 over a 4-D input with a grid in [-1, 1]: bilinear, nearest or
    bicubic; zeros, border or reflection padding; align_corners at times."""
    n, c, h, w = x.shape
    oh, ow = b.rng.randint(1, 3), b.rng.randint(1, 3)
    grid = b.const(np.asarray(b.nprng.uniform(-1, 1, size=(n, oh, ow, 2)), np.float32),
                   "GridSample")
    return b.op("GridSample", [x, grid], FLOAT, (n, c, oh, ow),
                mode=b.rng.choice(["bilinear", "nearest", "bicubic"]),
                padding_mode=b.rng.choice(["zeros", "border", "reflection"]),
                align_corners=b.rng.choice([0, 1]))


def _if_body(b: GraphBuilder, x: Value) -> Value:
    """If whose branches hold ops whose form changed (Unsqueeze then Squeeze, Clip, a
    ReduceMean with keepdims) on the outer-scope value; body weights are Constant nodes."""
    def branch() -> GraphBuilder:
        body = control.body_builder(b)
        if b.opset >= 9 and b.rng.random() < 0.5:  # integer Constant nodes from opset 9
            v = _squeeze_unsqueeze(body, x)
        elif b.opset < 11:
            v = body.op("Clip", [x], FLOAT, x.shape, min=-0.5, max=0.5)
        else:
            v = body.op("Clip", [x, body.scalar(-0.5, FLOAT, "Clip"),
                                 body.scalar(0.5, FLOAT, "Clip")], FLOAT, x.shape)
        if v.shape != x.shape:
            v = body.op("Reshape", [v, body.ints(list(x.shape), "Reshape")], FLOAT, x.shape)
        if b.rng.random() < 0.5:
            m = reduce(body, "ReduceMean", v, axes=[x.rank - 1], keepdims=1)
            v = body.op("Add", [m, v], FLOAT, x.shape)
        body.graph_output(v)
        return body

    cond = b.const(np.asarray(b.rng.random() < 0.5), "If", placement="constant")
    return b.op("If", [cond], FLOAT, x.shape, then_branch=branch().graph("then_branch"),
                else_branch=branch().graph("else_branch"))


def _function_body(b: GraphBuilder, x: Value) -> Value:
    """A model-local function whose body holds a ReduceMean over the last axis (axes an
    attribute until 18) and a Split into two equal halves of its own output's copy."""
    last = x.rank - 1
    form = {"axes": [last]} if b.opset < 18 else {}
    nodes = []
    if b.opset >= 18:
        nodes.append(functions.body_node("Constant", [], ["axes"], value_ints=[last]))
    nodes.append(functions.body_node("ReduceMean", ["X", "axes"] if b.opset >= 18 else ["X"],
                                     ["m"], keepdims=1, **form))
    nodes.append(functions.body_node("Sub", ["X", "m"], ["Y"]))
    f = functions.declare(b, functions.fname(b, "Center"), ["X"], ["Y"], nodes, domain="local")
    return functions.call(b, f, x, x.shape)


MOTIFS = (
    motif("oc-upsample", {"Upsample": (7, 9, 10)}, _upsample, until=9, ranks=(4, 4)),
    motif("oc-resize-10", {"Resize": (10, 11)}, _resize10, since=10, until=10, ranks=(4, 4)),
    motif("oc-resize", {"Resize": (11, 13, 18, 19)}, _resize, since=11, ranks=(4, 4)),
    motif("oc-split", {"Split": (11, 13, 18)}, _split),
    motif("oc-squeeze-unsqueeze", {"Squeeze": (11, 13, 21), "Unsqueeze": (11, 13, 21)},
          _squeeze_unsqueeze, ranks=(1, 3)),
    motif("oc-squeeze", {"Squeeze": (11, 13, 21)}, _squeeze),
    motif("oc-unsqueeze", {"Unsqueeze": (11, 13, 21)}, _unsqueeze, ranks=(1, 3)),
    motif("oc-reduce", {op: (11, 13, 18, 20) for op in _REDUCE}, _reduce),
    motif("oc-pad", {"Pad": (11, 13, 18, 19, 21)}, _pad),
    motif("oc-clip", {"Clip": (11, 12, 13)}, _clip),
    motif("oc-batch-norm", {"BatchNormalization": (9, 14, 15)}, _batch_norm, ranks=(2, 4)),
    motif("oc-dropout", {"Dropout": (10, 12, 13)}, _dropout),
    motif("oc-softmax-axis", {"Softmax": (11, 13), "LogSoftmax": (11, 13),
                              "Hardmax": (11, 13)}, _softmax_axis, ranks=(2, 4)),
    motif("oc-topk", {"TopK": (10, 11)}, _topk),
    motif("oc-slice", {"Slice": (10, 11, 13)}, _slice_attrs),
    motif("oc-scatter", {"Scatter": (11,)}, _scatter, since=9, until=10),
    motif("oc-variadic", {"Max": (8, 12, 13), "Min": (8, 12, 13), "Mean": (8, 13),
                          "Sum": (8, 13)}, _variadic),
    motif("oc-maxpool", {"MaxPool": (8, 10, 11, 12)}, _maxpool, ranks=(4, 4)),
    motif("oc-grid-sample", {"GridSample": (20,)}, _grid_sample, since=16, until=19,
          ranks=(4, 4)),
    motif("oc-if-body", {"If": (11, 13, 16), "Squeeze": (13,), "Unsqueeze": (13,),
                         "Clip": (11, 13), "ReduceMean": (18,)}, _if_body, ranks=(1, 3),
          anchors=("If",)),  # the other ops live in the branches
    # the ops live in a function body, where no draw edits them
    motif("oc-function-body", {"ReduceMean": (18,), "Sub": (14,)}, _function_body,
          since=functions.FUNCTIONS_SINCE, until=20, anchors=()),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 150
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
