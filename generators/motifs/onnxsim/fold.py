"""Motifs for onnx-simplifier's constant folding and shape evaluation (``constant_folding``,
``shape_inference``: ``_EvalPartialShape`` turns Shape/Gather/Slice on shapes into constants)
and for its own eliminations of control flow, sequences and optionals
(``onnxsim/passes/``: ``eliminate_loop_with_const_trip_count``,
``eliminate_sequence_at_construct``, ``eliminate_sequence_length_construct``,
``eliminate_optional_get_element``, ``eliminate_optional_has_element``,
``eliminate_nop_softmax``, ``eliminate_reshape_family_on_constant``, ``fuse_reshape_family``,
``rewrite_arg_reduce_select_last_index``, ``fuse_split_gather_concat``), with onnxslim's
shape folding (onnx-graphsurgeon's ``fold_shape``, ``fold_shape_gather``,
``fold_shape_slice``).

Varied where the rewrites decide: Shape's ``start``/``end`` (opset 15, negative too), Gather
indices negative or 1-D, Slice on a shape with a negative step, a Softmax over a size-1 axis
whose trailing dims are not all 1 below opset 13 (then it normalizes over more than one
element), a SequenceAt position counted from the end, an empty Optional, ArgMax over data
with ties, a Split-Gather-Concat whose Concat axis is not the Gather axis plus the Split
axis, constant operands of a reshape family with a second consumer.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import helper

from generators.builder import GraphBuilder, tensor_proto
from generators.motifs.helpers import cast_back, held_as_planned, ints, negated, tap, weight
from generators.motifs.shaped import shaped_motif
from generators.ops import control, shape_ops
from generators.values import BOOL, FLOAT, FLOAT16, INT64, NP_DTYPE, NUMERIC, Value

_FLOATS = frozenset({FLOAT, FLOAT16})


def _shape_of(b: GraphBuilder, x: Value) -> tuple[Value, tuple[int, ...]]:
    """``Shape(x)``, with ``start``/``end`` at opset 15 a third of the time; returns the
    Shape output and the dims it holds."""
    attrs: dict = {}
    dims = x.shape
    if b.opset >= 15 and x.rank >= 2 and b.rng.random() < 0.35:
        start = b.rng.choice([0, 1, -x.rank, -1 - b.rng.randrange(x.rank - 1)])
        end = b.rng.choice([None, x.rank, -1, x.rank + 2])
        dims = x.shape[slice(start, end)]
        if not dims:
            start, end, dims = 0, None, x.shape
        attrs = {"start": start or None, "end": end}
    return b.op("Shape", [x], INT64, (len(dims),), **attrs), dims


def _shape_chain(b: GraphBuilder, x: Value) -> Value:
    """A Reshape, Expand or ConstantOfShape driven by ``x``'s shape: a Gather'd dim with the
    rest inferred (-1), the dims reversed by Slice(step=-1), or the whole shape."""
    s, dims = _shape_of(b, x)
    kind = b.rng.choice(["gather", "gather", "slice", "expand", "zeros"])
    full = tuple(dims) == tuple(x.shape)
    if kind == "gather" or (not full and kind != "slice"):
        i = b.rng.randrange(len(dims))
        index = i - len(dims) if b.opset >= 11 and b.rng.random() < 0.4 else i
        picked = b.op("Gather", [s, b.const(np.asarray(index, np.int64), "Gather")], INT64, ())
        head = shape_ops.unsqueeze(b, picked, [0])
        target = b.op("Concat", [head, ints(b, [-1], "Concat")], INT64, (2,), axis=0)
        return b.op("Reshape", [x, target], x.dtype, (dims[i], x.size // dims[i]), x.props)
    if kind == "slice" and b.opset >= 10:
        n = len(dims)
        rev = b.op("Slice", [s, ints(b, [-1], "Slice"), ints(b, [-n - 1 - b.rng.randrange(3)],
                                                             "Slice"),
                             ints(b, [0], "Slice"), ints(b, [-1], "Slice")], INT64, (n,))
        rest = x.size // math.prod(dims)
        target = rev if rest == 1 else b.op(
            "Concat", [rev, ints(b, [rest], "Concat")], INT64, (n + 1,), axis=0)
        out = tuple(dims[::-1]) + (() if rest == 1 else (rest,))
        return b.op("Reshape", [x, target], x.dtype, out, x.props)
    if kind == "expand" and full and b.opset >= 8:
        c = weight(b, (x.shape[-1],), x.dtype, "Expand")
        grown = b.op("Expand", [c, s], x.dtype, x.shape)
        return b.op("Add", [x, grown], x.dtype, x.shape)
    if full and b.opset >= 9 and x.dtype in (FLOAT, INT64):
        value = tensor_proto(np.zeros((1,), NP_DTYPE[x.dtype]), b.namer.weight("Const"))
        zeros = b.op("ConstantOfShape", [s], x.dtype, x.shape, value=value)
        return b.op("Add", [x, zeros], x.dtype, x.shape, x.props)
    return b.op("Identity", [x], x.dtype, x.shape, x.props)


def _softmax_one(b: GraphBuilder, x: Value) -> Value:
    """Softmax or LogSoftmax over an axis of size 1; below opset 13 the trailing dims after
    it are often larger (then it normalizes a whole block, not one element)."""
    a = b.rng.randrange(x.rank + 1)
    y = shape_ops.unsqueeze(b, x, [a])
    spell = a - y.rank if b.opset >= 11 and b.rng.random() < 0.4 else a
    op = b.rng.choice(["Softmax", "LogSoftmax"])
    props = ("bounded", "nonneg") if op == "Softmax" else ()
    return b.op(op, [y], y.dtype, y.shape, props, axis=spell)


def _family_op(b: GraphBuilder, v: Value) -> Value:
    """One of Reshape, Flatten, Squeeze (of a size-1 dim), Unsqueeze on ``v``."""
    kind = b.rng.choice(["Reshape", "Flatten", "Squeeze", "Unsqueeze"])
    ones = [i for i, d in enumerate(v.shape) if d == 1]
    if kind == "Squeeze" and ones:
        a = b.rng.choice(ones)
        spell = a - v.rank if b.opset >= 11 and b.rng.random() < 0.4 else a
        form = shape_ops.axes_operand(b, "Squeeze", [spell], 13)
        out = v.shape[:a] + v.shape[a + 1:]
        return b.op("Squeeze", [v, *form["inputs"]], v.dtype, out, v.props, **form["attrs"])
    if kind == "Flatten" and (b.opset >= 9 or v.dtype in _FLOATS):  # Flatten-1: floats only
        k = b.rng.randrange(v.rank + 1)
        spell = k - v.rank if k < v.rank and b.opset >= 11 and b.rng.random() < 0.4 else k
        out = (math.prod(v.shape[:k]), math.prod(v.shape[k:]))
        return b.op("Flatten", [v], v.dtype, out, v.props, axis=spell)
    if kind in ("Reshape", "Squeeze"):
        spec, out = shape_ops.reshape_target(b, v.shape)
        attrs = {"allowzero": 1} if b.opset >= 14 and 0 not in spec and \
            b.rng.random() < 0.2 else {}
        return b.op("Reshape", [v, ints(b, spec, "Reshape")], v.dtype, out, v.props, **attrs)
    r = v.rank + 1
    a = b.rng.randrange(r)
    return shape_ops.unsqueeze(b, v, [a - r if b.opset >= 11 and b.rng.random() < 0.4 else a])


def _reshape_family(b: GraphBuilder, x: Value) -> Value:
    """Two reshape-family ops in a row, on ``x`` or on a constant (then reshaped to ``x``'s
    shape and added to it; the constant sometimes has a second consumer)."""
    if b.rng.random() < 0.6:
        return _family_op(b, tap(b, _family_op(b, x), 0.1))
    c = weight(b, (x.size,), x.dtype, "Reshape")
    if b.rng.random() < 0.2:
        b.graph_output(b.op("Neg", [c], c.dtype, c.shape))
    mid = _family_op(b, c)
    back = b.op("Reshape", [mid, ints(b, list(x.shape), "Reshape")], x.dtype, x.shape)
    return b.op("Add", [x, back], x.dtype, x.shape)


def _sequence(b: GraphBuilder, x: Value) -> Value:
    """SequenceConstruct of ``x`` and one or two other tensors of its type, then SequenceAt
    (a constant position, from the end at times) and SequenceLength. A schema row that
    gives the sequence's element type ``T`` gets x cast to it (:func:`held_as_planned`)
    and the element cast back."""
    held = held_as_planned(b, x, ("SequenceConstruct", "dtype:T"), ("SequenceAt", "dtype:T"))
    others = [negated(b, held) for _ in range(b.rng.randint(1, 2))]
    items = [held, *others]
    seq = b.node("SequenceConstruct", [v.name for v in items])[0]
    pos = b.rng.randrange(len(items))
    spell = pos - len(items) if b.rng.random() < 0.4 else pos
    picked = b.node("SequenceAt", [seq, b.const(np.asarray(spell, np.int64), "SequenceAt").name])
    at = cast_back(b, b.add(Value(picked[0], held.dtype, x.shape)), x.dtype)
    if b.rng.random() < 0.5:
        return at
    n = Value(b.node("SequenceLength", [seq])[0], INT64, ())
    scale = b.op("Cast", [n], x.dtype, (), to=x.dtype)
    return b.op("Mul", [at, scale], x.dtype, x.shape)


def _optional(b: GraphBuilder, x: Value) -> Value:
    """Optional(x) unwrapped by OptionalGetElement, or tested by OptionalHasElement (also an
    empty Optional, from opset 18), the bool cast to x's type and added. A schema row that
    gives the optional's element type ``V`` gets x cast to it (:func:`held_as_planned`) and
    the element cast back; one that leaves Optional's input out (or empty) gets the empty
    typed Optional tested alone (an OptionalGetElement of it fails when it runs)."""
    if b.planned("Optional", "in:input") in ("absent", "empty"):
        return _empty_optional(b, x)
    held = held_as_planned(b, x, ("Optional", "dtype:V"), ("OptionalGetElement", "dtype:V"))
    opt = b.node("Optional", [held.name])[0]
    got = cast_back(b, b.add(Value(b.node("OptionalGetElement", [opt])[0], held.dtype,
                                   x.shape, x.props)), x.dtype)
    if b.rng.random() < 0.4:
        return got
    if b.opset >= 18 and b.rng.random() < 0.5:
        return _empty_optional(b, got)
    return _plus_has_element(b, got, opt)


def _empty_optional(b: GraphBuilder, x: Value) -> Value:
    """``x`` plus OptionalHasElement of an Optional without input, typed as ``x`` (0)."""
    probe = b.node("Optional", [])[0]
    b.nodes[-1].attribute.append(
        helper.make_attribute("type", helper.make_tensor_type_proto(x.dtype, None)))
    return _plus_has_element(b, x, probe)


def _plus_has_element(b: GraphBuilder, x: Value, optional: str) -> Value:
    """``x`` plus OptionalHasElement of the optional named ``optional``, cast to ``x``'s
    type."""
    has = Value(b.node("OptionalHasElement", [optional])[0], BOOL, ())
    flag = b.op("Cast", [has], x.dtype, (), to=x.dtype)
    return b.op("Add", [x, flag], x.dtype, x.shape)


def _loop(b: GraphBuilder, x: Value) -> Value:
    return control.loop(b, x)


def _arg_last(b: GraphBuilder, x: Value) -> Value:
    """ArgMax / ArgMin with ``select_last_index=1`` over data with ties (Floor of 2x)."""
    ties = b.op("Floor", [b.op("Mul", [x, b.scalar(2.0, x.dtype, "Mul")], x.dtype, x.shape)],
                x.dtype, x.shape)
    a = b.rng.randrange(x.rank)
    spell = a - x.rank if b.rng.random() < 0.4 else a
    keep = b.rng.choice([0, 1, None])
    out = tuple(1 if i == a else d for i, d in enumerate(x.shape) if keep != 0 or i != a)
    idx = b.op(b.rng.choice(["ArgMax", "ArgMin"]), [ties], INT64, out, ("nonneg",),
               axis=spell, keepdims=keep, select_last_index=1)
    return b.op("Cast", [idx], x.dtype, out, ("nonneg",), to=x.dtype)


def _split_gather_concat(b: GraphBuilder, x: Value) -> Value:
    """Gather ``x`` with each output of a Split of constant indices and Concat the pieces,
    along the Gather axis plus the Split axis (spelled negative at times) or, when the pieces
    are equal, along another axis."""
    ga = b.rng.randrange(x.rank)
    d = x.shape[ga]
    rows = b.rng.choice([(b.rng.randint(2, 4),), (b.rng.randint(2, 3), 2)])
    low = -d if b.opset >= 11 else 0
    idx_value = np.asarray([b.rng.randrange(low, d) for _ in range(math.prod(rows))],
                           np.int64).reshape(rows)
    sa = b.rng.randrange(len(rows))
    sizes = shape_ops.split_sizes(b, rows[sa])
    if b.rng.random() < 0.3 and rows[sa] % 2 == 0:
        sizes = [rows[sa] // 2] * 2
    idx = b.const(idx_value, "Split")
    pieces = shape_ops.split(b, idx, sa, sizes)
    gathered = []
    for p in pieces:
        shape = x.shape[:ga] + p.shape + x.shape[ga + 1:]
        gathered.append(b.op("Gather", [x, p], x.dtype, shape, x.props, axis=ga))
    ca = ga + sa
    out_rank = gathered[0].rank
    if len(set(sizes)) == 1 and b.rng.random() < 0.2:
        ca = b.rng.randrange(out_rank)
    spell = ca - out_rank if b.opset >= 11 and b.rng.random() < 0.3 else ca
    out = list(gathered[0].shape)
    out[ca] = sum(g.shape[ca] for g in gathered)
    return b.op("Concat", gathered, x.dtype, tuple(out), x.props, axis=spell)


MOTIFS = (
    shaped_motif("sim-shape-chain", ("constant_folding", "shape_inference", "eliminate_shape_op",
                                     "eliminate_slice_after_shape", "fuse_concat_into_reshape"),
                 _shape_chain, dtypes=frozenset(NUMERIC), ranks=(1, 4),
                 anchors=("Shape", "Reshape")),
    shaped_motif("sim-softmax-one-element", ("eliminate_nop_softmax",), _softmax_one,
                 dtypes=frozenset({FLOAT}), ranks=(1, 3),
                 anchors=("Softmax",)),
    shaped_motif("sim-reshape-family", ("fuse_reshape_family",
                                        "eliminate_reshape_family_on_constant",
                                        "fuse_consecutive_squeeze_unsqueeze",
                                        "fuse_consecutive_reshapes"),
                 _reshape_family, dtypes=frozenset(NUMERIC), ranks=(1, 4),
                 anchors=("Reshape", "Squeeze", "Flatten")),
    shaped_motif("sim-sequence-construct", ("eliminate_sequence_at_construct",
                                            "eliminate_sequence_length_construct"),
                 _sequence, dtypes=_FLOATS, ranks=(1, 4), since=11,
                 anchors=("SequenceConstruct", "SequenceAt", "SequenceLength")),
    shaped_motif("sim-optional", ("eliminate_optional_get_element",
                                  "eliminate_optional_has_element"),
                 _optional, dtypes=_FLOATS, ranks=(1, 4), since=15,
                 anchors=("Optional", "OptionalGetElement", "OptionalHasElement")),
    shaped_motif("sim-loop-const-trip-count", ("eliminate_loop_with_const_trip_count",),
                 _loop, dtypes=frozenset({FLOAT}), ranks=(1, 4), since=11,
                 anchors=("Loop",)),
    shaped_motif("sim-arg-select-last-index", ("rewrite_arg_reduce_select_last_index",),
                 _arg_last, dtypes=frozenset({FLOAT}), ranks=(1, 4), since=12,
                 anchors=("ArgMax", "ArgMin")),
    shaped_motif("sim-split-gather-concat", ("fuse_split_gather_concat",),
                 _split_gather_concat, dtypes=frozenset(NUMERIC), ranks=(1, 3),
                 anchors=("Split", "Gather", "Concat")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 200
