"""Motifs for the shape handlers of onnxslim's symbolic shape inference
(``core/shape_inference/standard_ops/**``, ``context.py``) in the forms the random graphs and
the other symbolic motifs leave out: where a handler carries *values* (the shape arithmetic it
keeps in ``sympy_data_``) and where an input it needs is known only at run time.

- ``slim-shape-values``: the values of ``Shape`` of a tiled symbolic input split by ``Split``
  (a list the handler splits), a constant split along another axis (an array), ``Shape``
  with ``end`` (positive or negative) and ``start`` (0, negative or left out), ``Gather`` of
  the shape by a computed index, ``Slice`` bounds past ``-int_max``, a symbolic start on a
  fixed dim (with an end before the start too), a symbolic end on a fixed dim and one on a
  symbolic dim of another name, both bounds
  computed from the data (no ``axes``), a Slice of a constant's values, ``Expand`` to a
  higher rank, ``MatMul`` with a vector on either side or both, a batched ``MatMul`` whose
  batch dims have different names, broadcasts that merge two computed dims (``2*p`` and
  ``2*q``) or two dims only the run knows, ``Squeeze`` without axes, a sequence of tensors
  of two shapes (``SequenceInsert``, read by ``SequenceAt`` and ``SequenceLength``) and
  ``ConcatFromSequence`` (``new_axis`` or not), ``SoftmaxCrossEntropyLoss`` (with
  ``log_prob`` or not), ``Transpose`` of a shape value, ``Range`` to a dim picked by a 1-D
  index, ``Split`` into equal parts without ``split``, ``ReduceProd`` of a shape (the
  element count), a ``Reshape`` to a shape computed from the data;
- ``slim-unknown-extents``: ``Tile``, ``Expand``, ``Pad``, ``ReduceSum`` (axes input),
  ``ConstantOfShape``, ``Resize`` (scales) and ``Slice`` (start, no ``axes``) whose shape input
  is computed from the data (``ArgMax``), where the handler makes new dims; ``Compress``
  without ``axis``; ``Resize`` by constant ``sizes`` and by scales on symbolic dims (opset 10
  form too); ``TopK`` with the ``k`` attribute (opset < 10); an int64 ``ConstantOfShape`` of a
  computed shape of more than 1024 elements (too large for the inference to write back).

Every symbolic dim is 1 at run time (:func:`~generators.motifs.onnxslim.symbolic.symbolic_input`)
and tiled to a fixed length; a tensor whose shape only the run knows is summed to a scalar and
added back (:func:`absorb`). Both are drawn only for a hint naming ``shape_infer``.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, tensor_proto
from generators.motifs.helpers import Form, chain_forms, ints
from generators.motifs.onnxslim.symbolic import (
    INT_MAX,
    repeated,
    slice_form,
    small_index,
    symbolic_input,
    tile,
)
from generators.motifs.shaped import shaped_motif
from generators.values import BOOL, FLOAT, INT64, Value

#: dim names of the inputs these motifs declare.
_DIMS = ("h", "w", "seq")


def _tiled(b: GraphBuilder, rank: int) -> tuple[Value, Value]:
    """A new float input of ``rank`` whose dims are all symbolic (1 at run time) and its Tile
    by 2 to 4 per dim: ``(input, tiled)``."""
    v = symbolic_input(b, FLOAT, (1,) * rank, {a: _DIMS[a] for a in range(rank)})
    return v, tile(b, v, [b.rng.randint(2, 4) for _ in range(rank)])


def absorb(b: GraphBuilder, y: Value, name: str, dtype: int) -> Value:
    """``y + Cast(ReduceSum(t))`` for the tensor ``name`` of ``dtype`` whose shape only the run
    knows (it may be empty): summed over all axes to a scalar (``keepdims`` 0), cast to y's
    float type, added to float ``y`` (shape kept)."""
    total = b.op("ReduceSum", [Value(name, dtype, ())], dtype, (), keepdims=0)
    if dtype != y.dtype:
        total = b.op("Cast", [total], y.dtype, (), to=y.dtype)
    return b.op("Add", [y, total], y.dtype, y.shape)


def _one_or_two(b: GraphBuilder, y: Value) -> Value:
    """A (1,) int64 of 1 or 2 that only the run knows (``ArgMax`` of two values of y, + 1)."""
    return b.op("Add", [small_index(b, y), ints(b, [1], "Add")], INT64, (1,))


def _split_sizes(b: GraphBuilder, x: Value, sizes: list[int], axis: int) -> list[str]:
    """Split of ``x`` along ``axis`` by ``sizes`` in the opset's form; its output names."""
    if b.opset >= 13:
        return b.node("Split", [x.name, ints(b, sizes, "Split").name], n_out=len(sizes),
                      axis=axis)
    return b.node("Split", [x.name], n_out=len(sizes), axis=axis, split=sizes)


