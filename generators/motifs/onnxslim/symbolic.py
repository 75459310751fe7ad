"""Motifs for onnxslim's symbolic shape inference (``core/shape_inference``: the
``shape_infer`` step, onnxruntime's symbolic shape inference with ``auto_merge``), built on
graph interfaces the random generator never declares.

The generator's graph inputs have fixed dims except a symbolic batch dim; these motifs add
graph inputs of their own whose dims are symbolic at other axes (one name per dim, or one name
shared by two inputs), unknown (a dim with neither a value nor a name) or named ``unk__*``
(the names onnx's own inference makes up), and read them where the inference computes with
symbols instead of numbers:

- windows over symbolic spatial dims (``Tile`` makes them ``a*h``): Conv, MaxPool and
  AveragePool with pads, ``auto_pad`` (VALID, SAME_UPPER, SAME_LOWER), strides, dilations,
  ``ceil_mode`` (``InferenceContext.compute_conv_pool_shape``), and Resize by scales or
  sizes (``standard_ops/misc/resize.py``);
- Slice of symbolic dims (consecutive Slices: EliminationSlice's input too, with symbolic
  dims under negative axes) with ends past ``int_max``, below ``-int_max``, negative, of 1 and
  above, ends computed from ``Shape`` (a symbolic end), starts computed from data (unknown),
  negative steps (``standard_ops/tensor/slice.py``);
- broadcasts, MatMul, Concat and Where between dims of different names, of no name, and of a
  name against a fixed size (``merge_symbols``, ``add_suggested_merge``, the auto-merge of
  ``_infer_impl``);
- Einsum with ellipses, repeated labels and the implicit output
  (``standard_ops/math/einsum.py``);
- shape arithmetic on symbolic dims: Shape with ``start``/``end``, Gather, ReduceProd,
  Concat, Range, ConstantOfShape, Div and Mul on dims (the handlers' symbolic data);
- an op it has no rule for (``com.microsoft`` FusedMatMul), where it stops and onnx's
  inference takes over.

Every symbolic or unknown dim is 1 at run time (the size onnxruntime and the feeds give a
dynamic dim, :data:`generators.inputs.DEFAULT_DYNAMIC_DIM`); each motif plants what it needs
of that: ``Tile`` by a constant turns a symbolic 1 into a larger dim, a broadcast of two
symbolic dims is a broadcast of ones. The window and Slice motifs declare no anchors: the
schema variation's edits of their Conv (``group``) and Slice nodes, checked on the draw's
fixed shapes, left models onnxruntime refuses once the dims are symbolic.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, tensor_proto
from generators.motifs.helpers import Emit, ints
from generators.motifs.shaped import shaped_motif
from generators.ops import shape_ops
from generators.values import BOOL, FLOAT, FLOAT16, INT64, NP_DTYPE, Value, broadcast

#: onnxslim's ``int_max`` (``ShapeInferencer.infer_shapes``' default): Slice ends at or past
#: it mean "to the end", ends at or below its negative "before the start".
INT_MAX = 2**31 - 1
#: dim names these motifs declare (``unk__*`` is how onnx names a dim it made up).
_NAMES = ("h", "w", "seq", "n", "unk__7", "unk__12", "L")


def symbolic_input(b: GraphBuilder, dtype: int, shape: tuple[int, ...],
                   names: dict[int, str | None]) -> Value:
    """A new graph input of ``dtype`` and run-time ``shape``: each axis in ``names`` declared
    symbolic by its name, or unknown (neither value nor name) where the name is None; those
    axes must be 1 in ``shape``."""
    v = b.graph_input(dtype, shape, {a: n or "unknown" for a, n in names.items()})
    dims = b.inputs[-1].type.tensor_type.shape.dim
    for axis, name in names.items():
        if name is None:
            dims[axis].Clear()
    return v


def _names(b: GraphBuilder, axes: list[int]) -> dict[int, str | None]:
    """A name per axis (one unknown dim a sixth of the time), distinct ones mostly."""
    pool = list(_NAMES)
    b.rng.shuffle(pool)
    return {a: (None if b.rng.random() < 1 / 6 else pool[i]) for i, a in enumerate(axes)}


def repeated(emit: Emit, lo: int, hi: int) -> Emit:
    """``emit`` drawn ``lo`` to ``hi`` times in one draw (each on the previous result; a draw
    that does not fit ends it): a campaign draws each of these motifs a few times only."""

    def chained(b: GraphBuilder, x: Value) -> Value | None:
        y = None
        for _ in range(b.rng.randint(lo, hi)):
            z = emit(b, y if y is not None else x)
            if z is None:
                break
            y = z
        return y

    return chained


def tile(b: GraphBuilder, x: Value, repeats: list[int]) -> Value:
    """``Tile(x, repeats)``: symbolic dims of x become products the inference carries."""
    out = tuple(d * r for d, r in zip(x.shape, repeats, strict=True))
    return b.op("Tile", [x, ints(b, repeats, "Tile")], x.dtype, out, x.props)


def _dtype(b: GraphBuilder, choices: tuple[int, ...] = (FLOAT, FLOAT, FLOAT16)) -> int:
    return b.rng.choice(choices)


# -- windows over symbolic spatial dims ------------------------------------------------------

def _window_size(d: int, k: int, s: int, dil: int, pads: tuple[int, int] | None,
                 auto: str, ceil: bool = False) -> int:
    """Output length of a Conv/Pool window along a dim of length ``d``."""
    span = dil * (k - 1) + 1
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return -(-d // s)
    total = d - span + (sum(pads) if pads and auto == "NOTSET" else 0)
    return (-(-total // s) if ceil else total // s) + 1


def _window_attrs(b: GraphBuilder, spatial: tuple[int, ...], op: str) -> tuple[dict, list[int]]:
    """Attributes of a Conv/MaxPool/AveragePool window over ``spatial`` (every dim >= 3) and
    the output's spatial dims: pads (given or left out), ``auto_pad``, strides, dilations
    (Conv, and MaxPool from opset 10), ``ceil_mode`` (pools from opset 10, only where ceil
    and floor agree)."""
    auto = b.rng.choice(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    dilate = op == "Conv" or (op == "MaxPool" and b.opset >= 10)
    ks, ss, ds, pads, out = [], [], [], [], []
    for d in spatial:
        k = b.rng.randint(1, 3)
        dil = 2 if dilate and not auto.startswith("SAME") and b.rng.random() < 0.3 else 1
        s = b.rng.choice([1, 2, 2, 3])
        p = (b.rng.randint(0, k - 1), b.rng.randint(0, k - 1)) if auto == "NOTSET" else (0, 0)
        if d + sum(p) < dil * (k - 1) + 1:
            k, dil = 1, 1
        if auto.startswith("SAME"):
            s = min(s, k)  # onnxruntime's pools refuse the negative pads of a longer stride
        ks.append(k)
        ss.append(s)
        ds.append(dil)
        pads.append(p)
    ceil = False
    if op != "Conv" and b.opset >= 10 and auto in ("NOTSET", "VALID") and b.rng.random() < 0.5:
        ceil = all((d - (dl * (k - 1) + 1) + (sum(p) if auto == "NOTSET" else 0)) % s == 0
                   for d, k, s, dl, p in zip(spatial, ks, ss, ds, pads, strict=True))
    out = [_window_size(d, k, s, dl, p, auto, ceil)
           for d, k, s, dl, p in zip(spatial, ks, ss, ds, pads, strict=True)]
    attrs = {"kernel_shape": ks, "strides": ss if any(s != 1 for s in ss) or
             b.rng.random() < 0.5 else None}
    if any(dl != 1 for dl in ds):
        attrs["dilations"] = ds
    if auto == "NOTSET":
        flat = [p[0] for p in pads] + [p[1] for p in pads]
        attrs["pads"] = flat if any(flat) or b.rng.random() < 0.5 else None
        if b.rng.random() < 0.2:
            attrs["auto_pad"] = "NOTSET"
    else:
        attrs["auto_pad"] = auto
    if ceil:
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and b.rng.random() < 0.4:
        attrs["count_include_pad"] = 1
    return attrs, out


def _symbolic_window(b: GraphBuilder, x: Value) -> Value:
    """A (1, C, h, w) input with symbolic spatial dims (or one of them fixed), tiled to
    (1, C, a*h, c*w), then two or three of Conv / MaxPool / AveragePool / Resize
    (:func:`_resize`) over it."""
    rank = b.rng.choice([3, 4, 4])
    c = b.rng.randint(1, 3)
    axes = list(range(2, rank))
    if rank == 4 and b.rng.random() < 0.25:
        axes = [b.rng.choice(axes)]
    names = _names(b, axes)
    if b.rng.random() < 0.3:
        names[0] = b.rng.choice(["N", "batch"])
    dtype = _dtype(b)
    v = symbolic_input(b, dtype, (1, c) + (1,) * (rank - 2), names)
    reps = [1, 1] + [b.rng.randint(3, 6) for _ in range(rank - 2)]
    y = tile(b, v, reps)
    for _ in range(b.rng.randint(2, 3)):
        op = b.rng.choice(["Conv", "MaxPool", "AveragePool", "Resize"] if dtype == FLOAT
                          else ["Conv"])
        if op == "Resize":
            if b.opset >= 10:
                y = _resize(b, y)
            continue
        attrs, out = _window_attrs(b, y.shape[2:], op)
        if op == "Conv":
            m = b.rng.randint(1, 3)
            group = y.shape[1] if y.shape[1] > 1 and b.rng.random() < 0.3 else 1
            m = m * group if group > 1 else m
            inputs = [y, b.random_weight((m, y.shape[1] // group, *attrs["kernel_shape"]),
                                         dtype, "Conv")]
            if b.rng.random() < 0.5:
                inputs.append(b.random_weight((m,), dtype, "Conv"))
            if group > 1:
                attrs["group"] = group
            y = b.op("Conv", inputs, dtype, (1, m, *out), **attrs)
        else:
            y = b.op(op, [y], dtype, (1, y.shape[1], *out), y.props, **attrs)
    return y


def _resize(b: GraphBuilder, y: Value) -> Value:
    """Resize of (1, C, spatial...) ``y`` by scales (2, 3 or 0.5 on the spatial dims) or by
    sizes (a constant, or ``Shape(y) * factors`` computed), in the opset's form (opset 10:
    scales only; 11 and 12: an empty ``roi`` and an empty ``scales`` beside ``sizes``)."""
    factors = [1, 1] + [b.rng.choice([2.0, 3.0, 0.5] if d >= 2 else [2.0, 3.0])
                        for d in y.shape[2:]]
    out = tuple(int(np.floor(d * f)) for d, f in zip(y.shape, factors, strict=True))
    mode = b.rng.choice([None, "nearest", "linear"])
    empty = b.const(np.zeros((0,), np.float32), "Resize") if b.opset in (11, 12) else None
    if b.opset == 10 or b.rng.random() < 0.5:
        scales = b.const(np.asarray(factors, np.float32), "Resize")
        inputs = [y.name, scales.name] if b.opset == 10 else \
            [y.name, empty.name if empty else "", scales.name]
        return b.op("Resize", inputs, y.dtype, out, mode=mode)
    if b.rng.random() < 0.5:
        sizes = ints(b, list(out), "Resize")
    else:  # computed from the symbolic shape: Shape(y) * 2 (or 1) per dim
        twice = [1, 1] + [2] * (y.rank - 2)
        out = tuple(d * t for d, t in zip(y.shape, twice, strict=True))
        sizes = b.op("Mul", [b.op("Shape", [y], INT64, (y.rank,)), ints(b, twice, "Mul")],
                     INT64, (y.rank,))
    return b.op("Resize", [y.name, empty.name if empty else "", empty.name if empty else "",
                           sizes.name], y.dtype, out, mode=mode)


# -- Slice of symbolic dims ------------------------------------------------------------------

def _bounds(b: GraphBuilder, d: int) -> tuple[int, int, int]:
    """(start, end, step) for a dim of run-time length ``d``, drawn to reach each way the
    inference treats a literal end of a symbolic dim."""
    return b.rng.choice([
        (0, INT_MAX + 5, 1), (1, 2**62, 1), (0, -1, 1), (-2, -1, 1), (1, 1, 1), (0, 2, 1),
        (0, 1, 1), (-3, d, 1), (-1, -INT_MAX - 5, -1), (d - 1, -d - 1, -1), (0, d, 2),
        (-d, 3, 1)])


def _symbolic_slice(b: GraphBuilder, x: Value) -> Value:
    """An input of rank 2 or 3 with symbolic dims, tiled so that they are ``a*n`` long, then
    two to four of: a Slice of a symbolic dim with literal bounds (:func:`_bounds`; steps
    absent or given, axes absent, negative or given), with an end computed from a ``Shape``
    (:func:`_computed_end`: a symbolic end), with a start computed from the data (``ArgMax``:
    unknown to the inference), and a Reshape to ``(leading dims, -1)`` whose leading dims are
    a Slice of ``Shape(y)`` (the inference slices the shape's symbolic values)."""
    rank = b.rng.randint(2, 3)
    axes = sorted(b.rng.sample(range(rank), b.rng.randint(1, rank)))
    dtype = _dtype(b, (FLOAT, FLOAT, INT64))
    v = symbolic_input(b, dtype, (1,) * rank, _names(b, axes))
    y = tile(b, v, [b.rng.randint(3, 5) if a in axes else b.rng.randint(1, 3)
                    for a in range(rank)])
    for _ in range(b.rng.randint(2, 4)):
        a = b.rng.choice(axes)
        d = y.shape[a]
        kind = b.rng.random() if b.opset >= 10 else 0.0
        if kind < 0.6:
            start, end, step = _bounds(b, d)
            if b.opset < 10:
                step = 1
            out = shape_ops.slice_dim(d, start, end, step)
            if out == 0:
                start, end, step = 0, INT_MAX + 5, 1
            spell = a - rank if b.opset >= 11 and b.rng.random() < 0.3 else a
            y = slice_form(b, y, [start], [end], [spell], [step], axes_given=len(axes) > 1 or
                       a != 0 or b.rng.random() < 0.5)
        elif kind < 0.8:  # end computed from a Shape: symbolic to the inference
            other = symbolic_input(b, FLOAT, (1, 1), _names(b, [0, 1])) \
                if b.rng.random() < 0.3 else y
            y = _computed_end(b, y, a, other)
        elif kind < 0.9:  # start computed from the data: ArgMax of two leading values
            start = small_index(b, y)
            bounds = [y.name, start.name, ints(b, [INT_MAX + 5], "Slice").name]
            if a != 0 or b.rng.random() < 0.5:
                bounds.append(ints(b, [a], "Slice").name)
            sliced = b.node("Slice", bounds)[0]  # its length is unknown here
            top = b.op("ReduceMax", [Value(sliced, y.dtype, ())], y.dtype, (1,) * rank,
                       keepdims=1)
            y = b.op("Add", [y, top], y.dtype, y.shape)
        else:  # Reshape to (leading dims, -1) by a slice of Shape(y) (shape arithmetic)
            keep = b.rng.randint(1, rank - 1)
            shape = b.op("Shape", [y], INT64, (rank,))
            if b.rng.random() < 0.5:
                lead = slice_form(b, shape, [0], [keep], [0], [1], axes_given=b.rng.random() < 0.7)
            else:  # the first part of a Split of the shape
                sizes = [keep, rank - keep]
                form = {"inputs": [ints(b, sizes, "Split").name], "attrs": {}} \
                    if b.opset >= 13 else {"inputs": [], "attrs": {"split": sizes}}
                parts = b.node("Split", [shape.name, *form["inputs"]], n_out=2, axis=0,
                               **form["attrs"])
                lead = Value(parts[0], INT64, (keep,))
            target = b.op("Concat", [lead, ints(b, [-1], "Concat")], INT64, (keep + 1,),
                          axis=0)
            flat = int(np.prod(y.shape[keep:]))
            y = b.op("Reshape", [y, target], y.dtype, (*y.shape[:keep], flat))
            rank, axes = y.rank, [i for i in range(y.rank)]
    return y


def _computed_end(b: GraphBuilder, y: Value, a: int, other: Value) -> Value:
    """``Slice(y, 0, end, axis a)`` whose end is ``Shape(src)[k] + delta`` computed at run
    time: ``src`` is ``y`` itself (the same axis or another) or ``other`` (a dim of another
    name), ``delta`` in -2..2 (an end past the dim or within it)."""
    src = b.rng.choice([y, y, other])
    k = a if src is y and b.rng.random() < 0.6 else b.rng.randrange(src.rank)
    delta = b.rng.randint(-2, 2)
    if src.shape[k] + delta < 1:
        delta = 0
    shape = b.op("Shape", [src], INT64, (src.rank,))
    end = b.op("Gather", [shape, ints(b, [k], "Gather")], INT64, (1,))
    if delta:
        end = b.op("Add", [end, ints(b, [delta], "Add")], INT64, (1,))
    out = list(y.shape)
    out[a] = shape_ops.slice_dim(y.shape[a], 0, src.shape[k] + delta, 1)
    return b.op("Slice", [y, ints(b, [0], "Slice"), end, ints(b, [a], "Slice")], y.dtype,
                tuple(out))


def slice_form(b: GraphBuilder, x: Value, starts: list[int], ends: list[int], axes: list[int],
           steps: list[int], axes_given: bool = True) -> Value:
    """Slice in the opset's form with the output shape computed; ``axes`` left out where
    ``axes_given`` is False and they are ``[0]``; ``steps`` left out when all 1."""
    out = list(x.shape)
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        out[a % x.rank] = shape_ops.slice_dim(x.shape[a % x.rank], s, e, st)
    if b.opset < 10:
        return b.op("Slice", [x], x.dtype, tuple(out), x.props, starts=starts, ends=ends,
                    axes=axes if axes_given or axes != [0] else None)
    inputs = [x, ints(b, starts, "Slice"), ints(b, ends, "Slice")]
    if axes_given or axes != [0] or any(st != 1 for st in steps):
        inputs.append(ints(b, axes, "Slice"))
        if any(st != 1 for st in steps) or b.rng.random() < 0.3:
            inputs.append(ints(b, steps, "Slice"))
    return b.op("Slice", inputs, x.dtype, tuple(out), x.props)


# -- merges of symbols ----------------------------------------------------------------------

def _symbolic_merge(b: GraphBuilder, x: Value) -> Value:
    """Two or three new inputs whose dims are named differently (or unknown, or a name
    against a fixed 1), combined by Add / Mul / Sub / Div, MatMul, Concat, Where, Max, Min or
    Sum, so that the inference has to merge their symbols; at times the first input is also
    a graph output (the inference then keeps the node order it is given)."""
    dtype = _dtype(b, (FLOAT, FLOAT, FLOAT16))
    rank = b.rng.randint(1, 3)
    op = b.rng.choice(["Add", "Mul", "Sub", "Div", "MatMul", "Concat", "Max", "Min", "Sum",
                       *(["Where"] if b.opset >= 9 else [])])
    if op == "MatMul":  # batch dims (rank 3, 4) broadcast symbol against symbol; vectors
        rank = b.rng.choice([1, 2, 3, 3, 4])
    shared = b.rng.random() < 0.3
    first = symbolic_input(b, dtype, (1,) * rank, _names(b, list(range(rank))))
    names = dict(_names(b, list(range(rank))))
    if shared:  # one name in both inputs at one axis, others differ
        axis = b.rng.randrange(rank)
        dims = b.inputs[-1].type.tensor_type.shape.dim
        names[axis] = dims[axis].dim_param or None
    if b.rng.random() < 0.3:  # a fixed 1 against a name
        fixed = b.rng.randrange(rank)
        names.pop(fixed)
    second = symbolic_input(b, dtype, (1,) * rank, names)
    if b.rng.random() < 0.15:  # a graph input that is also a graph output (passed through)
        b.graph_output(first)
    if b.rng.random() < 0.3:  # both tiled alike: products of different symbols to merge
        reps = [b.rng.randint(2, 3) for _ in range(rank)]
        if op == "MatMul":  # square trailing dims keep the product defined
            reps = [reps[0]] * rank
        first, second = tile(b, first, reps), tile(b, second, reps)
    if op == "Concat":
        axis = b.rng.randrange(rank)
        out = tuple(2 * d if i == axis else d for i, d in enumerate(first.shape))
        y = b.op("Concat", [first, second], dtype, out,
                 axis=axis - rank if b.opset >= 11 and b.rng.random() < 0.3 else axis)
    elif op == "Where":
        cond = symbolic_input(b, FLOAT, (1,) * rank, _names(b, [b.rng.randrange(rank)]))
        flag = b.op("Greater", [cond, b.scalar(0.0, FLOAT, "Greater")], BOOL, cond.shape)
        y = b.op("Where", [flag, first, second], dtype, first.shape)
    elif op in ("Max", "Min", "Sum"):
        parts = [first, second]
        if b.opset >= 8 and b.rng.random() < 0.5:  # variadic broadcasting from opset 8
            parts.append(b.random_weight((1,) * rank, dtype, op))
        y = b.op(op, parts, dtype, first.shape)
    elif op == "MatMul":
        if rank == 1 and b.rng.random() < 0.6:  # a vector against a matrix, either side
            names = _names(b, [0, 1])
            n = first.shape[0]
            if n == 1:
                matrix = symbolic_input(b, dtype, (1, 1), names)
                first, second = (first, matrix) if b.rng.random() < 0.5 else (matrix, first)
            elif b.rng.random() < 0.5:  # a tiled vector (n,) @ (n, 1): its length is fixed
                first, second = first, symbolic_input(b, dtype, (n, 1), {1: names[1]})
            else:  # (1, n) @ (n,)
                first, second = symbolic_input(b, dtype, (1, n), {0: names[0]}), first
        out = np.matmul(np.zeros(first.shape), np.zeros(second.shape)).shape
        y = b.op(op, [first, second], dtype, tuple(out))
        if not y.shape:  # a vector product is a scalar: go on with one element
            y = b.op("Reshape", [y, ints(b, [1], "Reshape")], dtype, (1,))
    else:
        y = b.op(op, [first, second], dtype, broadcast(first.shape, second.shape))
    return y


# -- Einsum ----------------------------------------------------------------------------------

#: Einsum equations: explicit and implicit output, ellipses, repeated labels.
_EQUATIONS = (
    "ij,jk->ik", "bij,bjk->bik", "...ij,...jk->...ik",
    "...ij,...jk", "ij,jk", "ij->ji", "ii->i",
    "ij,ij->", "i,i", "...i,...i->...", "bii->bi",
    "ij...,jk...->ik...", "ji", "...ii->...i", "ab,cd->abcd",
)


def _einsum(b: GraphBuilder, x: Value) -> Value:
    """Einsum of a symbolic-dim input (and a weight) by an equation of :data:`_EQUATIONS`:
    letters bound to symbolic dims (1 at run time) or fixed sizes; repeated labels get one
    size; the input's ellipsis dims all fixed in half the draws (the inference compares the
    operands' ellipsis dims with ``max``, which fails on a symbol against a number)."""
    eq = b.rng.choice(_EQUATIONS)
    lhs = eq.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    dtype = _dtype(b, (FLOAT, FLOAT, INT64))
    operands = []
    ell = b.rng.randint(1, 2)
    fixed_ellipsis = b.rng.random() < 0.5
    for i, term in enumerate(lhs):
        shape = []
        spelled = term.replace("...", "." * ell)
        for ch in spelled:
            if ch == ".":
                shape.append(1)
                continue
            size = sizes.setdefault(ch, 1 if i == 0 and b.rng.random() < 0.6 else
                                    b.rng.randint(1, 3))
            shape.append(size)
        if i == 0:
            names = {p: n for p, n in _names(b, [p for p, d in enumerate(shape) if d == 1])
                     .items() if b.rng.random() < 0.8 and not
                     (fixed_ellipsis and spelled[p] == ".")}
            operands.append(symbolic_input(b, dtype, tuple(shape), names))
        else:
            operands.append(b.random_weight(tuple(shape), dtype, "Einsum"))
    arrays = [np.zeros(v.shape, NP_DTYPE[FLOAT]) for v in operands]
    out = np.einsum(eq, *arrays).shape
    return b.op("Einsum", operands, dtype, tuple(out), equation=eq)


# -- shapes computed from data, sequences ----------------------------------------------------

def small_index(b: GraphBuilder, x: Value) -> Value:
    """``ArgMax`` of two values of ``x`` as a 1-D int64 of one element: 0 or 1, known only
    at run time."""
    flat = b.op("Reshape", [x, ints(b, [-1], "Reshape")], x.dtype, (x.size,))
    first = slice_form(b, flat, [0], [2], [0], [1], axes_given=False)
    if first.dtype != FLOAT:
        first = b.op("Cast", [first], FLOAT, (2,), to=FLOAT)
    return b.op("ArgMax", [first], INT64, (1,), axis=0, keepdims=1)


def _reduced(b: GraphBuilder, name: str, dtype: int, rank: int) -> Value:
    """``ReduceSum`` over all axes (keepdims) of a tensor whose shape only the run knows
    (it may be empty): a (1, ...) value the generator can go on with."""
    return b.op("ReduceSum", [Value(name, dtype, ())], dtype, (1,) * rank, keepdims=1)


def _data_dependent(b: GraphBuilder, x: Value) -> Value:
    """Three or four ops whose output shape only the data decides (NonZero, Compress, Range and
    TopK with a computed bound, ConstantOfShape of a computed shape) or a sequence
    (SequenceConstruct, SequenceInsert, SequenceAt, SequenceLength, ConcatFromSequence); the
    inference names a new dim for each. The result is reduced to ones (its shape is unknown
    to the generator) and added to ``x``."""
    x = x if x.dtype == FLOAT else b.op("Cast", [x], FLOAT, x.shape, to=FLOAT)
    if x.size < 2:
        x = b.op("Concat", [x, x], FLOAT, (*x.shape[:-1], 2 * x.shape[-1]) if x.rank else
                 (2,), axis=x.rank - 1 if x.rank else 0) if x.rank else \
            b.op("Expand", [x, ints(b, [2], "Expand")], FLOAT, (2,))
    kinds = ["nonzero", "compress", "range", "topk", "constantofshape"]
    if b.opset >= 11:
        kinds += ["sequence", "sequence"]
    y = x
    for kind in b.rng.sample(kinds, min(len(kinds), b.rng.randint(3, 4))):
        if kind == "nonzero" and b.opset >= 9:
            flag = b.op("Greater", [y, b.scalar(0.0, FLOAT, "Greater")], BOOL, y.shape)
            idx = b.node("NonZero", [flag.name])[0]
            part = _reduced(b, idx, INT64, 2)
            part = b.op("Cast", [part], FLOAT, (1, 1), to=FLOAT)
        elif kind == "compress" and b.opset >= 9:
            flat = b.op("Reshape", [y, ints(b, [-1], "Reshape")], FLOAT, (y.size,))
            flag = b.op("Greater", [flat, b.scalar(0.0, FLOAT, "Greater")], BOOL, flat.shape)
            kept = b.node("Compress", [flat.name, flag.name], axis=0)[0]
            part = _reduced(b, kept, FLOAT, 1)
        elif kind == "range" and b.opset >= 11:
            limit = b.op("Add", [small_index(b, y), ints(b, [1], "Add")], INT64, (1,))
            scalar = b.op("Squeeze", [limit, ints(b, [0], "Squeeze")] if b.opset >= 13 else
                          [limit], INT64, (), **({} if b.opset >= 13 else {"axes": [0]}))
            seq = b.node("Range", [b.const(np.asarray(0, np.int64), "Range").name,
                                   scalar.name, b.const(np.asarray(1, np.int64), "Range").name])[0]
            part = b.op("Cast", [_reduced(b, seq, INT64, 1)], FLOAT, (1,), to=FLOAT)
        elif kind == "topk" and b.opset >= 10:
            flat = b.op("Reshape", [y, ints(b, [-1], "Reshape")], FLOAT, (y.size,))
            k = b.op("Add", [small_index(b, y), ints(b, [1], "Add")], INT64, (1,))
            values, _ = b.node("TopK", [flat.name, k.name], n_out=2, axis=-1,
                               **({"largest": 0} if b.opset >= 11 and b.rng.random() < 0.3
                                  else {}))
            part = _reduced(b, values, FLOAT, 1)
        elif kind == "constantofshape" and b.opset >= 9:
            size = b.op("Add", [small_index(b, y), ints(b, [1], "Add")], INT64, (1,))
            value = tensor_proto(np.asarray([1.5], np.float32), "value") \
                if b.rng.random() < 0.6 else None  # absent: float zeros
            filled = b.node("ConstantOfShape", [size.name], value=value)[0]
            part = _reduced(b, filled, FLOAT, 1)
        elif kind == "sequence":
            part = _sequence(b, y)
        else:
            continue
        y = b.op("Add", [y, part], FLOAT, broadcast(y.shape, part.shape))
    return y


def _sequence(b: GraphBuilder, y: Value) -> Value:
    """A sequence of ``y`` and a transform of it: read back by SequenceAt (a constant or a
    computed position, negative at times), ConcatFromSequence (``new_axis`` 0 or 1) or
    SequenceLength, after a SequenceInsert at times."""
    other = b.op("Neg", [y], FLOAT, y.shape)
    seq = b.node("SequenceConstruct", [y.name, other.name])[0]
    if b.rng.random() < 0.4:
        seq = b.node("SequenceInsert", [seq, y.name])[0]
    how = b.rng.choice(["at", "at", "concat", "length"])
    if how == "at":
        if b.rng.random() < 0.5:
            pos = b.const(np.asarray(b.rng.choice([0, 1, -1]), np.int64), "SequenceAt")
        else:
            idx = small_index(b, y)
            pos = b.op("Squeeze", [idx, ints(b, [0], "Squeeze")] if b.opset >= 13 else [idx],
                       INT64, (), **({} if b.opset >= 13 else {"axes": [0]}))
        return b.op("SequenceAt", [Value(seq, FLOAT, ()), pos], FLOAT, y.shape)
    if how == "concat" and y.rank >= 1:
        new_axis = b.rng.randint(0, 1)
        axis = b.rng.randrange(y.rank + new_axis)
        spell = axis - y.rank - new_axis if b.rng.random() < 0.3 else axis
        joined = b.node("ConcatFromSequence", [seq], axis=spell,
                        new_axis=new_axis if new_axis or b.rng.random() < 0.5 else None)[0]
        return _reduced(b, joined, FLOAT, y.rank + new_axis)
    length = b.node("SequenceLength", [seq])[0]
    return b.op("Cast", [Value(length, INT64, ())], FLOAT, (), to=FLOAT)


# -- arithmetic on symbolic shapes ----------------------------------------------------------

def _shape_arithmetic(b: GraphBuilder, x: Value) -> Value:
    """Shape values of a tiled symbolic input carried through the ops exporters build shapes
    with: ``Shape`` (with ``start``/``end`` from opset 15, negative at times), ``Gather`` of a
    1-D or a negative scalar index, ``ReduceProd`` (the element count), ``Mul`` / ``Div`` /
    ``Sub`` on dims, ``Concat`` with constants, ``Range`` up to a dim, ``ConstantOfShape`` of a
    computed shape, then a Reshape or Expand by the result: two to four such forms
    (:func:`_shape_form`) read the same input."""
    rank = b.rng.randint(2, 3)
    axes = sorted(b.rng.sample(range(rank), b.rng.randint(1, rank)))
    v = symbolic_input(b, FLOAT, (1,) * rank, _names(b, axes))
    y = tile(b, v, [b.rng.randint(2, 4) for _ in range(rank)])
    if b.opset >= 15 and b.rng.random() < 0.5:
        start = b.rng.choice([0, 1, -rank + 1])
        end = b.rng.choice([None, rank, -1]) if start % rank < rank - 1 else None
        lo = start % rank
        hi = rank if end is None else end % (rank + 1) if end >= 0 else rank + end
        hi = max(hi, lo + 1)
        end = None if hi == rank else end if end is not None and end % rank == hi % rank \
            else hi
        shape = b.op("Shape", [y], INT64, (hi - lo,), start=start if start else None, end=end)
        dims = list(y.shape[lo:hi])
    else:
        shape = b.op("Shape", [y], INT64, (rank,))
        dims = list(y.shape)
    results = [r for form in b.rng.sample(["flatten", "lead", "range", "fill", "halve"],
                                          b.rng.randint(2, 4))
               if (r := _shape_form(b, y, shape, dims, form)) is not y]
    for r in results[:-1]:  # each form reads y; all but the last become graph outputs
        b.graph_output(r)
    return results[-1] if results else y


def _shape_form(b: GraphBuilder, y: Value, shape: Value, dims: list[int], form: str) -> Value:
    """One form of :func:`_shape_arithmetic` on ``y`` and its ``shape`` (of ``dims``); ``y``
    itself where the form does not fit."""
    rank = y.rank
    if form == "flatten" and b.opset >= 11:  # Reshape(y, [ReduceProd(Shape(y))])
        count = b.op("ReduceProd", [b.op("Shape", [y], INT64, (rank,))], INT64, (),
                     axes=[0] if b.opset < 18 else None, keepdims=0)
        return b.op("Reshape", [y, shape_ops.unsqueeze(b, count, [0])], FLOAT, (y.size,))
    if form == "lead" and len(dims) >= 2:  # Reshape(y, [dims[0], dims[-1] ... , -1])
        picked = b.op("Gather", [shape, ints(b, [0, -1], "Gather")], INT64, (2,))
        target = b.op("Concat", [picked, ints(b, [-1], "Concat")], INT64, (3,), axis=0)
        rest = y.size // (dims[0] * dims[-1])
        return b.op("Reshape", [y, target], FLOAT, (dims[0], dims[-1], rest))
    full = b.op("Shape", [y], INT64, (rank,))
    last = b.op("Gather", [full, b.const(np.asarray(-1, np.int64), "Gather")], INT64, ())
    if form == "range" and b.opset >= 11:
        seq = b.op("Range", [b.const(np.asarray(0, np.int64), "Range"), last,
                             b.const(np.asarray(1, np.int64), "Range")], INT64, (y.shape[-1],))
        as_float = b.op("Cast", [seq], FLOAT, seq.shape, to=FLOAT)
        return b.op("Add", [y, as_float], FLOAT, y.shape)
    if form == "fill" and b.opset >= 9:
        size = shape_ops.unsqueeze(b, last, [0])
        filled = b.op("ConstantOfShape", [size], FLOAT, (y.shape[-1],),
                      value=tensor_proto(np.asarray([0.5], np.float32), "value"))
        return b.op("Mul", [y, filled], FLOAT, y.shape)
    # halve: Expand y's first dim to dims[-1] // dims[-1] * 2 computed with Div and Mul
    two = b.op("Mul", [b.op("Div", [last, last], INT64, ()),
                       b.const(np.asarray(2, np.int64), "Mul")], INT64, ())
    target = b.op("Concat", [shape_ops.unsqueeze(b, two, [0]),
                             ints(b, [1] * (rank - 1), "Concat")], INT64, (rank,), axis=0)
    out = (max(2, y.shape[0]) if y.shape[0] in (1, 2) else y.shape[0], *y.shape[1:])
    if y.shape[0] not in (1, 2):
        return y
    return b.op("Expand", [y, target], FLOAT, out)


# -- an op the inference does not know --------------------------------------------------------

def _unknown_op(b: GraphBuilder, x: Value) -> Value:
    """``com.microsoft`` FusedMatMul (``alpha * A @ B``, ``transB`` at times) of ``x`` (rank 2
    or 3, float) by a weight, plus a bias (its output is no graph output, whose declared type
    the inference would take): onnxruntime runs it on CPU, onnx's inference leaves its output
    untyped and onnxslim has no handler for it, so the symbolic inference stops at it and
    ``shape_infer`` falls back to onnx's (``onnxslim/core/__init__.py``)."""
    if x.dtype != FLOAT:
        x = b.op("Cast", [x], FLOAT, x.shape, to=FLOAT)
    k, n = x.shape[-1], b.rng.randint(1, 4)
    trans_b = b.rng.random() < 0.4
    w = b.random_weight((n, k) if trans_b else (k, n), FLOAT, "FusedMatMul")
    y = b.op("FusedMatMul", [x, w], FLOAT, (*x.shape[:-1], n), domain="com.microsoft",
             alpha=b.rng.choice([None, 0.5, 2.0]), transB=1 if trans_b else None)
    return b.op("Add", [y, b.random_weight((n,), FLOAT, "Add")], FLOAT, y.shape)


#: Each motif starts at the first opset where most of its forms exist (ceil_mode, dilated
#: pools and Resize from 10, Slice's input form from 10, Range, sequences and
#: ReduceProd-by-shape from 11), so that its few draws per campaign hold them.
MOTIFS = (
    shaped_motif("slim-symbolic-window", ("shape_infer", "shape_inference"), _symbolic_window,
                 since=10),
    shaped_motif("slim-symbolic-slice", ("shape_infer", "shape_inference", "EliminationSlice"),
                 _symbolic_slice, since=10),
    shaped_motif("slim-symbolic-merge", ("shape_infer", "shape_inference"), _symbolic_merge),
    shaped_motif("slim-data-dependent-shapes", ("shape_infer", "shape_inference"),
                 _data_dependent, dtypes=frozenset({FLOAT, FLOAT16, INT64}), ranks=(1, 3),
                 since=11),
    shaped_motif("slim-shape-arithmetic", ("shape_infer", "shape_inference",
                                           "constant_folding"), _shape_arithmetic, since=11),
    shaped_motif("slim-unknown-op", ("shape_infer", "shape_inference"), _unknown_op,
                 dtypes=frozenset({FLOAT, FLOAT16}), ranks=(2, 3)),
    shaped_motif("slim-einsum-forms", ("shape_infer", "shape_inference"), repeated(_einsum, 2, 2),
                 since=12,
                 anchors=("Einsum",)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 195
#: drawn only for a hint naming onnxslim's shape inference (``shape_infer``).
HINTED_ONLY = True
