"""Motifs that give nine of onnxslim's rewrites the forms their source tells apart (several
per draw where they chain):

- ``dead_node_elimination`` (``core/optimization/dead_node_elimination.py``): Pad by zero
  pads, Mul by ones and Sub of zeros as a scalar, as a tensor of the other operand's shape or
  a broadcasting one, Expand to a shape computed at run time, Concat with an empty piece that
  is a computed tensor (its axis given negative) or next to a graph output, Resize without
  ``mode``, a Slice that keeps everything through a negative axis and start and Slices that
  keep not quite everything (from 1, to -1, a computed start), and a Slice of an empty
  tensor from 1 or to -1 (its shape kept, its bounds no whole slice's);
- ``EliminationTransposeViewTranspose`` (``core/pattern/elimination/
  transpose_view_transpose.py``): Transpose, view op, Transpose where the view is a Reshape
  that only moves size-1 axes, one that also moves real dims, one that merges axes, one that
  splits axes (into runs that line up with the transposed dims or not), one with ``-1`` or a
  shape computed at run time, a Squeeze with axes (negative at times) or without, an
  Unsqueeze with axes computed at run time; the first Transpose with or without ``perm``;
  the input's shape fixed or with a symbolic dim (no anchors: the schema variation's
  ``perm`` left out of a Transpose whose output shape looked the same at the draw's sizes
  broke the value_info declared after it);
- ``FusionReduce`` (``core/pattern/fusion/reduce.py``, its opset-13 matcher): ReduceSum and
  Unsqueeze with axes as inputs, constant or computed, absent, empty, equal or not,
  ``keepdims``, ``noop_with_empty_axes``;
- ``EliminationReshapeAs`` (``core/pattern/elimination/reshape_as.py``): the rebuilt-shape
  chain with each deviation its check rejects (no anchors for the chained reductions: a
  varied ``keepdims`` broke the shapes the chain declared after it);
- ``FusionGemm``, ``FusionGemmMul``, ``FusionGemmAdd`` (``core/pattern/fusion/gemm.py``): a
  rank-3 MatMul + Add whose bias spans the middle dim, a 2-D one whose bias has rank 3 or whose
  product is read twice, Gemm -> Reshape -> Mul / Add with
  ``transA``, ``transB``, ``beta``, ``C`` absent or not constant, the Reshape read twice;
- ``EliminationSlice`` and ``EliminationUnsqueeze`` (``elimination/slice.py``,
  ``unsqueeze.py``): pairs with a computed start or axes, overlapping axes spelled apart, a
  first op read twice, a sliced tensor whose shape nothing declares.

All are drawn only for a hint naming them (``HINTED_ONLY``): the forms are onnxslim's. A
campaign draws each a few times in a few hundred cases, so one draw chains several forms
(:func:`repeated`).
"""

from __future__ import annotations

import math

import numpy as np

from generators.builder import GraphBuilder, value_info
from generators.motifs.helpers import Form, chain_forms, ints
from generators.motifs.onnxslim.symbolic import repeated, symbolic_input
from generators.motifs.shaped import shaped_motif
from generators.ops import shape_ops
from generators.values import BOOL, FLOAT, FLOAT16, INT64, NP_DTYPE, Value, broadcast

_FLOATS = frozenset({FLOAT, FLOAT16})


def declared(b: GraphBuilder, v: Value, p: float = 0.85) -> Value:
    """``v``, its dtype and shape declared in value_info a share ``p`` of the time (once): a
    pattern reads the shape of the tensor it rewrites from there where the case runs no shape
    inference before it (a pass list of the pattern alone)."""
    known = {vi.name for vi in b.value_infos} | b.input_names | b.output_names
    if v.name not in known and b.rng.random() < p:
        b.value_infos.append(value_info(v.name, v.dtype, v.shape))
    return v


# -- dead_node_elimination --------------------------------------------------------------------

def _neutral(b: GraphBuilder, x: Value, op: str, value: float) -> Value:
    """``x op c`` with ``c`` all ``value``: a 0-d scalar, x's own shape, or a shape that
    broadcasts x larger."""
    shape = b.rng.choice([(), x.shape, (2, *x.shape)])
    c = b.const(np.full(shape, value, NP_DTYPE[x.dtype]), op)
    args = [c, x] if op == "Mul" and b.rng.random() < 0.4 else [x, c]
    return b.op(op, args, x.dtype, broadcast(x.shape, shape), x.props)