# -- shape values ---------------------------------------------------------------------------

def _split_shape(b: GraphBuilder, y: Value) -> Value:
    """Reshape ``y`` by ``Concat(tail, head)`` of ``Split(Shape(y), [1, rank - 1])``: its dims
    rotated by one."""
    shape = b.op("Shape", [y], INT64, (y.rank,))
    head, tail = _split_sizes(b, shape, [1, y.rank - 1], 0)
    target = b.op("Concat", [Value(tail, INT64, (y.rank - 1,)), Value(head, INT64, (1,))],
                  INT64, (y.rank,), axis=0)
    return b.op("Reshape", [y, target], y.dtype, (*y.shape[1:], y.shape[0]))


def _split_constant(b: GraphBuilder, y: Value) -> Value:
    """A (2, 4) int64 Constant node split along axis 0 or 1 (values the inference holds as an
    array); the parts are graph outputs."""
    axis = b.rng.randrange(2)
    c = b.const(np.arange(8, dtype=np.int64).reshape(2, 4), "Split", placement="constant")
    sizes = [1, 1] if axis == 0 else [1, 3]
    for name, size in zip(_split_sizes(b, c, sizes, axis), sizes, strict=True):
        b.graph_output(Value(name, INT64, (size, 4) if axis == 0 else (2, size)))
    return y


def _shape_end(b: GraphBuilder, y: Value) -> Value:
    """Reshape ``y`` to its own shape by ``Concat(Shape(y, end=e), [-1])`` with ``e`` the last
    axis spelled positive or negative and the start (0) left out, given or negative (opset
    15, else a plain Shape)."""
    if b.opset < 15:
        target = b.op("Shape", [y], INT64, (y.rank,))
    else:
        end = b.rng.choice([-1, y.rank - 1])
        lead = b.op("Shape", [y], INT64, (y.rank - 1,),
                    start=b.rng.choice([None, 0, -y.rank]), end=end)
        target = b.op("Concat", [lead, ints(b, [-1], "Concat")], INT64, (y.rank,), axis=0)
    return b.op("Reshape", [y, target], y.dtype, y.shape)


def _gather_computed(b: GraphBuilder, y: Value) -> Value:
    """``y + Cast(Gather(Shape(y), i))`` with the index ``i`` computed from the data."""
    picked = b.op("Gather", [b.op("Shape", [y], INT64, (y.rank,)), small_index(b, y)], INT64,
                  (1,), axis=0)
    return b.op("Add", [y, b.op("Cast", [picked], y.dtype, (1,), to=y.dtype)], y.dtype,
                y.shape)


def _slice_far_start(b: GraphBuilder, y: Value) -> Value:
    """Slice of a symbolic dim from a start below ``-int_max`` (clamped to 0 at run time)."""
    a = b.rng.randrange(y.rank)
    end = b.rng.choice([2, 1, INT_MAX + 5, -1])  # every tiled dim is 2 or more
    return slice_form(b, y, [-INT_MAX - 5], [end], [a], [1], axes_given=b.rng.random() < 0.7)


def _symbolic_start(b: GraphBuilder, y: Value, v: Value) -> Value:
    """``y + ReduceSum(w[s:e])`` of a fixed-length weight ``w`` whose start ``s`` is a dim of
    the symbolic input ``v`` (1 at run time) and end literal, negative or past the end."""
    w = b.random_weight((6,), FLOAT, "Slice")
    dim = b.op("Gather", [b.op("Shape", [v], INT64, (v.rank,)), ints(b, [0], "Gather")],
               INT64, (1,), axis=0)
    end = b.rng.choice([-1, -2, 4, INT_MAX + 5, -8])  # -8: before the start of w
    inputs = [w, dim, ints(b, [end], "Slice")]
    if b.rng.random() < 0.6:
        inputs.append(ints(b, [0], "Slice"))
    part = b.op("Slice", inputs, FLOAT, (len(range(*slice(1, end).indices(6))),))
    total = b.op("ReduceSum", [part], FLOAT, (1,), keepdims=1)
    return b.op("Add", [y, total], y.dtype, y.shape)


