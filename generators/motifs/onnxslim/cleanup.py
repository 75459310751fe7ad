"""Motifs for onnxslim's clean-up steps (``core/optimization/dead_node_elimination.py``,
``subexpression_elimination.py``, ``weight_tying.py``) and its shape inference
(``core.shape_infer``: onnxruntime's symbolic shape inference with ``auto_merge``).

Each builds what the step decides on from a node's inputs, attributes and inferred shapes:

- a Dropout whose mask output is read (removing the node must keep the mask);
- a Concat of an empty tensor and a constant that is empty along another axis than the
  Concat axis (not an empty *piece*: dropping it changes the output's shape);
- Clip with the same constant as ``min`` in one node and as ``max`` in another (two nodes
  whose non-empty inputs are equal but sit in different input slots), and two Splits of one
  tensor into different numbers of outputs (same op, attributes and inputs);
- Mul by ones, Add of zeros, Div by ones, Sub of zeros whose constant broadcasts the other
  operand to a larger shape, or spans a symbolic dim;
- ``1 / (x * +0)`` beside ``1 / (x * -0)``: constants (or ConstantOfShape values) equal as
  numbers and not as bits;
- a graph input of a symbolic dim broadcast against a constant of size 2 or 3 there, which
  symbolic shape inference must not merge into the input's dim.
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from generators.builder import GraphBuilder
from generators.motifs.helpers import ints, slice_op, tap, weight
from generators.motifs.shaped import shaped_motif
from generators.values import BOOL, FLOAT, FLOAT16, INT64, NP_DTYPE, NUMERIC, Value, broadcast

_FLOATS = frozenset({FLOAT, FLOAT16})


def _dropout_mask(b: GraphBuilder, x: Value) -> Value:
    """Dropout with its mask output read: the mask, cast to x's type, scales the output."""
    if b.opset < 12:
        y, mask = b.node("Dropout", [x.name], n_out=2, ratio=b.rng.choice([None, 0.5]))
        mask_type = x.dtype if b.opset < 10 else BOOL
    else:
        inputs = [x.name]
        if b.rng.random() < 0.5:
            inputs.append(b.scalar(b.rng.choice([0.0, 0.5]), FLOAT, "Dropout").name)
        y, mask = b.node("Dropout", inputs, n_out=2)
        mask_type = BOOL
    m = Value(mask, mask_type, x.shape)
    if mask_type != x.dtype:
        m = b.op("Cast", [m], x.dtype, x.shape, to=x.dtype)
    return b.op("Mul", [Value(y, x.dtype, x.shape), m], x.dtype, x.shape, x.props)


def _concat_empty(b: GraphBuilder, x: Value) -> Value:
    """``Concat([x[0:0], c], axis=k)`` with a constant ``c`` that is empty along axis 0 but
    not along k; the (empty) result is a graph output and ``x`` goes on."""
    if x.rank < 2:
        return None
    empty = slice_op(b, x, [0], [0], [0])
    k = b.rng.randrange(1, x.rank)
    dims = list(empty.shape)
    dims[k] = b.rng.randint(1, 3)
    c = b.const(np.zeros(dims, dtype=NP_DTYPE[x.dtype]), "Concat")
    out = list(empty.shape)
    out[k] += dims[k]
    parts = [empty, c] if b.rng.random() < 0.5 else [c, empty]
    joined = b.node("Concat", [p.name for p in parts], axis=k)[0]  # not pooled: empty
    b.graph_output(Value(joined, x.dtype, tuple(out)))
    return b.op("Identity", [x], x.dtype, x.shape, x.props)


def _clip_slots(b: GraphBuilder, x: Value) -> Value:
    """``Clip(x, c, "") + Clip(x, "", c)`` with one constant ``c`` (opset >= 11), the
    trailing empty input written out mostly: onnxslim's subexpression_elimination buckets
    nodes by the names of their non-constant inputs, the empty one included, and only then
    drops the empty inputs to compare the two, so ``Clip(x, c)`` stays apart."""
    c = b.const(np.asarray(b.rng.choice([0.0, 0.5, -0.5]), dtype=NP_DTYPE[x.dtype]), "Clip")
    trailing = [""] if b.rng.random() < 0.8 else []
    low = b.op("Clip", [x.name, c.name, *trailing], x.dtype, x.shape)
    high = b.op("Clip", [x.name, "", c.name], x.dtype, x.shape)
    return b.op("Add", [low, high] if b.rng.random() < 0.5 else [high, low], x.dtype,
                x.shape)


def _split_counts(b: GraphBuilder, x: Value) -> Value:
    """Two Splits of ``x`` along one even axis into equal parts: two outputs and one (the
    count of outputs is all that tells them apart before opset 18)."""
    even = [i for i, d in enumerate(x.shape) if d % 2 == 0]
    if not even:
        return None
    k = b.rng.choice(even)
    spell = k - x.rank if b.opset >= 11 and b.rng.random() < 0.3 else k
    halves = b.node("Split", [x.name], n_out=2, axis=spell)
    whole = b.node("Split", [x.name], n_out=1, axis=spell)[0]
    half = list(x.shape)
    half[k] //= 2
    b.graph_output(Value(halves[b.rng.randrange(2)], x.dtype, tuple(half)))
    return b.op("Neg", [Value(whole, x.dtype, x.shape)], x.dtype, x.shape)