def _zero_pad(b: GraphBuilder, x: Value) -> Value:
    zeros = [0] * (2 * x.rank)
    if b.opset < 11:
        return b.op("Pad", [x], x.dtype, x.shape, x.props, pads=zeros)
    return b.op("Pad", [x, ints(b, zeros, "Pad")], x.dtype, x.shape, x.props)


def _computed_expand(b: GraphBuilder, x: Value) -> Value:
    shape = b.op("Shape", [x], INT64, (x.rank,))
    return b.op("Expand", [x, shape], x.dtype, x.shape, x.props)


def _empty_concat(b: GraphBuilder, x: Value) -> Value:
    """Concat of x and a piece empty along the axis: a Slice of x (a computed tensor) or, with
    x a graph output, a constant."""
    k = b.rng.randrange(x.rank)
    spell = k - x.rank if b.opset >= 11 and b.rng.random() < 0.5 else k
    if b.rng.random() < 0.5:
        empty = shape_ops_slice(b, x, k)
    else:
        b.graph_output(x)
        dims = list(x.shape)
        dims[k] = 0
        empty = b.const(np.zeros(dims, NP_DTYPE[x.dtype]), "Concat")
    parts = [x, empty] if b.rng.random() < 0.6 else [empty, x]
    return b.op("Concat", parts, x.dtype, x.shape, x.props, axis=spell)


def shape_ops_slice(b: GraphBuilder, x: Value, k: int) -> Value:
    """``x[0:0]`` along axis ``k``, in the opset's Slice form (an empty, computed tensor)."""
    out = list(x.shape)
    out[k] = 0
    if b.opset < 10:
        return b.op("Slice", [x], x.dtype, tuple(out), starts=[0], ends=[0], axes=[k])
    return b.op("Slice", [x, ints(b, [0], "Slice"), ints(b, [0], "Slice"),
                          ints(b, [k], "Slice")], x.dtype, tuple(out))


def _whole_slice(b: GraphBuilder, x: Value) -> Value:
    """A Slice that keeps all of x, spelled with a negative axis and a negative start."""
    k = b.rng.randrange(x.rank)
    return b.op("Slice", [x, ints(b, [-x.shape[k] - b.rng.randint(0, 2)], "Slice"),
                          ints(b, [2**62], "Slice"), ints(b, [k - x.rank], "Slice")],
                x.dtype, x.shape, x.props)


def _plain_resize(b: GraphBuilder, x: Value) -> Value:
    """Resize (nearest, no ``mode`` attribute) by scales 1 and 2 on the last two dims."""
    scales = [1.0] * (x.rank - 2) + [float(b.rng.choice([1, 2])) for _ in range(2)]
    out = tuple(int(d * s) for d, s in zip(x.shape, scales, strict=True))
    scale = b.const(np.asarray(scales, np.float32), "Resize")
    if b.opset < 11:
        return b.op("Resize", [x, scale], x.dtype, out)
    roi = b.const(np.zeros((0,), np.float32), "Resize") if b.opset < 13 else None
    return b.op("Resize", [x.name, roi.name if roi else "", scale.name], x.dtype, out)


def _empty_slice(b: GraphBuilder, x: Value) -> Value:
    """x concatenated with a Slice of ``x[0:0]`` (empty along an axis) along that axis from 1
    or to -1: a Slice whose output shape is its input's, yet not one that keeps everything by
    its bounds; the empty piece then leaves the Concat."""
    k = b.rng.randrange(x.rank)
    empty = declared(b, shape_ops_slice(b, x, k))
    start, end = b.rng.choice([(1, 2**62), (0, -1)])
    again = declared(b, b.op("Slice", [empty, ints(b, [start], "Slice"),
                                       ints(b, [end], "Slice"), ints(b, [k], "Slice")],
                             x.dtype, empty.shape))
    return b.op("Concat", [x, again], x.dtype, x.shape, x.props, axis=k)