def _symbolic_end(b: GraphBuilder, y: Value, v: Value) -> Value:
    """``y + ReduceSum(w[s:n])`` of a fixed-length weight ``w`` from a literal start ``s``
    (0, or -6 spelled negative) to a dim ``n`` of the symbolic input ``v`` (1 at run time): a
    symbolic end on a fixed dim."""
    w = b.random_weight((6,), FLOAT, "Slice")
    dim = b.op("Gather", [b.op("Shape", [v], INT64, (v.rank,)), ints(b, [0], "Gather")],
               INT64, (1,), axis=0)
    inputs = [w, ints(b, [b.rng.choice([0, 0, -6])], "Slice"), dim]
    if b.rng.random() < 0.5:
        inputs.append(ints(b, [0], "Slice"))
    part = b.op("Slice", inputs, FLOAT, (1,))
    total = b.op("ReduceSum", [part], FLOAT, (1,), keepdims=1)
    return b.op("Add", [y, total], y.dtype, y.shape)


def _computed_bounds(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of ``w[i:i + 2]`` of a fixed-length weight ``w`` whose start ``i``
    and end are both computed from the data (``ArgMax``), ``axes`` left out: the inference
    knows neither bound nor the axis, and names a new dim."""
    w = b.random_weight((6,), FLOAT, "Slice")
    start = small_index(b, y)
    end = b.op("Add", [start, ints(b, [2], "Add")], INT64, (1,))
    part = b.node("Slice", [w.name, start.name, end.name])[0]  # 2 long, unknown here
    return absorb(b, y, part, FLOAT)


def _squeeze_all(b: GraphBuilder, y: Value) -> Value:
    """``y + Squeeze(ReduceSum(y))``: a Squeeze without axes (of a keepdims sum, all ones)."""
    total = b.op("ReduceSum", [y], y.dtype, (1,) * y.rank, keepdims=1)
    return b.op("Add", [y, b.op("Squeeze", [total], y.dtype, ())], y.dtype, y.shape)


def _sequence_insert(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus what a sequence of ``y`` and a weight ``w`` of another shape (3 on every
    axis, by ``SequenceInsert``) gives back: its length, the sum of its first element
    (``SequenceAt``, whose element shape the inference no longer knows) and the sum of
    ``ConcatFromSequence`` (``new_axis`` 1 or left out) of the sequence of ``y`` alone."""
    seq = b.node("SequenceConstruct", [y.name])[0]
    other = b.random_weight((3,) * y.rank, y.dtype, "SequenceInsert")
    both = b.node("SequenceInsert", [seq, other.name])[0]
    length = b.node("SequenceLength", [both])[0]
    count = b.op("Cast", [Value(length, INT64, ())], y.dtype, (), to=y.dtype)
    first = b.node("SequenceAt", [both, b.const(np.asarray(0, np.int64), "SequenceAt").name])[0]
    joined = b.node("ConcatFromSequence", [seq], axis=0,
                    new_axis=1 if b.rng.random() < 0.5 else None)[0]
    y = absorb(b, b.op("Add", [y, count], y.dtype, y.shape), joined, y.dtype)
    return absorb(b, y, first, y.dtype)  # summed: its dims are new symbols to the inference


def _cross_entropy(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the mean ``SoftmaxCrossEntropyLoss`` of ``y`` flattened to (N, C) rows by
    constant labels (the ``log_prob`` output read too at times)."""
    c = y.shape[-1]
    rows = b.op("Reshape", [y, ints(b, [-1, c], "Reshape")], y.dtype, (y.size // c, c))
    labels = b.const(b.nprng.integers(0, c, size=(rows.shape[0],)).astype(np.int64),
                     "SoftmaxCrossEntropyLoss")
    if b.rng.random() < 0.5:
        loss = b.op("SoftmaxCrossEntropyLoss", [rows, labels], y.dtype, ())
    else:
        loss_name, log_prob = b.node("SoftmaxCrossEntropyLoss", [rows.name, labels.name],
                                     n_out=2)
        loss = absorb(b, Value(loss_name, y.dtype, ()), log_prob, y.dtype)
    return b.op("Add", [y, loss], y.dtype, y.shape)


def _transposed_shape(b: GraphBuilder, y: Value) -> Value:
    """Reshape ``y`` by ``Transpose(Shape(y))``: a 1-D shape value transposed (unchanged)."""
    shape = b.op("Shape", [y], INT64, (y.rank,))
    perm = [0] if b.rng.random() < 0.5 else None
    return b.op("Reshape", [y, b.op("Transpose", [shape], INT64, (y.rank,), perm=perm)],
                y.dtype, y.shape)


def _range_of_dim(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of ``Range(0, n, 1)`` with ``n`` a dim of ``y`` picked by a 1-D
    index and squeezed to a scalar (the limit's value a list of one to the inference)."""
    k = b.rng.randrange(y.rank)
    picked = b.op("Gather", [b.op("Shape", [y], INT64, (y.rank,)), ints(b, [k], "Gather")],
                  INT64, (1,), axis=0)
    limit = b.op("Squeeze", [picked, ints(b, [0], "Squeeze")] if b.opset >= 13 else [picked],
                 INT64, (), **({} if b.opset >= 13 else {"axes": [0]}))
    seq = b.op("Range", [b.const(np.asarray(0, np.int64), "Range"), limit,
                         b.const(np.asarray(1, np.int64), "Range")], INT64, (y.shape[k],))
    return absorb(b, y, seq.name, INT64)


def _batch_matmul(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of ``MatMul(p, q)`` for two new inputs ``(P, m, k)`` and
    ``(Q, k, n)`` whose batch dims have different names: a broadcast of symbol against
    symbol, which the inference merges."""
    m, k, n = (b.rng.randint(1, 3) for _ in range(3))
    p = symbolic_input(b, FLOAT, (1, m, k), {0: "bp"})
    q = symbolic_input(b, FLOAT, (1, k, n), {0: "bq"})
    return absorb(b, y, b.op("MatMul", [p, q], FLOAT, (1, m, n)).name, FLOAT)


def _equal_halves(b: GraphBuilder, y: Value) -> Value | None:
    """``y`` with its halves along an even axis swapped: ``Concat`` of the two parts of a
    ``Split`` without ``split`` (``num_outputs`` from opset 18); None where no dim is even."""
    even = [i for i, d in enumerate(y.shape) if d % 2 == 0]
    if not even:
        return None
    k = b.rng.choice(even)
    first, second = b.node("Split", [y.name], n_out=2, axis=k,
                           num_outputs=2 if b.opset >= 18 else None)
    half = tuple(d // 2 if i == k else d for i, d in enumerate(y.shape))
    return b.op("Concat", [Value(second, y.dtype, half), Value(first, y.dtype, half)], y.dtype,
                y.shape, axis=k)


def _element_count(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus its element count, ``ReduceProd(Shape(y))`` with ``keepdims`` 0 over axis 0
    (``axes`` an attribute before opset 18; from 18 left out: all axes. onnxslim's inference
    of a ReduceProd whose ``axes`` is an input loses its output shape and stops)."""
    shape = b.op("Shape", [y], INT64, (y.rank,))
    if b.opset >= 18:
        count = b.op("ReduceProd", [shape], INT64, (), keepdims=0)
    else:
        count = b.op("ReduceProd", [shape], INT64, (), axes=[0], keepdims=0)
    return b.op("Add", [y, b.op("Cast", [count], y.dtype, (), to=y.dtype)], y.dtype, y.shape)


def _unknown_target(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of ``Reshape(y, Shape(y) + 0 * i)`` with ``i`` computed from the
    data: a target shape the inference cannot read."""
    zero = b.op("Mul", [small_index(b, y), ints(b, [0], "Mul")], INT64, (1,))
    target = b.op("Add", [b.op("Shape", [y], INT64, (y.rank,)), zero], INT64, (y.rank,))
    return absorb(b, y, b.op("Reshape", [y, target], y.dtype, y.shape).name, y.dtype)


def _other_symbol_end(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of a Slice of ``y`` along a dim (``a*h``) from 0 to the dim of a new
    1-D input named otherwise (``L``, 1 at run time) or to ``L + M - 1`` of two such (an
    end the inference can compare with the dim only by solving for its symbol, or not at
    all), or to the dim + 1 (past it)."""
    k = b.rng.randrange(y.rank)
    roll = b.rng.random()
    length = 1
    if roll < 0.2:  # y's own dim + 1: an end past the dim, which the inference proves
        picked = b.op("Gather", [b.op("Shape", [y], INT64, (y.rank,)), ints(b, [k], "Gather")],
                      INT64, (1,), axis=0)
        end = b.op("Add", [picked, ints(b, [1], "Add")], INT64, (1,))
        length = y.shape[k]
    elif roll < 0.6:
        end = b.op("Shape", [symbolic_input(b, FLOAT, (1,), {0: "L"})], INT64, (1,))
    else:  # L + M - 1: an end of two symbols
        dims = [b.op("Shape", [symbolic_input(b, FLOAT, (1,), {0: n})], INT64, (1,))
                for n in ("L", "M")]
        total = b.op("Add", dims, INT64, (1,))
        end = b.op("Sub", [total, ints(b, [1], "Sub")], INT64, (1,))
    inputs = [y, ints(b, [0], "Slice"), end]
    if k or b.rng.random() < 0.5:
        inputs.append(ints(b, [k], "Slice"))
    part = b.op("Slice", inputs, y.dtype,
                tuple(length if i == k else d for i, d in enumerate(y.shape)))
    return absorb(b, y, part.name, y.dtype)


def _slice_constant(b: GraphBuilder, y: Value) -> Value:
    """A graph output: the first two values of a 1-D int64 Constant node, by a Slice with all
    of axes and steps given."""
    c = b.const(np.asarray([3, 1, 4, 1], np.int64), "Slice", placement="constant")
    part = b.op("Slice", [c, ints(b, [0], "Slice"), ints(b, [2], "Slice"),
                          ints(b, [0], "Slice"), ints(b, [1], "Slice")], INT64, (2,))
    b.graph_output(part)
    return y


def _expand_rank(b: GraphBuilder, y: Value) -> Value:
    """Expand ``y`` to ``(2, *y.shape)`` by a constant shape of higher rank, then its mean
    over the new axis (back to y's shape)."""
    big = b.op("Expand", [y, ints(b, [2] + [1] * y.rank, "Expand")], y.dtype, (2, *y.shape))
    if b.opset >= 18:
        return b.op("ReduceMean", [big, ints(b, [0], "ReduceMean")], y.dtype, y.shape,
                    keepdims=0)
    return b.op("ReduceMean", [big], y.dtype, y.shape, axes=[0], keepdims=0)


def _vector_matmul(b: GraphBuilder, y: Value) -> Value:
    """MatMul of ``m = Reshape(y, [-1, L])`` (a symbolic row count) with a vector on the left
    and on the right, and of the left result with a vector (both 1-D): ``y`` plus the scalar
    product and the sum of the right result."""
    last = y.shape[-1]
    rows = y.size // last
    m = b.op("Reshape", [y, ints(b, [-1, last], "Reshape")], y.dtype, (rows, last))
    left = b.op("MatMul", [b.random_weight((rows,), FLOAT, "MatMul"), m], FLOAT, (last,))
    right = b.op("MatMul", [m, b.random_weight((last,), FLOAT, "MatMul")], FLOAT, (rows,))
    dot = b.op("MatMul", [left, b.random_weight((last,), FLOAT, "MatMul")], FLOAT, ())
    y = b.op("Add", [y, dot], y.dtype, y.shape)
    return absorb(b, y, right.name, FLOAT)


def _merge_computed(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of ``Tile(p, 2) + Tile(q, 2) + Tile(p, 2)`` for two new 1-D inputs of
    differently named dims: a merge of two computed dims (``2*p``, ``2*q``, neither a symbol of
    its own) and a computed dim met again after it."""
    p = symbolic_input(b, FLOAT, (1,), {0: "p"})
    q = symbolic_input(b, FLOAT, (1,), {0: "q"})
    total = b.op("Add", [tile(b, p, [2]), tile(b, q, [2])], FLOAT, (2,))
    total = b.op("Add", [total, tile(b, p, [2])], FLOAT, (2,))
    return absorb(b, y, total.name, FLOAT)


def _merge_unknown(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of ``Compress(f, c) + Compress(-f, c)`` (f the flattened y, c its
    positive entries): two dims only the run knows, equal there, merged by the inference."""
    flat = b.op("Reshape", [y, ints(b, [-1], "Reshape")], y.dtype, (y.size,))
    keep = b.op("Greater", [flat, b.scalar(0.0, FLOAT, "Greater")], BOOL, flat.shape)
    kept = b.node("Compress", [flat.name, keep.name], axis=0)[0]
    negated = b.op("Neg", [flat], FLOAT, flat.shape)
    other = b.node("Compress", [negated.name, keep.name], axis=0)[0]
    both = b.node("Add", [kept, other])[0]
    return absorb(b, y, both, FLOAT)


def _shape_values(b: GraphBuilder, x: Value) -> Value:
    """Two to six of the value forms (module docstring) on one tiled symbolic input of rank
    2 or 3 (a form whose op the opset lacks is left out)."""
    v, y = _tiled(b, b.rng.randint(2, 3))
    forms = {"split-shape": Form(0, _split_shape), "split-constant": Form(0, _split_constant),
             "shape-end": Form(0, _shape_end), "gather": Form(10, _gather_computed),
             "far-start": Form(10, _slice_far_start),
             "start": Form(10, lambda b, y: _symbolic_start(b, y, v)),
             "constant-slice": Form(10, _slice_constant), "expand": Form(8, _expand_rank),
             "matmul": Form(0, _vector_matmul), "merge-computed": Form(0, _merge_computed),
             "merge-unknown": Form(9, _merge_unknown),
             "end": Form(10, lambda b, y: _symbolic_end(b, y, v)),
             "bounds": Form(10, _computed_bounds), "squeeze": Form(0, _squeeze_all),
             "sequence": Form(11, _sequence_insert), "batch-matmul": Form(0, _batch_matmul),
             "cross-entropy": Form(13, _cross_entropy),
             "transposed-shape": Form(0, _transposed_shape), "range": Form(11, _range_of_dim),
             "halves": Form(0, _equal_halves), "count": Form(1, _element_count),
             "unknown-target": Form(10, _unknown_target),
             "other-end": Form(10, _other_symbol_end)}
    return chain_forms(b, y, forms, 2, 6)


# -- extents only the run knows -------------------------------------------------------------

def _computed_shape_input(b: GraphBuilder, y: Value, kind: str) -> Value:
    """``y`` plus the sum of ``kind`` (tile, expand, pad, reduce, fill, resize, slice) applied
    with a shape input computed from the data (1 or 2 where it is a size or repeat)."""
    k = _one_or_two(b, y)
    ones = ints(b, [1] * (y.rank - 1), "Concat")
    lead = b.op("Concat", [k, ones], INT64, (y.rank,), axis=0)
    if kind == "tile":
        out = b.node("Tile", [y.name, lead.name])[0]
    elif kind == "expand":
        out = b.node("Expand", [y.name, b.op("Concat", [k, ones, ints(b, [1], "Concat")],
                                             INT64, (y.rank + 1,), axis=0).name])[0]
    elif kind == "pad":
        zero_one = b.op("Sub", [k, ints(b, [1], "Sub")], INT64, (1,))
        pads = b.op("Mul", [zero_one, ints(b, [b.rng.randint(0, 1) for _ in range(2 * y.rank)],
                                           "Mul")], INT64, (2 * y.rank,))
        out = b.node("Pad", [y.name, pads.name])[0]
    elif kind == "reduce":
        axis = b.op("Sub", [k, ints(b, [1], "Sub")], INT64, (1,))
        out = b.node("ReduceSum", [y.name, axis.name], keepdims=1)[0]
    elif kind == "fill":
        out = b.node("ConstantOfShape", [lead.name],
                     value=tensor_proto(np.asarray([0.5], np.float32), "value"))[0]
    elif kind == "resize":
        scales = b.op("Cast", [lead], FLOAT, (y.rank,), to=FLOAT)
        empty = b.const(np.zeros((0,), np.float32), "Resize") if b.opset < 13 else None
        out = b.node("Resize", [y.name, empty.name if empty else "", scales.name],
                     mode="nearest")[0]
    else:  # slice from a computed start, axes left out (all of axis 0 on)
        out = b.node("Slice", [y.name, small_index(b, y).name,
                               ints(b, [INT_MAX + 5], "Slice").name])[0]
    return absorb(b, y, out, FLOAT)


def _resize_known(b: GraphBuilder, y: Value) -> Value:
    """Resize of symbolic dims by constant scales (the opset-10 form at opset 10) or constant
    ``sizes`` (twice the last dim); nearest."""
    factors = [1.0] * (y.rank - 1) + [2.0]
    out = (*y.shape[:-1], 2 * y.shape[-1])
    if b.opset == 10:
        scales = b.const(np.asarray(factors, np.float32), "Resize")
        return b.op("Resize", [y, scales], y.dtype, out)
    empty = b.const(np.zeros((0,), np.float32), "Resize") if b.opset < 13 else None
    if b.rng.random() < 0.5:
        scales = b.const(np.asarray(factors, np.float32), "Resize")
        return b.op("Resize", [y.name, empty.name if empty else "", scales.name], y.dtype, out)
    return b.op("Resize", [y.name, empty.name if empty else "", empty.name if empty else "",
                           ints(b, list(out), "Resize").name], y.dtype, out)


def _big_int_fill(b: GraphBuilder, y: Value) -> Value:
    """``y`` plus the sum of an int64 ``ConstantOfShape(Shape(t))`` of 1200 elements, ``t``
    computed from ``y`` (a (40, 30) Expand): values the inference knows but does not write
    back."""
    head = b.op("Reshape", [y, ints(b, [-1], "Reshape")], y.dtype, (y.size,))
    one = b.op("ReduceMax", [head], y.dtype, (1,), keepdims=1)
    t = b.op("Expand", [one, ints(b, [40, 30], "Expand")], y.dtype, (40, 30))
    filled = b.op("ConstantOfShape", [b.op("Shape", [t], INT64, (2,))], INT64, (40, 30),
                  value=tensor_proto(np.asarray([1], np.int64), "value"))
    return absorb(b, y, filled.name, INT64)


def _unknown_extents(b: GraphBuilder, x: Value) -> Value:
    """Two to five of the forms of the module docstring on one tiled symbolic input of rank
    2 or 3 (a float one)."""
    _, y = _tiled(b, b.rng.randint(2, 3))
    forms = ["tile", "expand", "pad", "reduce", "fill", "resize", "slice", "compress",
             "resize-known", "topk", "big-fill"]
    for form in b.rng.sample(forms, b.rng.randint(2, 5)):
        if form in ("tile", "expand", "fill", "slice") and b.opset >= 10:
            y = _computed_shape_input(b, y, form)
        elif form == "pad" and b.opset >= 11:
            y = _computed_shape_input(b, y, form)
        elif form == "reduce" and b.opset >= 13:
            y = _computed_shape_input(b, y, form)
        elif form == "resize" and b.opset >= 11:
            y = _computed_shape_input(b, y, form)
        elif form == "compress" and b.opset >= 10:
            flat = b.op("Reshape", [y, ints(b, [-1], "Reshape")], y.dtype, (y.size,))
            keep = b.op("Greater", [flat, b.scalar(0.0, FLOAT, "Greater")], BOOL, flat.shape)
            y = absorb(b, y, b.node("Compress", [y.name, keep.name])[0], FLOAT)
        elif form == "resize-known" and b.opset >= 10:
            y = _resize_known(b, y)
        elif form == "topk" and b.opset < 10:
            values, _ = b.node("TopK", [y.name], n_out=2, axis=-1, k=1)
            y = b.op("Add", [y, Value(values, y.dtype, (*y.shape[:-1], 1))], y.dtype, y.shape)
        elif form == "big-fill" and b.opset >= 9:
            y = _big_int_fill(b, y)
    return y


MOTIFS = (
    shaped_motif("slim-shape-values", ("shape_infer", "shape_inference"),
                 repeated(_shape_values, 1, 2), since=8),
    shaped_motif("slim-unknown-extents", ("shape_infer", "shape_inference"),
                 _unknown_extents, since=9),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 197
#: drawn only for a hint naming onnxslim's shape inference (``shape_infer``).
HINTED_ONLY = True
