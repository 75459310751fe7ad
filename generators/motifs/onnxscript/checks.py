"""Motifs for the conditions of onnxscript's rewrite rules (``onnxscript.rewriter.rules.
common``) that the forms in :mod:`generators.motifs.onnxscript.rules` leave unreached: the
attributes a pattern names explicitly (Gemm's ``alpha``/``beta`` of
``gemm_to_matmul_add_rule``, ScatterND's ``reduction`` and Shape's ``start`` of
``ScatterAllDynamic``), patterns over integer types (ConvInteger after Pad, BitShift after
Expand), symbolic dims (MaterializeReshapeShape, the Expand rules' shape checks),
subgraph initializers (``LiftSubgraphInitializersToMainGraphPass``), and the failing
branches of the checks: clip bounds that are graph inputs or computed, BatchNormalization
weights in Constant nodes or shared with another node, auto_pad forms of Conv.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from generators.builder import GraphBuilder, value_info
from generators.motifs.helpers import (
    clip,
    const,
    ints,
    ort_motif,
    placement,
    slice_op,
    weight,
)
from generators.motifs.onnxruntime.qdq import dequantize, qconst, quantize
from generators.motifs.onnxscript.fold import (
    computed_index,
    computed_zero,
    hidden_length,
    repeat,
    symbolic_input,
    unknown_rank,
)
from generators.ops import nn, shape_ops
from generators.schema.levels import NONDEFAULT
from generators.values import BOOL, FLOAT, INT32, INT64, NP_DTYPE, Value, broadcast

UINT8 = TensorProto.UINT8


def _reshape_gemm(b: GraphBuilder, x: Value) -> Value:
    """Reshape of ``x`` (rank 3-4) to 2-D, Gemm with a bias and explicit ``alpha=1.0``,
    ``beta=1.0`` (the attributes ``gemm_to_matmul_add_rule``'s pattern names), Reshape back
    to the leading dims; near misses: other alpha, a flat final shape, and ``transB=1``
    with a square weight (the rule's shape check cannot tell it from MatMul's)."""
    lead, k = x.shape[:-1], x.shape[-1]
    m = int(np.prod(lead))
    a2 = b.op("Reshape", [x, ints(b, b.rng.choice([[-1, k], [m, k]]), "Reshape")], FLOAT,
              (m, k))
    trans_b = b.rng.random() < 0.2
    n = k if trans_b or b.rng.random() < 0.2 else b.rng.randint(1, 4)
    w = weight(b, (n, k) if trans_b else (k, n), FLOAT, "Gemm")
    c = weight(b, b.rng.choice([(n,), (1, n), (m, n)]), FLOAT, "Gemm")
    alpha = 1.0 if b.rng.random() < 0.85 else 0.5
    g = b.op("Gemm", [a2, w, c], FLOAT, (m, n), alpha=alpha, beta=1.0,
             transB=1 if trans_b else None)
    target = [*lead, n] if b.rng.random() < 0.85 else [m * n]
    return b.op("Reshape", [g, ints(b, target, "Reshape")], FLOAT, tuple(target))


def _scatter_forms(b: GraphBuilder, x: Value) -> Value:
    """ScatterND over every row, with the form ``ScatterAllDynamic`` names (from opset
    16: indices ``Unsqueeze(Range(0, Gather(Shape(data, start=0), axis, axis=0), 1),
    [-1])``, ``reduction="none"``), the scattered data a Transpose that brings that axis
    first; or constant indices with a ``reduction`` (add, mul; max, min from 18) that
    ``ScatterAllStatic`` must not treat as an assignment, or in reverse order. Near misses
    of the dynamic form: the axis computed, the Shape's input or the scattered data of
    unknown rank (:func:`.fold.unknown_rank`), the scattered data twice as long (the
    rows cover half of it)."""
    k = b.rng.randrange(x.rank)
    perm = [k, *(i for i in range(x.rank) if i != k)]
    data = x if k == 0 else b.op("Transpose", [x], x.dtype, tuple(x.shape[p] for p in perm),
                                 perm=perm)
    reductions = ["none", "none", "add", "mul"] + (["max", "min"] if b.opset >= 18 else [])
    reduction = b.rng.choice(reductions) if b.opset >= 16 else None
    updates = weight(b, data.shape, FLOAT, "ScatterND")
    if b.rng.random() < 0.5:
        near = b.rng.choice(["", "", "", "axis", "shape", "data", "wider"])
        src = unknown_rank(b, x) if near == "shape" else x
        shape = b.op("Shape", [src], INT64, (x.rank,), ("nonneg",),
                     start=0 if b.opset >= 15 and b.rng.random() < 0.85 else None)
        axis = b.const(np.asarray(k, np.int64), "Gather")
        if near == "axis":
            shifted = b.op("Add", [computed_index(b), ints(b, [k], "Add")], INT64, (1,))
            axis = b.op("Gather", [shifted, b.const(np.asarray(0, np.int64), "Gather")],
                        INT64, (), axis=0)
        dim = b.op("Gather", [shape, axis], INT64, (), axis=0)
        rng = b.op("Range", [b.const(np.asarray(0, np.int64), "Range"), dim,
                             b.const(np.asarray(1, np.int64), "Range")], INT64,
                   (x.shape[k],))
        idx = shape_ops.unsqueeze(b, rng, [-1])
        if near == "data":
            data = unknown_rank(b, data)
        elif near == "wider":
            data = b.op("Concat", [data, data], FLOAT, (2 * data.shape[0], *data.shape[1:]),
                        axis=0)
    else:
        rows = np.arange(data.shape[0], dtype=np.int64)
        if b.rng.random() < 0.2:
            rows = rows[::-1].copy()
        idx = b.const(rows.reshape(-1, 1), "ScatterND")
    return b.op("ScatterND", [data, idx, updates], FLOAT, data.shape, reduction=reduction)


def _u8(b: GraphBuilder, x: Value, scale: float) -> Value:
    """``x`` as uint8: Cast of ``|x| * scale`` (small non-negative integers)."""
    a = b.op("Abs", [x], FLOAT, x.shape, ("nonneg",))
    s = b.op("Mul", [a, const(b, scale, FLOAT, (), "Mul")], FLOAT, x.shape)
    return b.op("Cast", [s], UINT8, x.shape, to=UINT8)


def _conv_integer(b: GraphBuilder, x: Value) -> Value:
    """ConvInteger of ``x`` as uint8 after a Pad (zero constant padding of the spatial
    dims, the form ``FuseConvIntegerPad`` folds into ``pads``; edge mode or a padded
    channel at times), or with ``auto_pad`` SAME_UPPER / SAME_LOWER / VALID and strides
    (``NormalizePadFormatConvInteger``); a uint8 weight, a zero point at times; int32
    result cast to float."""
    xq = _u8(b, x, 8.0)
    n, c, h, w_ = x.shape
    pads = [b.rng.randint(0, 1) for _ in range(4)]
    mode = "constant"
    form = b.rng.choice(["pad", "pad", "auto"])
    src = xq
    if form == "pad":
        full = [0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]]
        if b.rng.random() < 0.15:
            full[1] = 1  # a padded channel: not foldable
        if b.rng.random() < 0.15:
            mode = "edge"
        out = (n, c + full[1] + full[5], h + pads[0] + pads[2], w_ + pads[1] + pads[3])
        inputs = [xq.name, ints(b, full, "Pad").name]
        if b.rng.random() < 0.4:
            inputs.append(qconst(b, np.asarray(0, np.uint8), "Pad").name)
        src = b.op("Pad", inputs, UINT8, out, mode=mode if mode != "constant" else None)
    kh, kw = min(h, b.rng.randint(1, 3)), min(w_, b.rng.randint(1, 3))
    m = b.rng.randint(1, 3)
    w = qconst(b, b.nprng.integers(0, 4, size=(m, src.shape[1], kh, kw)).astype(np.uint8),
               "ConvInteger")
    inputs = [src.name, w.name]
    if b.rng.random() < 0.3:
        inputs.append(qconst(b, np.asarray(1, np.uint8), "ZeroPoint").name)
    attrs: dict = {}
    if form == "auto":
        attrs["auto_pad"] = b.rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
        attrs["strides"] = [b.rng.choice([1, 2])] * 2
        s = attrs["strides"][0]
        if attrs["auto_pad"] == "VALID":
            oh, ow = (h - kh) // s + 1, (w_ - kw) // s + 1
        else:
            oh, ow = -(-h // s), -(-w_ // s)
        attrs["kernel_shape"] = [kh, kw] if b.rng.random() < 0.5 else None
    else:
        oh, ow = src.shape[2] - kh + 1, src.shape[3] - kw + 1
    y = b.op("ConvInteger", inputs, INT32, (n, m, oh, ow), **attrs)
    return b.op("Cast", [y], FLOAT, y.shape, to=FLOAT)


def _expand_bitshift(b: GraphBuilder, x: Value) -> Value:
    """BitShift (LEFT or RIGHT) of uint8 values with an Expand before either operand
    (``ExpandFirst_BitShift`` / ``ExpandSecond_BitShift``), cast back to float; at times
    :func:`expand_to_symbolic` instead."""
    direction = b.rng.choice(["LEFT", "RIGHT"])
    if b.rng.random() < 0.35:
        return expand_to_symbolic(b, x, "BitShift", UINT8, direction=direction)
    v = _u8(b, x, 2.0)
    target = (2, *x.shape) if b.rng.random() < 0.5 else x.shape
    e = b.op("Expand", [v, ints(b, list(target), "Expand")], UINT8, target)
    other_shape = target if b.rng.random() < 0.5 else x.shape[-1:]
    amounts = qconst(b, b.nprng.integers(0, 3, size=other_shape).astype(np.uint8), "BitShift")
    args = [amounts, e] if b.rng.random() < 0.5 else [e, amounts]
    y = b.op("BitShift", args, UINT8, broadcast(target, other_shape), direction=direction)
    return b.op("Cast", [y], FLOAT, y.shape, to=FLOAT)


def _if_initializers(b: GraphBuilder, x: Value) -> Value:
    """If whose branches hold initializers (a unary op of outer ``x`` plus a branch
    weight, or the branch weight itself as the branch's output), on a constant condition
    (folded: the branch and its initializers move to the main graph) or a computed one
    (the initializers are lifted, except one that is a branch output)."""
    r = b.rng.random()
    if r < 0.5:
        cond = b.const(np.asarray(b.rng.random() < 0.5), "If",
                       placement=b.rng.choice(["constant", "initializer"]))
    else:
        m = b.op("ReduceMean", [x], FLOAT, (), keepdims=0)
        cond = b.op("Greater", [m, b.scalar(0.0, FLOAT, "Greater")], TensorProto.BOOL, ())
    graphs = []
    for name in ("then_branch", "else_branch"):
        body = GraphBuilder(b.rng, b.nprng, b.opset, b.namer, weights="initializer",
                            outer=b.pool)
        if b.rng.random() < 0.2:  # the branch's output is its initializer (not lifted)
            body.graph_output(body.random_weight(x.shape, FLOAT, "If"))
            graphs.append(body.graph(name))
            continue
        v = body.op(b.rng.choice(["Relu", "Tanh", "Neg", "Identity"]), [x], FLOAT, x.shape)
        w = body.random_weight(x.shape if b.rng.random() < 0.5 else x.shape[-1:], FLOAT,
                               "Add")
        v = body.op("Add", [v, w], FLOAT, x.shape)
        body.graph_output(v)
        graphs.append(body.graph(name))
    return b.op("If", [cond], FLOAT, x.shape, then_branch=graphs[0], else_branch=graphs[1])


def _reshape_symbolic(b: GraphBuilder, x: Value) -> Value:
    """Reshape of a new input with symbolic dims to a computed shape (Shape, Gather,
    Concat): the output shape has one symbolic dim (``MaterializeReshapeShape`` makes the
    shape a constant with -1), two (it must not), or none; added to ``x`` over its last
    dim."""
    d = x.shape[-1]
    two = b.rng.random() < 0.3
    s = b.graph_input(FLOAT, (1, 1, d), {0: "batch", 1: "seq"}) if two else \
        symbolic_input(b, d)
    sh = b.op("Shape", [s], INT64, (s.rank,), ("nonneg",))
    if not two and b.rng.random() < 0.5:
        first = b.op("Gather", [sh, b.const(np.asarray([0], np.int64), "Gather")], INT64,
                     (1,), axis=0)
        sh = b.op("Concat", [first, b.ints([d], "Concat")], INT64, (2,), axis=0)
    y = b.op("Reshape", [b.op("Relu", [s], FLOAT, s.shape), sh], FLOAT, s.shape)
    if two:
        y = b.op("Reshape", [y, b.ints([1, d], "Reshape")], FLOAT, (1, d))
    return b.op("Add", [x, y], FLOAT, broadcast(x.shape, y.shape))


def _expand_dynamic(b: GraphBuilder, x: Value) -> Value:
    """:func:`expand_to_symbolic` with Add, Mul or Sub."""
    return expand_to_symbolic(b, x, b.rng.choice(["Add", "Mul", "Sub"]))


#: binary ops whose result is bool whatever their operand type.
BOOL_OUT = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"}


def constant_operand(b: GraphBuilder, shape: tuple[int, ...], dtype: int, op: str) -> Value:
    """A constant operand of ``shape`` and ``dtype`` for binary ``op`` (floats from 1 for Div,
    which stay divisors when a schema row retypes the op to integers; positive floats for
    Pow; integers from 1 for Mod, uint8 shift amounts below 3 for BitShift)."""
    if dtype == FLOAT and op == "Div":
        return b.const(np.asarray(b.nprng.uniform(1.0, 2.0, shape), np.float32), op,
                       placement(b))
    if dtype == FLOAT:
        return weight(b, shape, FLOAT, op, positive=op == "Pow")
    if dtype == BOOL:
        return b.const(np.asarray(b.nprng.integers(0, 2, size=shape), np.bool_), op)
    low, high = (1, 4) if op == "Mod" else (0, 3) if op == "BitShift" else (0, 4)
    values = b.nprng.integers(low, high, size=shape)
    if dtype == UINT8:
        return qconst(b, values.astype(np.uint8), op)
    return b.const(np.asarray(values, NP_DTYPE[dtype]), op)


def operand_of(b: GraphBuilder, v: Value, op: str, dtype: int) -> Value:
    """Float ``v`` as an operand of ``op`` in ``dtype`` (same shape): non-negative for Pow,
    at least 1 for Mod (a divisor on either side; Div takes its divisors from
    :func:`constant_operand`), ``v > 0`` for bool, 0 or 1 for
    uint8 (a BitShift amount on either side), small non-negative integers otherwise."""
    if dtype == FLOAT:
        return b.op("Abs", [v], FLOAT, v.shape, ("nonneg",)) if op == "Pow" else v
    if dtype == BOOL:
        return b.op("Greater", [v, b.scalar(0.0, FLOAT, "Greater")], BOOL, v.shape)
    if dtype == UINT8:
        positive = b.op("Greater", [v, b.scalar(0.0, FLOAT, "Greater")], BOOL, v.shape)
        return b.op("Cast", [positive], UINT8, v.shape, to=UINT8)
    c = b.op("Cast", [b.op("Abs", [v], FLOAT, v.shape)], dtype, v.shape, to=dtype)
    if op == "Mod":
        one = b.const(np.ones((1,), NP_DTYPE[dtype]), "Add")
        c = b.op("Add", [c, one], dtype, v.shape)
    return c


def expand_to_symbolic(b: GraphBuilder, x: Value, op: str, dtype: int = FLOAT,
                       **attrs: object) -> Value:
    """Expand of a constant row (1, d) or (d,) of ``dtype`` to the shape of a new input
    ``s`` (N, d) with a symbolic first dim N (a shape no constant holds), then binary
    ``op`` (its ``attrs``) with ``s`` (in ``dtype``: :func:`operand_of`) on either side,
    the result (cast to float) added to ``x`` (d its last dim): the Expand rules' checks on
    symbolic dims. From opset 10, at times the Expand's shape is ``Shape(s)`` read through
    :func:`.fold.hidden_length` (no inference knows the Expand's output, so the rules
    compare the broadcast of the operands with the op's declared output shape): declared
    (N, d) (the broadcast), (M, d) with another symbol (a mismatch), or not declared; or
    the other operand is (N, 1) (a unit dim on its side), or the Expand's input is ``s``
    itself and the other operand a new input (M, d) (two symbols: no static broadcast).
    PRelu takes the Expand as its input X only, its slope a shape X's broadcasts to; Div
    as its divisor only (constants from 1)."""
    d = x.shape[-1]
    s = symbolic_input(b, d)
    n = s_dim(b, s)
    form = b.rng.choice(["shape", "declared", "declared", "mismatch", "bare", "unit",
                         "two-symbols"]) if b.opset >= 10 else "shape"
    src = constant_operand(b, (1, d) if b.rng.random() < 0.5 else (d,), dtype, op)
    if form == "unit":
        other = operand_of(b, b.graph_input(FLOAT, (1, 1), {0: n}), op, dtype)
    else:
        other = operand_of(b, s, op, dtype)
    if form == "two-symbols" and op != "Div":
        src = other
        other = operand_of(b, b.graph_input(FLOAT, (1, d), {0: n + "_other"}), op, dtype)
    shape = b.op("Shape", [s], INT64, (2,), ("nonneg",))
    if form != "shape":
        shape = hidden_length(b, shape)
    e = b.op("Expand", [src, shape], dtype, s.shape)
    out = BOOL if op in BOOL_OUT else dtype
    first = op == "PRelu" or (op != "Div" and b.rng.random() < 0.5)
    y = b.op(op, [e, other] if first else [other, e], out, s.shape, **attrs)
    if form in ("declared", "unit", "two-symbols", "mismatch"):
        dim = n + "_out" if form == "mismatch" else n
        b.value_infos.append(value_info(y.name, out, [dim, d]))
    if out != FLOAT:
        y = b.op("Cast", [y], FLOAT, y.shape, to=FLOAT)
    return b.op("Add", [x, y], FLOAT, broadcast(x.shape, y.shape))


def s_dim(b: GraphBuilder, s: Value) -> str:
    """The name of the symbolic first dim of graph input ``s`` (as declared)."""
    for info in b.inputs:
        if info.name == s.name:
            return info.type.tensor_type.shape.dim[0].dim_param
    raise KeyError(s.name)


def _clip_bounds(b: GraphBuilder, x: Value) -> Value:
    """Relu or Clip next to a Clip (from opset 11) whose bound is computed from ``x``
    (ReduceMin, ReduceMax: no constant) or a graph input with a default; Min/Max chains
    with such an operand; rules of both families must leave them."""
    lo_v = b.op("ReduceMin", [x], FLOAT, (), keepdims=0)
    hi_v = b.op("Add", [b.op("ReduceMax", [x], FLOAT, (), keepdims=0),
                        b.scalar(1.0, FLOAT, "Add")], FLOAT, ())
    form = b.rng.choice(["relu-clip", "clip-relu", "clip-clip", "min-max"])
    if form == "min-max":
        y = b.op("Max", [x, lo_v], FLOAT, x.shape)
        return b.op("Min", [y, const(b, 2.0, FLOAT, ())], FLOAT, x.shape)
    bound = lo_v if b.rng.random() < 0.6 else \
        b.const(np.asarray(-0.5, np.float32), "Clip", placement="input")
    if form == "relu-clip":
        y = b.op("Clip", [x, bound, hi_v], FLOAT, x.shape)
        return b.op("Relu", [y], FLOAT, x.shape)
    if form == "clip-relu":
        return b.op("Clip", [b.op("Relu", [x], FLOAT, x.shape), bound], FLOAT, x.shape)
    y = clip(b, x, -1.0, 1.0)
    return b.op("Clip", [y, bound], FLOAT, x.shape)


def _bn_checks(b: GraphBuilder, x: Value) -> Value:
    """Conv (3-D or 4-D ``x``) or Gemm (2-D) then BatchNormalization where the fusion's checks
    fail or hold at their edges: BatchNormalization weights in Constant nodes, the Conv
    or Gemm weight shared with a second node, a Conv bias present; a Gemm with ``transB``
    and ``beta``."""
    placement = "constant" if b.rng.random() < 0.4 else "initializer"
    shared = b.rng.random() < 0.4
    if x.rank == 2:
        k = x.shape[1]
        n = b.rng.randint(1, 4)
        trans_b = b.rng.random() < 0.5
        w = b.random_weight((n, k) if trans_b else (k, n), FLOAT, "Gemm")
        inputs = [x, w]
        if b.rng.random() < 0.6 or b.opset < 11:  # C is optional from Gemm-11 on
            inputs.append(b.random_weight((n,), FLOAT, "Gemm"))
        y = b.op("Gemm", inputs, FLOAT, (x.shape[0], n), transB=1 if trans_b else None,
                 beta=b.rng.choice([None, 0.5]) if len(inputs) == 3 else None)
        other = b.op("Gemm", inputs if b.opset < 11 else [x, w], FLOAT,
                     y.shape, transB=1 if trans_b else None) if shared else None
    else:
        m = b.rng.randint(1, 3)
        w = b.random_weight((m, x.shape[1], *(1,) * (x.rank - 2)), FLOAT, "Conv")
        inputs = [x, w]
        if b.rng.random() < 0.5:
            inputs.append(b.random_weight((m,), FLOAT, "Conv"))
        y = b.op("Conv", inputs, FLOAT, (x.shape[0], m, *x.shape[2:]))
        other = b.op("Conv", [x, w], FLOAT, y.shape) if shared else None
    z = nn.batch_norm(b, y, placement=placement)
    return z if other is None else b.op("Add", [z, other], FLOAT, z.shape)


def _conv_auto_pad(b: GraphBuilder, x: Value) -> Value:
    """Conv with ``auto_pad`` SAME_UPPER, SAME_LOWER or VALID, strides 1 or 2, kernel_shape
    given or read from the weight (``NormalizePadFormatConv`` makes pads explicit)."""
    n, c, *spatial = x.shape
    k = [min(d, b.rng.randint(1, 3)) for d in spatial]
    s = b.rng.choice([1, 2])
    auto = b.rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
    out = [(d - kk) // s + 1 if auto == "VALID" else -(-d // s)
           for d, kk in zip(spatial, k, strict=True)]
    m = b.rng.randint(1, 3)
    w = weight(b, (m, c, *k), FLOAT, "Conv")
    return b.op("Conv", [x, w], FLOAT, (n, m, *out), auto_pad=auto, strides=[s] * len(k),
                kernel_shape=k if b.rng.random() < 0.5 else None)


def _qlinear_conv_zero_bias(b: GraphBuilder, x: Value) -> Value:
    """QuantizeLinear to uint8, QLinearConv with a uint8 weight and an int32 bias of zeros
    (``RemoveOptionalBiasFromQLinearConv`` drops it) or, at times, not all zeros,
    DequantizeLinear back to float. A schema row that asks for a group gets as many output
    channels as input channels, two at least (a one-channel input is concatenated with
    itself)."""
    grouped = b.planned("QLinearConv", "attr:group") == NONDEFAULT
    if grouped and x.shape[1] == 1:  # two channels for a group of two
        x = b.op("Concat", [x, x], x.dtype, (x.shape[0], 2, *x.shape[2:]), axis=1)
    xp = [const(b, 0.05, FLOAT, ()), qconst(b, np.asarray(128, np.uint8), "ZeroPoint")]
    xq = quantize(b, x, UINT8, xp)
    n, c, *spatial = x.shape
    m = c if grouped else b.rng.randint(1, 3)
    k = [min(d, b.rng.randint(1, 2)) for d in spatial]
    w = qconst(b, b.nprng.integers(100, 140, size=(m, c, *k)).astype(np.uint8), "Weight")
    wp = [const(b, 0.01, FLOAT, ()), qconst(b, np.asarray(120, np.uint8), "ZeroPoint")]
    yp = [const(b, 0.05, FLOAT, ()), qconst(b, np.asarray(128, np.uint8), "ZeroPoint")]
    bias = np.zeros((m,), np.int32)
    if b.rng.random() < 0.2:
        bias[0] = 3
    out = tuple(d - kk + 1 for d, kk in zip(spatial, k, strict=True))
    y = b.op("QLinearConv", [xq, *xp, w, *wp, *yp, qconst(b, bias, "Bias")], UINT8,
             (n, m, *out), kernel_shape=k)
    return dequantize(b, y, yp)


def _unsqueeze_pair(b: GraphBuilder, x: Value) -> Value:
    """Unsqueeze(Unsqueeze(x, a1), a2) (axes inputs, opset 13+): one non-negative axis
    each in either order (``UnsqueezeUnsqueeze`` merges them), or a negative axis or two
    axes in one (which it leaves)."""
    r = x.rank
    a1 = b.rng.randint(0, r)
    a2 = b.rng.randint(0, r + 1)
    form = b.rng.random()
    axes1, axes2 = [a1], [a2]
    if form < 0.15:
        axes1 = [a1 - r - 1]
    elif form < 0.25:
        axes2 = [a2 - r - 2]
    elif form < 0.35 and r < 3:
        axes1 = [0, r + 1]
    y = shape_ops.unsqueeze(b, x, axes1)
    return shape_ops.unsqueeze(b, y, axes2)


def _symbolic_shapes(b: GraphBuilder, x: Value) -> Value:
    """Shape ops on a new input of shape (N, a, d) with N symbolic, added to ``x`` over
    its last dim: Flatten at any axis (``Flatten2Reshape`` with unknown dims), a Slice
    over the whole symbolic axis (``collapse_slice_rule`` cannot see its length; with an
    end of INT64_MAX it can; before opset 10 a Slice-1 of attributes), Reshape(Squeeze(v),
    [-1]) of a 2-D ``v`` (not 1-D:
    ``SqueezeReshape1d`` must leave it)."""
    d = x.shape[-1]
    a = b.rng.randint(1, 3)
    s = b.graph_input(FLOAT, (1, a, d), {0: b.rng.choice(["batch", "N"])})
    form = b.variant(b.rng.choice(["Flatten", "Slice", "Squeeze"]),
                     ["Flatten", "Slice", "Squeeze"]).lower()
    if form == "flatten":
        axis = b.rng.randint(0, 3)
        out = (int(np.prod(s.shape[:axis])), int(np.prod(s.shape[axis:])))
        y = b.op("Flatten", [s], FLOAT, out, axis=axis)
    elif form == "slice" and b.opset >= 10:
        end = b.rng.choice([1, 2**63 - 1])
        y = b.op("Slice", [s, ints(b, [0], "Slice"), ints(b, [end], "Slice"),
                          ints(b, [0], "Slice"), ints(b, [1], "Slice")], FLOAT, s.shape)
    elif form == "slice":  # Slice-1: the bounds are attributes
        end = b.rng.choice([1, 2**31 - 1])
        y = b.op("Slice", [s], FLOAT, s.shape, starts=[0], ends=[end], axes=[0])
    else:
        v = b.op("Reshape", [s, ints(b, [1, a * d], "Reshape")], FLOAT, (1, a * d))
        axes = shape_ops.axes_operand(b, "Squeeze", [0], 13)
        sq = b.op("Squeeze", [v, *axes["inputs"]], FLOAT, (a * d,), **axes["attrs"])
        y = b.op("Reshape", [sq, ints(b, [-1], "Reshape")], FLOAT, (a * d,))
    flat = b.op("Reshape", [y, ints(b, [-1, d], "Reshape")], FLOAT, (a, d))
    if b.opset >= 18:
        row = b.op("ReduceMean", [flat, b.ints([0], "ReduceMean")], FLOAT, (1, d), keepdims=1)
    else:
        row = b.op("ReduceMean", [flat], FLOAT, (1, d), keepdims=1, axes=[0])
    return b.op("Add", [x, row], FLOAT, broadcast(x.shape, row.shape))


def _reshape_zeros(b: GraphBuilder, x: Value) -> Value:
    """Reshape(Reshape(s, [0, 0, d]), spec) of a new input ``s`` (N, L, d) with two
    symbolic dims, where the second shape keeps what no shape inference resolves
    (``ReshapeReshape`` reads it): two 0s and a -1, or a 0 and a -1; the result added to
    ``x`` over its last dim."""
    d = x.shape[-1]
    s = b.graph_input(FLOAT, (1, 1, d), {0: "batch", 1: "seq"})
    y = b.op("Reshape", [s, ints(b, [0, 0, d], "Reshape")], FLOAT, s.shape)
    if b.rng.random() < 0.5:
        z = b.op("Reshape", [y, ints(b, [0, 0, -1], "Reshape")], FLOAT, s.shape)
    else:
        z = b.op("Reshape", [y, ints(b, [0, -1], "Reshape")], FLOAT, (1, d))
    row = b.op("Reshape", [z, ints(b, [1, d], "Reshape")], FLOAT, (1, d))
    return b.op("Add", [x, row], FLOAT, broadcast(x.shape, row.shape))


def _unknown_shapes(b: GraphBuilder, x: Value) -> Value:
    """The patterns of rules that read their input's shape, on ``x`` of unknown rank
    (:func:`.fold.unknown_rank`, from opset 10): Expand to ``x``'s own shape
    (``ExpandIdentity``; also on ``x`` itself, which it rewrites), a Slice over a whole
    axis with an end of the dim (``collapse_slice_rule``), Flatten (``Flatten2Reshape``),
    the two Slices of a split (``SlicesSplit``), ScatterND of every row
    (``ScatterAllStatic``) with the data or the updates of unknown rank; and on ``x``
    itself a Slice over a whole axis whose step is computed (1 when the model runs:
    ``collapse_slice2_rule`` cannot tell)."""
    form = b.rng.choice(["expand", "identity", "slice", "flatten", "split", "scatter",
                         "step"])
    if form == "identity" and b.opset >= 8:  # the known shape: ExpandIdentity's hit
        return b.op("Expand", [x, ints(b, list(x.shape), "Expand")], x.dtype, x.shape)
    u = unknown_rank(b, x)
    a = b.rng.randrange(x.rank)
    if form == "expand" and b.opset >= 8:
        return b.op("Expand", [u, ints(b, list(x.shape), "Expand")], x.dtype, x.shape)
    if form == "flatten":
        axis = b.rng.randint(0, x.rank)
        out = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
        y = b.op("Flatten", [u], x.dtype, out, axis=axis)
        return b.op("Reshape", [y, ints(b, list(x.shape), "Reshape")], x.dtype, x.shape)
    if form == "split" and x.shape[-1] > 1:
        d = x.shape[-1]
        first = slice_op(b, u, [0], [d // 2], [-1])
        second = slice_op(b, u, [d // 2], [d], [-1])
        return b.op("Concat", [second, first], x.dtype, x.shape, axis=-1)
    if form == "scatter" and b.opset >= 11:
        n = x.shape[0]
        idx = b.const(np.arange(n, dtype=np.int64).reshape(-1, 1), "ScatterND")
        updates = weight(b, x.shape, x.dtype, "ScatterND")
        data = u
        if b.rng.random() < 0.5:
            data, updates = x, unknown_rank(b, updates)
        return b.op("ScatterND", [data, idx, updates], x.dtype, x.shape)
    if form == "step" and b.opset >= 10:
        one = b.op("Sub", [b.op("Shape", [symbolic_input(b, 1)], INT64, (2,), ("nonneg",)),
                           ints(b, [0, 1], "Sub")], INT64, (2,), ("nonneg",))
        step = b.op("Slice", [one, ints(b, [0], "Slice"), ints(b, [1], "Slice")], INT64, (1,),
                    ("nonneg",))
        return b.op("Slice", [x, ints(b, [0], "Slice"), ints(b, [x.shape[a]], "Slice"),
                              ints(b, [a], "Slice"), step], x.dtype, x.shape)
    return slice_op(b, u, [0], [x.shape[a]], [a], [1] if b.opset >= 10 else None)


def _conv_pad_checks(b: GraphBuilder, x: Value) -> Value:
    """Pad (from opset 11, zero constant padding of the spatial dims of 4-D float ``x``)
    then Conv: the form ``FuseConvPad`` fuses (pads, a zero pad value and, from opset 18,
    ``axes`` constant), and forms where its checks fail: pads computed (read through
    :func:`.fold.hidden_length`), a computed pad value, negative pads (a crop), an input
    of unknown rank, pad ``axes`` computed (opset 18+), a Conv with ``auto_pad`` (on a new
    input of symbolic height, which ``NormalizePadFormatConv`` leaves as it is); or, with no
    Pad, a Conv with ``auto_pad`` on such an input (``NormalizePadFormatConv`` needs static
    spatial dims), averaged and added to ``x``."""
    n, c, h, w_ = x.shape
    m = b.rng.randint(1, 3)
    forms = ["fused", "fused", "fused", "computed", "value", "negative", "auto-pad",
             "unknown", "symbolic"]
    if b.opset >= 18:
        forms += ["axes", "fused-axes"]
    form = b.rng.choice(forms)
    if form == "symbolic":
        k = b.rng.randint(1, 2)
        s = b.graph_input(FLOAT, (1, c, 1, w_), {2: b.rng.choice(["H", "height"])})
        y = b.op("Conv", [s, weight(b, (m, c, k, k), FLOAT, "Conv")], FLOAT, (1, m, 1, w_),
                 auto_pad="SAME_UPPER", kernel_shape=[k, k])
        row = b.op("ReduceMean", [y], FLOAT, (1, 1, 1, 1), keepdims=1, axes=[1, 2, 3]) \
            if b.opset < 18 else b.op("ReduceMean", [y, ints(b, [1, 2, 3], "ReduceMean")],
                                      FLOAT, (1, 1, 1, 1), keepdims=1)
        return b.op("Add", [x, row], FLOAT, x.shape)
    # pads below the dims (what a reflect mode, which a schema row may set, allows)
    top, left = b.rng.randint(0, min(1, h - 1)), b.rng.randint(min(1, w_ - 1), min(2, w_ - 1))
    if form == "negative":
        left, form = (-1, form) if w_ > 2 else (left, "computed")
    spatial = [top, left, top, left]
    src = unknown_rank(b, x) if form == "unknown" else x
    if form == "auto-pad":
        n, h = 1, 1
        src = b.graph_input(FLOAT, (1, c, 1, w_), {2: "H"})
    ph, pw = h + 2 * top, w_ + 2 * left
    k = min(b.rng.randint(1, 2), ph, pw)
    inputs = [src.name]
    if form in ("axes", "fused-axes"):
        axes = ints(b, [2, 3] if b.rng.random() < 0.5 else [-2, -1], "Pad")
        if form == "axes":
            axes = hidden_length(b, axes)
        inputs += [ints(b, spatial, "Pad").name, "", axes.name]
    else:
        pv = ints(b, [0, 0, top, left, 0, 0, top, left], "Pad")
        inputs.append((hidden_length(b, pv) if form == "computed" else pv).name)
    if form == "value":
        inputs.append(computed_zero(b).name)
    elif form == "fused" and b.rng.random() < 0.5:
        inputs.append(b.const(np.asarray(0.0, np.float32), "Pad").name)
    padded = b.op("Pad", inputs, FLOAT, (n, c, ph, pw))
    wt = weight(b, (m, c, k, k), FLOAT, "Conv")
    if form == "auto-pad":
        return b.op("Conv", [padded, wt], FLOAT, (n, m, ph, pw), auto_pad="SAME_LOWER")
    return b.op("Conv", [padded, wt], FLOAT, (n, m, ph - k + 1, pw - k + 1))


MOTIFS = (
    ort_motif("os-reshape-gemm", ("gemm_to_matmul_add_rule",), repeat(_reshape_gemm, 2),
              ranks=(3, 4),
              anchors=("Gemm",)),
    ort_motif("os-scatter-forms", ("ScatterAllStatic", "ScatterAllDynamic"),
              repeat(_scatter_forms, 3),
              since=11, anchors=("ScatterND",)),
    ort_motif("os-conv-integer", ("FuseConvIntegerPad", "NormalizePadFormatConvInteger"),
              repeat(_conv_integer, 2), ranks=(4, 4), since=11, anchors=("ConvInteger", "Pad")),
    ort_motif("os-expand-bitshift", ("ExpandFirst_BitShift", "ExpandSecond_BitShift"),
              repeat(_expand_bitshift, 2), since=11, anchors=("BitShift",)),
    ort_motif("os-if-initializers", ("LiftSubgraphInitializersToMainGraphPass",
                                     "FoldConstantsPass"), repeat(_if_initializers, 2), since=9,
              anchors=("If",)),
    ort_motif("os-reshape-zeros", ("ReshapeReshape",), repeat(_reshape_zeros, 2), since=7),
    ort_motif("os-reshape-symbolic", ("MaterializeReshapeShape",), repeat(_reshape_symbolic, 2),
              since=7, anchors=("Reshape",)),
    ort_motif("os-expand-dynamic", ("ExpandFirst_Add", "ExpandSecond_Add", "ExpandFirst_Mul",
                                    "ExpandSecond_Mul", "ExpandFirst_Sub",
                                    "ExpandSecond_Sub"), repeat(_expand_dynamic, 3), since=8,
              anchors=("Expand",)),
    ort_motif("os-clip-bounds", ("FuseSuccessiveClip", "FuseSuccessiveClipRelu",
                                 "FuseSuccessiveReluClip", "FuseMaxMinToClip"),
              repeat(_clip_bounds, 3), since=11, anchors=("Clip",)),
    ort_motif("os-bn-checks", ("FuseBatchNormIntoConv", "FuseBatchNormIntoGemm"),
              repeat(_bn_checks, 2), ranks=(2, 4), anchors=("BatchNormalization",)),
    ort_motif("os-conv-auto-pad", ("NormalizePadFormatConv",), repeat(_conv_auto_pad, 2),
              ranks=(3, 4),
              anchors=("Conv",)),
    ort_motif("os-qlinear-conv-zero-bias", ("RemoveOptionalBiasFromQLinearConv",),
              _qlinear_conv_zero_bias, ranks=(4, 4), since=10, anchors=("QLinearConv",)),
    ort_motif("os-unsqueeze-pair", ("UnsqueezeUnsqueeze",), repeat(_unsqueeze_pair, 2),
              ranks=(1, 3),
              since=13, anchors=("Unsqueeze",)),
    ort_motif("os-unknown-shapes", ("ExpandIdentity", "collapse_slice_rule",
                                    "collapse_slice2_rule", "Flatten2Reshape", "SlicesSplit",
                                    "ScatterAllStatic"), repeat(_unknown_shapes, 3),
              since=10, anchors=("Expand", "ScatterND")),
    ort_motif("os-conv-pad-checks", ("FuseConvPad", "NormalizePadFormatConv"),
              repeat(_conv_pad_checks, 3), ranks=(4, 4), since=11, anchors=("Pad",)),
    ort_motif("os-symbolic-shapes", ("Flatten2Reshape", "collapse_slice_rule",
                                     "collapse_slice2_rule", "SqueezeReshape1d"),
              repeat(_symbolic_shapes, 3), since=7, anchors=("Flatten", "Slice", "Squeeze")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 142
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