def _partial_slice(b: GraphBuilder, x: Value) -> Value:
    """A Slice that keeps *not* all of x along one axis (a near miss of the no-op Slice):
    from 1, to -1, to the dim minus one, or from a start computed at run time (0)."""
    k = b.rng.randrange(x.rank)
    d = x.shape[k]
    kind = b.rng.choice(["computed"] + (["from-one", "to-minus-one", "short"] if d > 1 else []))
    if kind == "computed":
        start, first = _computed_zero(b, x), 0
    else:
        first = 1 if kind == "from-one" else 0
        start = ints(b, [first], "Slice")
    end = {"to-minus-one": -1, "short": d - 1}.get(kind, 2**62)
    out = list(x.shape)
    out[k] = shape_ops.slice_dim(d, first, end, 1)
    return b.op("Slice", [x, start, ints(b, [end], "Slice"), ints(b, [k], "Slice")], x.dtype,
                tuple(out), x.props)


def _dead_node_forms(b: GraphBuilder, x: Value) -> Value:
    """Three to six of the forms dead_node_elimination tells apart (module docstring), one
    after the other on ``x``, each input's shape declared most of the time
    (:func:`declared`)."""
    forms = {"pad": Form(0, _zero_pad),
             "mul": Form(0, lambda b, y: _neutral(b, y, "Mul", 1.0)),
             "sub": Form(0, lambda b, y: _neutral(b, y, "Sub", 0.0)),
             "add": Form(0, lambda b, y: _neutral(b, y, "Add", 0.0)),
             "div": Form(0, lambda b, y: _neutral(b, y, "Div", 1.0)),
             "expand": Form(8, _computed_expand), "concat": Form(0, _empty_concat),
             "slice": Form(10, _whole_slice), "partial-slice": Form(10, _partial_slice),
             "empty-slice": Form(10, _empty_slice)}
    if b.opset >= 10 and x.rank >= 2 and x.dtype == FLOAT:
        forms["resize"] = Form(10, lambda b, y: _plain_resize(b, y)
                               if y.rank >= 2 and y.size * 4 <= 4096 else None)
    return chain_forms(b, x, forms, 3, 6, declared)


# -- EliminationTransposeViewTranspose -------------------------------------------------------

def _perm(b: GraphBuilder, rank: int) -> list[int]:
    p = list(range(rank))
    while rank > 1 and p == list(range(rank)):
        b.rng.shuffle(p)
    return p


def _transpose(b: GraphBuilder, x: Value, perm: list[int] | None) -> Value:
    """Transpose by ``perm`` (None: the default reversal, no ``perm`` attribute)."""
    order = perm if perm is not None else list(range(x.rank))[::-1]
    return b.op("Transpose", [x], x.dtype, tuple(x.shape[p] for p in order), x.props,
                perm=perm)