def _signed_zeros(b: GraphBuilder, x: Value) -> Value:
    """``1 / (x * +0)`` as a graph output and ``1 / (x * -0)`` as the result: two constants
    equal as numbers but not as bits (of one shape, or ConstantOfShape values of ``x``'s
    shape), so a step that ties constants or merges nodes by comparing values turns one
    infinity into the other's."""
    shape = b.rng.choice([(), (1,), x.shape[-1:]])
    of_shape = b.opset >= 9 and b.rng.random() < 0.3
    dims = b.op("Shape", [x], INT64, (x.rank,)) if of_shape else None
    results = []
    for zero in (0.0, -0.0):
        value = np.full(shape if not of_shape else (1,), zero, dtype=NP_DTYPE[x.dtype])
        if of_shape:
            c = b.op("ConstantOfShape", [dims], x.dtype, x.shape,
                     value=numpy_helper.from_array(value, "value"))
        else:
            c = b.const(value, "Mul")
        y = b.op("Mul", [x, c] if b.rng.random() < 0.7 else [c, x], x.dtype,
                 broadcast(x.shape, c.shape))
        results.append(b.op("Reciprocal", [y], x.dtype, y.shape))
    b.graph_output(results[0])
    return results[1]


def _neutral_broadcast(b: GraphBuilder, x: Value) -> Value:
    """``x * 1``, ``x + 0``, ``x - 0`` or ``x / 1`` with a constant that has a dim more or a
    larger dim than ``x`` (the result is larger than ``x``), or a plain one."""
    units = {"Mul": 1, "Add": 0, "Sub": 0, "Div": 1}
    op = b.variant(b.rng.choice(list(units.items()))[0], units)
    value = units[op]
    r = b.rng.random()
    if r < 0.4:
        shape = (b.rng.randint(2, 3), *x.shape)
    elif r < 0.7 and 1 in x.shape:
        shape = tuple(b.rng.randint(2, 3) if d == 1 else d for d in x.shape)
    else:
        shape = b.rng.choice([(), x.shape[-1:], (1,)])
    c = b.const(np.full(shape, value, dtype=NP_DTYPE[x.dtype]), op)
    args = [x, c] if op in ("Sub", "Div") or b.rng.random() < 0.6 else [c, x]
    return b.op(op, args, x.dtype, broadcast(x.shape, shape), x.props)


def _symbolic_broadcast(b: GraphBuilder, x: Value) -> Value:
    """A graph input whose first dim is symbolic (size 1 at run time), broadcast against a
    constant of size 2 or 3 along that dim by Add, Mul or Expand: an input of ``x``'s type
    whose first dim is 1, else a new one of ``x``'s type and shape, its first dim symbolic."""
    inputs = [v for v in b.pool if v.name in b.input_names and v.dtype == x.dtype and
              v.shape and v.shape[0] == 1]
    if inputs:
        x = b.rng.choice(inputs)
    elif x.dtype in _FLOATS and x.shape:
        x = b.graph_input(x.dtype, (1, *x.shape[1:]), {0: "batch"})
    else:
        return None
    big = (b.rng.randint(2, 3), *x.shape[1:])
    expand = "Expand" if b.opset >= 8 and b.rng.random() < 0.3 else ""
    if b.variant(expand, ["Add", "Mul", "Expand"] if b.opset >= 8 else []) == "Expand":
        return b.op("Expand", [x, ints(b, list(big), "Expand")], x.dtype, big, x.props)
    op = b.variant(b.rng.choice(["Add", "Mul"]), ["Add", "Mul"])
    c = weight(b, big, x.dtype, op)
    return tap(b, b.op(op, [x, c] if b.rng.random() < 0.7 else [c, x], x.dtype, big), 0.1)


MOTIFS = (
    shaped_motif("slim-dropout-mask", ("dead_node_elimination", "eliminate_nop_dropout"),
                 _dropout_mask, dtypes=_FLOATS, ranks=(1, 4),
                 anchors=("Dropout",)),
    shaped_motif("slim-concat-empty", ("dead_node_elimination", "eliminate_nop_concat"),
                 _concat_empty, dtypes=frozenset(NUMERIC), ranks=(2, 4),
                 anchors=("Concat",)),
    shaped_motif("slim-clip-slots", ("subexpression_elimination", "eliminate_common_subexpression"),
                 _clip_slots, dtypes=frozenset({FLOAT}), ranks=(1, 4), since=11,
                 anchors=("Clip",)),
    shaped_motif("slim-split-counts", ("subexpression_elimination",
                                       "eliminate_common_subexpression"),
                 _split_counts, dtypes=frozenset(NUMERIC), ranks=(1, 4), until=17,
                 anchors=("Split",)),
    shaped_motif("slim-signed-zeros", ("weight_tying", "subexpression_elimination"),
                 _signed_zeros, dtypes=_FLOATS, ranks=(1, 4),
                 anchors=("Mul", "Reciprocal"), nonfinite=True),
    shaped_motif("slim-neutral-broadcast", ("dead_node_elimination", "eliminate_nop_with_unit"),
                 _neutral_broadcast, dtypes=frozenset(NUMERIC), ranks=(1, 3),
                 anchors=("Mul", "Add", "Sub", "Div")),
    shaped_motif("slim-symbolic-broadcast", ("shape_infer", "shape_inference"),
                 _symbolic_broadcast, dtypes=_FLOATS, ranks=(1, 4),
                 anchors=("Add", "Mul", "Expand")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 190