def _reshape(b: GraphBuilder, t: Value, dims: list[int], computed: bool = False) -> Value:
    """Reshape ``t`` to ``dims`` (a constant shape, or ``Shape(t) * 0 + dims`` computed at run
    time)."""
    out = [t.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    if -1 in out:
        out[out.index(-1)] = t.size // -math.prod(out)
    if computed and b.opset >= 7:
        zero = b.op("Mul", [b.op("Shape", [t], INT64, (t.rank,)), ints(b, [0], "Mul")],
                    INT64, (t.rank,))
        if len(dims) != t.rank:
            zero = b.op("ReduceSum", [zero], INT64, (1,), keepdims=1) if b.opset < 13 else \
                b.op("ReduceSum", [zero, ints(b, [0], "ReduceSum")], INT64, (1,), keepdims=1)
        target = b.op("Add", [zero, ints(b, dims, "Add")], INT64, (len(dims),))
        return b.op("Reshape", [t, target], t.dtype, tuple(out), t.props)
    return b.op("Reshape", [t, ints(b, dims, "Reshape")], t.dtype, tuple(out), t.props)


#: the view forms :func:`_view_forms` plants.
_VIEW_KINDS = ("relocate", "mixed", "merge", "split", "minus", "computed", "squeeze",
               "unsqueeze")


def _view_forms(b: GraphBuilder, t: Value, kind: str) -> Value:
    """A view op on transposed ``t`` in form ``kind`` (of :data:`_VIEW_KINDS`; one that does
    not fit ``t`` falls through to a later one, an Unsqueeze last)."""
    shape = list(t.shape)
    ones = [i for i, d in enumerate(shape) if d == 1]
    if kind in ("squeeze", "unsqueeze") and b.opset < 13:
        kind = "relocate"
    if kind == "relocate" and ones:
        dims = [d for d in shape if d != 1]
        for _ in ones:
            dims.insert(b.rng.randrange(len(dims) + 1), 1)
        return _reshape(b, t, dims)
    if kind == "mixed" and len(shape) >= 2:
        return _reshape(b, t, shape[::-1] if shape[::-1] != shape else shape)
    if kind == "merge" and len(shape) >= 2:
        return _reshape(b, t, [shape[0] * shape[1], *shape[2:]])
    if kind == "split":
        dims: list[int] = []
        for d in shape:
            f = next((q for q in (2, 3) if d % q == 0 and d > q), None)
            dims += [f, d // f] if f and b.rng.random() < 0.7 else [d]
        if len(dims) == len(shape) or b.rng.random() < 0.2:  # a split that does not line up
            dims = [1, *dims] if b.rng.random() < 0.5 else dims + [1]
        return _reshape(b, t, dims)
    if kind == "minus":  # -1 (inferred) or 0 (copied) in the shape: no fixed request
        return _reshape(b, t, [b.rng.choice([-1, 0]), *shape[1:]])
    if kind == "computed":
        return _reshape(b, t, shape[::-1], computed=True)
    if kind == "squeeze" and ones:
        chosen = sorted(b.rng.sample(ones, b.rng.randint(1, len(ones))))
        out = tuple(d for i, d in enumerate(shape) if i not in chosen)
        if b.rng.random() < 0.35 and len(ones) == len(chosen):
            return b.op("Squeeze", [t], t.dtype, out, t.props)
        axes = [a - t.rank if b.rng.random() < 0.4 else a for a in chosen]
        return b.op("Squeeze", [t, ints(b, axes, "Squeeze")], t.dtype, out, t.props)
    axes = [b.rng.randrange(t.rank + 1)]
    if kind == "unsqueeze" and b.rng.random() < 0.3:  # axes computed: 0 * sum(Shape) + a
        size = b.op("ReduceSum", [b.op("Shape", [t], INT64, (t.rank,)),
                                  ints(b, [0], "ReduceSum")], INT64, (1,), keepdims=1)
        zero = b.op("Mul", [size, ints(b, [0], "Mul")], INT64, (1,))
        computed = b.op("Add", [zero, ints(b, axes, "Add")], INT64, (1,))
        out = list(shape)
        out.insert(axes[0], 1)
        return b.op("Unsqueeze", [t, computed], t.dtype, tuple(out), t.props)
    return shape_ops.unsqueeze(b, t, [a - t.rank - 1 if b.rng.random() < 0.3 else a
                                      for a in axes])


def _tvt_forms(b: GraphBuilder, x: Value) -> Value:
    """A chain of four to six Transpose -> view -> Transpose triples, each view of another
    form (:func:`_view_forms`), on ``x`` or on a new input with a symbolic dim; a size-1 dim
    added first where ``x`` has none."""
    if b.rng.random() < 0.2:
        shape = tuple(b.rng.randint(1, 3) if i else 1 for i in range(b.rng.randint(2, 4)))
        x = symbolic_input(b, x.dtype, shape, {0: "batch"})
    if 1 not in x.shape and x.rank < 4:
        x = shape_ops.unsqueeze(b, x, [b.rng.randrange(x.rank + 1)])
    y = x
    kinds = list(_VIEW_KINDS)
    b.rng.shuffle(kinds)
    for kind in kinds[:b.rng.randint(4, 6)]:
        if y.rank < 2:  # squeezed down: nothing left to permute
            break
        if y.rank >= 5 and kind in ("split", "unsqueeze"):
            kind = "merge"
        t = _transpose(b, declared(b, y), None if b.rng.random() < 0.25 else _perm(b, y.rank))
        v = _view_forms(b, t, kind)
        y = _transpose(b, v, _perm(b, v.rank) if v.rank > 1 else None)
    return y


# -- FusionReduce, EliminationReshapeAs -----------------------------------------------------

def _axes_input(b: GraphBuilder, axes: list[int], op: str, x: Value) -> Value:
    """``axes`` as a constant, or (a fifth of the time) computed at run time as
    ``axes + 0 * ReduceSum(Shape(x))``: the rewrite then sees no constant."""
    if b.rng.random() >= 0.2:
        return ints(b, axes, op)
    size = b.op("ReduceSum", [b.op("Shape", [x], INT64, (x.rank,)), ints(b, [0], "ReduceSum")],
                INT64, (1,), keepdims=1)
    zero = b.op("Mul", [size, ints(b, [0], "Mul")], INT64, (1,))
    return b.op("Add", [zero, ints(b, axes, "Add")], INT64, (len(axes),))


def _reduce_forms(b: GraphBuilder, x: Value) -> Value:
    """ReduceSum then Unsqueeze in the opset-13 form (axes as inputs): axes constant or
    computed, absent from the ReduceSum at times (all axes), the Unsqueeze's the same, negative
    or others, ``keepdims`` 0 or 1, the ReduceSum read a second time; at times both axes
    empty (``[]``), where ``noop_with_empty_axes`` 0 reduces every axis and 1 none: the
    matcher takes two empty lists as equal axes, and its ``keepdims`` 1 then keeps every
    reduced axis that the Unsqueeze of no axes did not put back."""
    if x.rank == 0:  # the sum of every axis, put back by no axes
        return None
    axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
    spelled = [a - x.rank if b.rng.random() < 0.3 else a for a in axes]
    keep = b.rng.choice([0, 0, 0, 1])
    inputs = [x]
    attrs: dict[str, int] = {}
    if b.rng.random() < 0.15:
        spelled, noop = [], b.rng.choice([0, 1])
        inputs.append(ints(b, [], "ReduceSum"))
        axes = [] if noop else list(range(x.rank))
        if noop or b.rng.random() < 0.5:
            attrs["noop_with_empty_axes"] = noop
    elif b.rng.random() < 0.85:
        inputs.append(_axes_input(b, spelled, "ReduceSum", x))
    else:
        axes = list(range(x.rank))
    out = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if keep == 0 or b.rng.random() < 0.5:
        attrs["keepdims"] = keep
    y = b.op("ReduceSum", inputs, x.dtype, out, **attrs)
    if b.rng.random() < 0.2:
        b.op("Neg", [y], y.dtype, y.shape)
    r = b.rng.random()
    if r < 0.6 and not keep:
        u_axes = spelled if len(inputs) > 1 else list(range(x.rank))
    else:
        u_axes = sorted(b.rng.sample(range(y.rank + 1), 1))
    rank = y.rank + len(u_axes)
    norm = sorted(a % rank for a in u_axes)
    dims = list(y.shape)
    for a in norm:
        dims.insert(a, 1)
    z = b.op("Unsqueeze", [y, _axes_input(b, u_axes, "Unsqueeze", y)], y.dtype, tuple(dims))
    if z.rank:
        return z
    # a sum of every axis put back by no axes: broadcast to (1,), so a wrong shape shows in
    # the value that goes on (a scalar graph output meets onnxslim's export first)
    return b.op("Add", [z, b.random_weight((1,), z.dtype, "Add")], z.dtype, (1,))


def _reshape_as_forms(b: GraphBuilder, x: Value) -> Value:
    """The Shape -> Gather per dim -> Unsqueeze -> Concat -> Reshape chain that
    EliminationReshapeAs replaces by the Shape, with one of the deviations its check tells
    apart (or none): an extra consumer of the Shape (a Gather or another op), a Gather index
    given 1-D (the last dim's), Gathers in another order, a computed index, an extra Concat
    piece, a Reshape in place of an Unsqueeze, Concat pieces in another order, a constant
    piece in place of the last dim's (whose Gather is a graph output). Half of the chains
    start from a new input whose first dim is symbolic (or unknown): constant folding cannot
    fold their Shape away before the pattern sees it."""
    if b.rng.random() < 0.5:
        x = symbolic_input(b, x.dtype, (1, *x.shape[1:]),
                           {0: b.rng.choice(["n", "batch", None])})
    flat = b.op("Reshape", [x, ints(b, [-1], "Reshape")], x.dtype, (x.size,), x.props)
    flat = b.op("Neg", [flat], x.dtype, flat.shape)
    shape = b.op("Shape", [x], INT64, (x.rank,))
    if b.rng.random() < 0.85:
        b.value_infos.append(value_info(shape.name, INT64, shape.shape))
    twist = b.rng.choice([None, "user", "other-user", "vector", "order", "computed", "extra",
                          "reshape", "pieces", "constant"])
    order = list(range(x.rank))
    if twist == "order":
        order = order[1:] + order[:1]
    picked: dict[int, Value] = {}
    for i in order:
        if twist == "vector" and i == x.rank - 1:  # not the first: the pattern starts there
            picked[i] = b.op("Gather", [shape, ints(b, [i], "Gather")], INT64, (1,))
            continue
        index = b.const(np.asarray(i, np.int64), "Gather")
        if twist == "computed" and i == 0:
            index = b.op("Mul", [index, b.const(np.asarray(1, np.int64), "Mul")], INT64, ())
        picked[i] = b.op("Gather", [shape, index], INT64, ())
    if twist == "user":
        b.graph_output(b.op("Gather", [shape, b.const(np.asarray(0, np.int64), "Gather")],
                            INT64, ()))
    elif twist == "other-user":
        b.graph_output(b.op("Cast", [shape], FLOAT, shape.shape, to=FLOAT))
    parts = []
    for i in range(x.rank):
        g = picked[i]
        if g.rank == 1:
            parts.append(g)
        elif twist == "constant" and i == x.rank - 1:  # the dim's Gather read elsewhere
            b.graph_output(g)
            parts.append(ints(b, [x.shape[i]], "Concat"))
        elif twist == "reshape" and i == x.rank - 1:
            parts.append(b.op("Reshape", [g, ints(b, [1], "Reshape")], INT64, (1,)))
        else:
            parts.append(shape_ops.unsqueeze(b, g, [0]))
    dims = list(x.shape)
    if twist == "pieces":
        parts = parts[::-1]
        dims = dims[::-1]
    if twist == "extra":
        parts.append(ints(b, [1], "Concat"))
        dims.append(1)
    target = b.op("Concat", parts, INT64, (len(parts),), axis=0)
    return b.op("Reshape", [flat, target], x.dtype, tuple(dims))


# -- EliminationSlice, EliminationUnsqueeze --------------------------------------------------

def _full_slice(b: GraphBuilder, x: Value, axis: int, spell: int, start: Value | None = None,
                ) -> Value:
    """A five-input Slice of ``x`` along ``axis`` (spelled ``spell``) to the end, from 1 (0
    for a dim of 1) or from ``start`` (a computed 0)."""
    out = list(x.shape)
    first = 0 if start is not None else min(1, x.shape[axis] - 1)
    out[axis] = x.shape[axis] - first
    starts = start if start is not None else ints(b, [first], "Slice")
    return b.op("Slice", [x, starts, ints(b, [2**62], "Slice"), ints(b, [spell], "Slice"),
                          ints(b, [1], "Slice")], x.dtype, tuple(out), x.props)


def _computed_zero(b: GraphBuilder, x: Value) -> Value:
    """``[0]`` computed at run time (``0 * ReduceSum(Shape(x))``): no constant to a rewrite."""
    size = b.op("ReduceSum", [b.op("Shape", [x], INT64, (x.rank,))], INT64, (1,), keepdims=1)
    return b.op("Mul", [size, ints(b, [0], "Mul")], INT64, (1,))


def _slice_forms(b: GraphBuilder, x: Value) -> Value:
    """Slice then Slice, five inputs each (the form EliminationSlice matches), with one of:
    distinct axes (merged), the same axis spelled once negative (overlapping: kept), a
    computed start (kept), a first Slice read by two Slices (both merged), an input whose
    shape nothing declares (a Neg without value_info) under negative axes."""
    if b.rng.random() < 0.3 and x.dtype != BOOL:  # unpooled: no value_info declares it
        x = Value(b.node("Neg", [x.name])[0], x.dtype, x.shape)
    form = b.rng.choice(["distinct", "overlap", "computed", "two-users", "negative"])
    a1 = b.rng.randrange(x.rank)
    others = [a for a in range(x.rank) if a != a1] or [a1]
    a2 = a1 if form == "overlap" else b.rng.choice(others)
    neg = form in ("negative", "overlap") or b.rng.random() < 0.3
    first = _full_slice(b, x, a1, a1 - x.rank if neg else a1,
                        _computed_zero(b, x) if form == "computed" else None)
    second = _full_slice(b, first, a2, a2 - x.rank if form == "negative" else a2)
    if form == "two-users":
        a3 = b.rng.choice(others)
        b.graph_output(_full_slice(b, first, a3, a3))
    return second


def _unsqueeze_forms(b: GraphBuilder, x: Value) -> Value:
    """Unsqueeze then Unsqueeze (opset 13 form): plain, with axes computed at run time in one
    of them (constant only once folded), or the first read twice."""
    form = b.rng.choice(["plain", "computed-first", "computed-second", "two-users"])

    def unsqueeze(v: Value, computed: bool) -> Value:
        axis = b.rng.randrange(v.rank + 1)
        axes = b.op("Add", [_computed_zero(b, v), ints(b, [axis], "Add")], INT64, (1,)) \
            if computed else ints(b, [axis - v.rank - 1 if b.rng.random() < 0.3 else axis],
                                  "Unsqueeze")
        out = list(v.shape)
        out.insert(axis, 1)
        return b.op("Unsqueeze", [v, axes], v.dtype, tuple(out), v.props)

    first = unsqueeze(declared(b, x), form == "computed-first")
    declared(b, first)
    if form == "two-users":
        b.op("Neg" if x.dtype != BOOL else "Not", [first], first.dtype, first.shape)
    return unsqueeze(first, form == "computed-second")


# -- FusionGemm, FusionGemmMul, FusionGemmAdd ------------------------------------------------

def _gemm_forms(b: GraphBuilder, x: Value) -> Value:
    """A Gemm fusion's input in a form its checks tell apart: a rank-3 MatMul + Add whose bias
    spans the middle dim (it cannot broadcast to the flattened Gemm), a 2-D MatMul + Add whose
    bias has rank 3 or whose product another node reads, or a Gemm (``transA``, ``transB``,
    ``C`` absent, constant or a graph input, ``beta``) -> Reshape (read twice at times) -> Mul or
    Add by a constant (a scalar, per output column, or per row). The shapes the fusions read
    (the MatMul's and the Gemm's input, the Gemm's output) are declared most of the time
    (:func:`declared`): a case of the fusion alone runs no shape inference."""
    if x.dtype != FLOAT:
        x = b.op("Cast", [x], FLOAT, x.shape, to=FLOAT)
    m = x.size // x.shape[-1] if x.rank else 1
    k = x.shape[-1] if x.rank else 1
    n = b.rng.randint(1, 4)
    form = b.rng.random()
    if form < 0.3:  # rank-3 MatMul + Add, bias (S, N)
        s_ = b.rng.randint(2, 3)
        y = b.op("Reshape", [x, ints(b, [-1, s_, k], "Reshape")], FLOAT,
                 (m // s_, s_, k)) if m % s_ == 0 else \
            b.op("Reshape", [x, ints(b, [1, m, k], "Reshape")], FLOAT, (1, m, k))
        w = b.random_weight((k, n), FLOAT, "MatMul")
        mm = b.op("MatMul", [declared(b, y), w], FLOAT, (*y.shape[:-1], n))
        bias = b.random_weight((y.shape[1], n) if b.rng.random() < 0.7 else (n,), FLOAT, "Add")
        return b.op("Add", [mm, bias], FLOAT, mm.shape)
    if form < 0.5:  # 2-D MatMul + Add: a bias of rank 3, or the product read twice
        flat = declared(b, b.op("Reshape", [x, ints(b, [m, k], "Reshape")], FLOAT, (m, k)))
        mm = b.op("MatMul", [flat, b.random_weight((k, n), FLOAT, "MatMul")], FLOAT, (m, n))
        if b.rng.random() < 0.5:
            bias = b.random_weight((2, m, n), FLOAT, "Add")
            return b.op("Add", [mm, bias], FLOAT, (2, m, n))
        b.graph_output(b.op("Neg", [mm], FLOAT, mm.shape))
        return b.op("Add", [mm, b.random_weight((n,), FLOAT, "Add")], FLOAT, mm.shape)
    flat = declared(b, b.op("Reshape", [x, ints(b, [m, k], "Reshape")], FLOAT, (m, k)))
    trans_a = b.rng.random() < 0.2
    if trans_a:
        flat = b.op("Transpose", [flat], FLOAT, (k, m), perm=[1, 0])
    trans_b = b.rng.random() < 0.7
    w = b.random_weight((n, k) if trans_b else (k, n), FLOAT, "Gemm",
                        placement="input" if b.rng.random() < 0.15 else None)
    inputs = [flat, w]
    if b.opset < 11 or b.rng.random() < 0.7:
        inputs.append(b.random_weight(b.rng.choice([(n,), (1, n), (m, n)]), FLOAT, "Gemm",
                                      placement="input" if b.rng.random() < 0.1 else None))
    g = b.op("Gemm", inputs, FLOAT, (m, n), transA=1 if trans_a else None,
             transB=1 if trans_b else None,
             beta=0.5 if len(inputs) == 3 and b.rng.random() < 0.2 else None)
    declared(b, g, 0.7)
    target = b.rng.choice([(1, m, n), (m, 1, n), (m, n, 1)])
    r = b.op("Reshape", [g, ints(b, list(target), "Reshape")], FLOAT, target)
    if b.rng.random() < 0.15:
        b.op("Neg", [r], FLOAT, r.shape)
    op = b.rng.choice(["Mul", "Add"])
    shape = b.rng.choice([(), (n,), (target[-1],), (1, 1, target[-1]), (m, 1, 1)])
    shape = shape if broadcast(target, shape) == target else ()
    c = b.random_weight(shape, FLOAT, op, positive=op == "Mul")
    return b.op(op, [r, c] if b.rng.random() < 0.7 else [c, r], FLOAT, target)


MOTIFS = (
    shaped_motif("slim-dead-node-forms", ("dead_node_elimination",),
                 repeated(_dead_node_forms, 1, 2),
                 dtypes=_FLOATS, ranks=(1, 4),
                 anchors=("Pad", "Expand")),  # no Concat: a varied axis broke the empty piece
    shaped_motif("slim-reduce-forms", ("FusionReduce",), repeated(_reduce_forms, 3, 5),
                 dtypes=frozenset({FLOAT}), ranks=(1, 4), since=13),
    shaped_motif("slim-reshape-as-forms", ("EliminationReshapeAs",),
                 repeated(_reshape_as_forms, 2, 3),
                 dtypes=frozenset({FLOAT, INT64}), ranks=(2, 4)),
    shaped_motif("slim-slice-forms", ("EliminationSlice",), repeated(_slice_forms, 2, 3),
                 dtypes=frozenset({FLOAT, FLOAT16, INT64}), ranks=(1, 4), since=10),
    shaped_motif("slim-unsqueeze-forms", ("EliminationUnsqueeze",),
                 repeated(_unsqueeze_forms, 3, 5),
                 dtypes=frozenset({FLOAT, FLOAT16, INT64}), ranks=(0, 3), since=13),
    shaped_motif("slim-gemm-forms", ("FusionGemm", "FusionGemmMul", "FusionGemmAdd"),
                 repeated(_gemm_forms, 2, 3), dtypes=frozenset({FLOAT, FLOAT16}),
                 ranks=(1, 3)),
    shaped_motif("slim-transpose-view-forms", ("EliminationTransposeViewTranspose",),
                 repeated(_tvt_forms, 1, 2), dtypes=frozenset({FLOAT, FLOAT16, INT64}),
                 ranks=(1, 3),
                 since=13),  # the Squeeze and Unsqueeze matchers exist from opset 13
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 196
#: drawn only for a hint naming dead_node_elimination or EliminationTransposeViewTranspose.
HINTED_ONLY = True
