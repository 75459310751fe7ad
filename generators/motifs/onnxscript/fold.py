"""Motifs for onnxscript's constant folding (``FoldConstantsPass``,
``onnxscript/optimizer/_constant_folding.py``): its partial evaluators, which rewrite nodes
whose inputs are not all constants (symbolic shape values of Shape, Gather, Concat, Add,
Abs, Reshape, Squeeze, Expand and Size; Cast and CastLike to the same type; Concat with one
or empty operands; Dropout in inference; sequences built by SequenceConstruct and
SplitToSequence read by SequenceAt and ConcatFromSequence), and the rules that decide
whether a node of constants is folded (the ops it keeps, large inputs, large outputs,
several outputs, random ops, Constant nodes of every value attribute).

Each motif plants the case the folder rewrites beside its near misses: Gather without an
explicit axis or with a scalar index, shapes with a symbolic dim (a graph input whose first
dim is named, of size 1 at run time), Dropout with a computed ``training_mode``, uneven and
one-element splits, a large constant with a second consumer.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from generators.builder import GraphBuilder, tensor_proto
from generators.motifs.helpers import (
    DOUBLE,
    Emit,
    cast_back,
    held_as_planned,
    ints,
    negated,
    ort_motif,
    weight,
)
from generators.ops import shape_ops
from generators.schema.levels import NONDEFAULT
from generators.values import BOOL, FLOAT, FLOAT16, INT32, INT64, NP_DTYPE, Value, broadcast

#: names of the symbolic first dim of the inputs these motifs add.
_DIM_NAMES = ("seq", "batch", "N", "len")
#: the folder's input size limit (``DEFAULT_CONSTANT_FOLD_INPUT_SIZE_LIMIT``): constants
#: above it are folded only by Transpose with no other consumer.
_INPUT_LIMIT = 8192
#: the folder's output size limit (``DEFAULT_CONSTANT_FOLD_OUTPUT_SIZE_LIMIT``).
_OUTPUT_LIMIT = 512 * 512

_FOLD = "FoldConstantsPass"


def repeat(emit: Emit, times: int) -> Emit:
    """An emitter that plants ``times`` draws of ``emit`` (each drawing its own form), the
    next on the previous result where that has ``x``'s shape and type, else on ``x``
    (results of another shape stay in the pool, to be read by later ops or become graph
    outputs): one motif draw then holds several of a rule's forms and near misses."""

    def emit_all(b: GraphBuilder, x: Value) -> Value | None:
        last = None
        for _ in range(times):
            src = last if last is not None and last.shape == x.shape and \
                last.dtype == x.dtype else x
            out = emit(b, src)
            last = out if out is not None else last
        return last

    return emit_all


def symbolic_input(b: GraphBuilder, d: int) -> Value:
    """A new float graph input of shape ``(N, d)`` whose first dim is symbolic (1 when the
    model runs): the folder's shape values then hold a symbolic dim."""
    return b.graph_input(FLOAT, (1, d), {0: b.rng.choice(_DIM_NAMES)})


def hidden_length(b: GraphBuilder, values: Value) -> Value:
    """``values`` (a 1-D int64 value of static length L; opset 10+) read back through
    ``Slice(values, [0], Shape(n) + (L - 1))`` with ``n`` a new 1-D float input of symbolic
    length (1 when the model runs, the end then L; a longer ``n`` only clamps): the same
    values in a tensor whose length no shape inference or folding can tell."""
    length = values.shape[0]
    n = b.graph_input(FLOAT, (1,), {0: b.rng.choice(_DIM_NAMES)})
    n_len = b.op("Shape", [n], INT64, (1,), ("nonneg",))
    end = b.op("Add", [n_len, ints(b, [length - 1], "Add")], INT64, (1,), ("nonneg",))
    return b.op("Slice", [values, ints(b, [0], "Slice"), end], INT64, (length,),
                values.props)


def computed_index(b: GraphBuilder) -> Value:
    """``[0]`` (1-D int64) computed as ``Shape(n) - Shape(n)`` of a new 1-D input ``n`` of
    symbolic length: no constant to the folder or the rules."""
    n = b.graph_input(FLOAT, (1,), {0: b.rng.choice(_DIM_NAMES)})
    sh = b.op("Shape", [n], INT64, (1,), ("nonneg",))
    return b.op("Sub", [sh, sh], INT64, (1,), ("nonneg",))


def computed_zero(b: GraphBuilder) -> Value:
    """A float scalar 0 computed from :func:`computed_index` (``Gather`` then ``Cast``)."""
    first = b.op("Gather", [computed_index(b), b.const(np.asarray(0, np.int64), "Gather")],
                 INT64, (), axis=0)
    return b.op("Cast", [first], FLOAT, (), to=FLOAT)


def unknown_rank(b: GraphBuilder, x: Value) -> Value:
    """``x`` (any shape and dtype) reshaped to its own shape read through
    :func:`hidden_length`: the same tensor, whose rank no shape inference knows (the rules'
    "shape is not known" checks); ``x`` itself before opset 10."""
    if b.opset < 10 or x.rank == 0:
        return x
    shape = b.op("Shape", [x], INT64, (x.rank,), ("nonneg",))
    return b.op("Reshape", [x, hidden_length(b, shape)], x.dtype, x.shape, x.props)


def _shape(b: GraphBuilder, x: Value, start: int | None = None,
           end: int | None = None) -> Value:
    """Shape of ``x`` (with ``start``/``end`` from opset 15), a 1-D int64 value."""
    lo = 0 if start is None else start % x.rank if start < 0 else min(start, x.rank)
    hi = x.rank if end is None else end % x.rank if end < 0 else min(end, x.rank)
    n = max(hi - lo, 0)
    return b.op("Shape", [x], INT64, (n,), ("nonneg",), start=start, end=end)


def _gather(b: GraphBuilder, shape: Value, index: int, explicit: bool = True,
            scalar: bool = False) -> Value:
    """Gather of one entry of a shape value: 1-D index (the folder's case), a scalar
    index (rank 0 result), without an explicit ``axis`` (which the folder requires)."""
    idx = b.const(np.asarray(index if scalar else [index], np.int64), "Gather")
    return b.op("Gather", [shape, idx], INT64, () if scalar else (1,), ("nonneg",),
                axis=0 if explicit else None)


def _shape_values(b: GraphBuilder, x: Value) -> Value:
    """Shape arithmetic on ``x`` and on a new input ``s`` of shape (N, d), N symbolic:
    Shape (start/end from opset 15), Gather with and without axis or with a computed
    index, Concat of pieces, Add of two one-element shapes (int + int, or N + int), Abs of
    a shape or of a constant with negative entries, Squeeze of a
    gathered dim, Size; the results shape Reshape and Expand of ``s`` to its own shape
    (folded to Identity) and a ConstantOfShape; returns ``x`` plus the reshaped ``s``."""
    d = x.shape[-1]
    s = symbolic_input(b, d)
    ss = _shape(b, s)
    start: int | None = None
    end: int | None = None
    if b.opset >= 15 and x.rank > 1 and b.rng.random() < 0.5:
        start = b.rng.choice([0, -x.rank, 1])
        end = b.rng.choice([None, x.rank, -1])
        lo, hi = start % x.rank, x.rank if end is None else end % x.rank or x.rank
        if hi <= lo:
            start = end = None
    sx = _shape(b, x, start=start, end=end)
    lo = 0 if start is None else start % x.rank
    dims_x = x.shape[lo:lo + sx.shape[0]]
    if b.rng.random() < 0.15:  # an index the folder does not know
        n_dim = b.op("Gather", [ss, computed_index(b)], INT64, (1,), ("nonneg",), axis=0)
    else:
        n_dim = _gather(b, ss, 0, explicit=b.rng.random() < 0.85)
    last = _gather(b, sx, sx.shape[0] - 1 if b.rng.random() < 0.5 else -1)
    r = b.rng.random()
    if r < 0.4:
        ss_abs = b.op("Abs", [ss], INT64, ss.shape, ("nonneg",))
    elif r < 0.6:  # Abs of a constant shape with negative entries: folded as a constant
        ss_abs = b.op("Abs", [ints(b, [-1, -d], "Abs")], INT64, (2,), ("nonneg",))
    else:
        ss_abs = b.op("Concat", [n_dim, _gather(b, ss, 1)], INT64, (2,), ("nonneg",),
                      axis=0)
    y = b.op("Reshape", [s, ss_abs], FLOAT, s.shape)
    target = ss
    if dims_x[-1] == d and b.rng.random() < 0.5:
        target = b.op("Concat", [n_dim, last], INT64, (2,), ("nonneg",), axis=0)
    y = b.op("Expand", [y, target], FLOAT, s.shape)
    if b.rng.random() < 0.5:
        total, length = b.op("Add", [n_dim, last], INT64, (1,), ("nonneg",)), 1 + dims_x[-1]
    else:
        total, length = b.op("Add", [last, last], INT64, (1,), ("nonneg",)), 2 * dims_x[-1]
    if b.rng.random() < 0.4:
        axes = shape_ops.axes_operand(b, "Squeeze", [0], 13)
        scalar = b.op("Squeeze", [total, *axes["inputs"]], INT64, (), ("nonneg",),
                      **axes["attrs"])
        total = shape_ops.unsqueeze(b, scalar, [0])
    b.op("ConstantOfShape", [total], FLOAT, (length,))
    size = b.op("Size", [s if b.rng.random() < 0.5 else x], INT64, ())
    b.op("Cast", [size], FLOAT, (), to=FLOAT)
    if b.rng.random() < 0.3:
        _gather(b, ss, 1, scalar=True)
    return b.op("Add", [x, y], FLOAT, broadcast(x.shape, y.shape))


def _cast_like(b: GraphBuilder, x: Value) -> Value:
    """CastLike of ``x`` to a constant of its own type (folded to Identity) or of another
    (folded to Cast), or Cast to its own type; back to float32."""
    to = b.rng.choice([FLOAT, FLOAT, FLOAT16, DOUBLE, INT32])
    if b.opset < 15 or b.rng.random() < 0.25:
        y = b.op("Cast", [x], x.dtype, x.shape, x.props, to=x.dtype)
        return b.op("Cast", [y], to, x.shape, to=to) if to != FLOAT else y
    like_dtype = np.float64 if to == DOUBLE else NP_DTYPE[to]
    like = b.const(np.zeros((b.rng.choice([1, 2]),), like_dtype), "CastLike")
    y = b.op("CastLike", [x, like], to, x.shape)
    return y if to == FLOAT else b.op("Cast", [y], FLOAT, x.shape, to=FLOAT)


def _empty_like(b: GraphBuilder, x: Value, k: int) -> Value:
    """A constant of ``x``'s shape with ``0`` at axis ``k`` (an empty tensor)."""
    shape = list(x.shape)
    shape[k] = 0
    return b.const(np.zeros(shape, NP_DTYPE[x.dtype]), "Concat")


def _concat_forms(b: GraphBuilder, x: Value) -> Value:
    """Concat of ``x`` alone, with empty operands along the axis (removed by the folder),
    or of empty operands only (then concatenated with ``x``); negative axes from opset
    11."""
    k = b.rng.randrange(x.rank)
    a = k - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else k
    form = b.rng.choice(["single", "empty", "empty", "all-empty"])
    if form == "single":
        return b.op("Concat", [x], x.dtype, x.shape, x.props, axis=a)
    if form == "empty":
        parts = [x, _empty_like(b, x, k)]
        if b.rng.random() < 0.5:
            parts.reverse()
        if b.rng.random() < 0.4:
            parts.append(weight(b, x.shape, x.dtype, "Concat"))
        out = list(x.shape)
        out[k] = sum(p.shape[k] for p in parts)
        return b.op("Concat", parts, x.dtype, tuple(out), axis=a)
    empty = b.op("Concat", [_empty_like(b, x, k), _empty_like(b, x, k)], x.dtype,
                 tuple(0 if i == k else d for i, d in enumerate(x.shape)), axis=a)
    return b.op("Concat", [empty, x], x.dtype, x.shape, x.props, axis=a)


def _dropout(b: GraphBuilder, x: Value) -> Value:
    """Dropout in inference: from opset 12 with ``ratio`` and ``training_mode`` inputs
    absent, ``""``, constant False, True with ratio 0, or computed (with ratio 0); before
    12 with a ``ratio`` attribute of 0 (``dropout_zero_rule``) or another; the mask output
    read at times (the folder then builds it with ConstantOfShape)."""
    if b.opset < 12:
        ratio = b.rng.choice([0.0, 0.0, 0.5, None])
        n_out = 2 if b.rng.random() < 0.3 else 1
        names = b.node("Dropout", [x.name], n_out=n_out, ratio=ratio)
        y = b.add(Value(names[0], x.dtype, x.shape, x.props))
        if n_out == 2 and b.opset >= 10:
            mask = b.op("Cast", [names[1]], FLOAT, x.shape, to=FLOAT)
            return b.op("Mul", [y, mask], FLOAT, x.shape)
        return y
    form = b.rng.choice(["none", "ratio", "false", "zero-true", "computed", "empty-ratio",
                         "computed-ratio"])
    inputs = [x.name]
    if form == "ratio":
        inputs.append(b.scalar(b.rng.choice([0.0, 0.3]), FLOAT, "Dropout").name)
    elif form in ("false", "empty-ratio"):
        ratio = "" if form == "empty-ratio" else b.scalar(0.5, FLOAT, "Dropout").name
        inputs += [ratio, b.const(np.asarray(False), "Dropout").name]
    elif form in ("zero-true", "computed-ratio"):  # ratio 0: no randomness in training
        ratio = computed_zero(b) if form == "computed-ratio" else b.scalar(0.0, FLOAT,
                                                                            "Dropout")
        inputs += [ratio.name, b.const(np.asarray(True), "Dropout").name]
    elif form == "computed":
        big = b.scalar(1e30, FLOAT, "Greater")
        m = b.op("ReduceMax", [x], FLOAT, (), keepdims=0)
        mode = b.op("Greater", [m, big], BOOL, ())
        inputs += [b.scalar(0.0, FLOAT, "Dropout").name, mode.name]
    n_out = 2 if b.rng.random() < 0.4 else 1
    seed = b.rng.choice([None, None, 7])
    names = b.node("Dropout", inputs, n_out=n_out, seed=seed)
    y = b.add(Value(names[0], x.dtype, x.shape, x.props))
    if n_out == 2:
        mask = b.op("Cast", [names[1]], FLOAT, x.shape, to=FLOAT)
        return b.op("Mul", [y, mask], FLOAT, x.shape)
    return y


def _split_chunks(dim: int, split: int | list[int] | None) -> list[int]:
    if split is None:
        return [1] * dim
    if isinstance(split, list):
        return split
    n = -(-dim // split)
    return [split] * (n - 1) + [dim - split * (n - 1)]


def _sequences(b: GraphBuilder, x: Value) -> Value | None:
    """:func:`_sequences_of` ``x``, held in the element type the schema row the draw takes
    gives the sequence (:func:`held_as_planned`; the retype cannot pass through a
    sequence) and cast back."""
    held = held_as_planned(b, x, ("SequenceAt", "dtype:T"), ("ConcatFromSequence", "dtype:T"))
    y = _sequences_of(b, held)
    return None if y is None else cast_back(b, y, x.dtype)


def _splits(b: GraphBuilder, dtype: int) -> bool:
    """Whether onnxruntime has a SplitToSequence kernel for ``dtype`` at the builder's
    opset (a row's element type may have none: int8, say)."""
    from onnx import TensorProto, defs

    from generators.schema.kernels import kernel_reason

    version = defs.get_schema("SplitToSequence", b.opset).since_version
    return kernel_reason("SplitToSequence", "", version,
                         {"T": TensorProto.DataType.Name(dtype).lower()}) is None


def _sequences_of(b: GraphBuilder, x: Value) -> Value | None:
    """Sequences the folder resolves: SequenceConstruct read by SequenceAt (positions from
    the front and the back) or ConcatFromSequence (``new_axis`` 0 or 1); SplitToSequence
    with a scalar split (even or uneven), a 1-D split or none (``keepdims`` 0 then, or with
    a 1-D split, where the spec ignores it) read by SequenceAt or ConcatFromSequence along the
    split axis."""
    k = b.rng.randrange(x.rank)
    a = k - x.rank if b.rng.random() < 0.4 else k
    if b.rng.random() < 0.4 or not _splits(b, x.dtype):
        other = negated(b, x)
        parts = [x, other] if b.rng.random() < 0.5 else [x, other, x]
        seq = b.node("SequenceConstruct", [p.name for p in parts])[0]
        if b.rng.random() < 0.5:
            pos = b.rng.choice([0, 1, -1, len(parts) - 1])
            p = b.const(np.asarray(pos, b.rng.choice([np.int64, np.int32])), "SequenceAt")
            return b.op("SequenceAt", [seq, p.name], x.dtype, x.shape)
        new_axis = b.rng.choice([0, 1])
        out = list(x.shape)
        if new_axis:
            ka = b.rng.randrange(x.rank + 1)
            out.insert(ka, len(parts))
            a = ka - x.rank - 1 if b.rng.random() < 0.4 else ka
        else:
            out[k] *= len(parts)
        return b.op("ConcatFromSequence", [seq], x.dtype, tuple(out), axis=a,
                    new_axis=new_axis)
    dim = x.shape[k]
    r = b.rng.random()
    split: int | list[int] | None
    if r < 0.3:
        split = None
    elif r < 0.65:
        split = b.rng.randint(1, max(1, dim))
    else:
        split = shape_ops.split_sizes(b, dim)
    chunks = _split_chunks(dim, split)
    # keepdims=0 drops the split axis where no split is given; with a 1-D split, the spec
    # and onnxruntime ignore it (the chunks keep the axis; onnxruntime squeezes chunks of a
    # scalar split, unlike the spec, so not there)
    keepdims = 0 if b.rng.random() < (0.5 if split is None else
                                      0.25 if isinstance(split, list) else 0) else None
    squeezed = keepdims == 0 and split is None
    inputs = [x.name]
    if split is not None:
        inputs.append(b.const(np.asarray(split, np.int64), "SplitToSequence").name)
    seq = b.node("SplitToSequence", inputs, axis=a, keepdims=keepdims)[0]
    if b.rng.random() < 0.5:
        i = b.rng.randrange(len(chunks))
        pos = i - len(chunks) if b.rng.random() < 0.3 else i
        shape = list(x.shape)
        if squeezed:
            del shape[k]
        else:
            shape[k] = chunks[i]
        p = b.const(np.asarray(pos, np.int64), "SequenceAt")
        return b.op("SequenceAt", [seq, p.name], x.dtype, tuple(shape))
    if squeezed:
        return b.op("ConcatFromSequence", [seq], x.dtype, x.shape, axis=a, new_axis=1)
    return b.op("ConcatFromSequence", [seq], x.dtype, x.shape, axis=a)


def _constant_attrs(b: GraphBuilder, x: Value) -> Value:
    """Constant nodes of each value attribute (from opset 12: ``value_float``,
    ``value_floats``, ``value_int``, ``value_ints``, at times ``value_string`` or
    ``value_strings`` read by Size or Shape; ``value`` before) feeding a Mul, an Add and a
    Reshape of ``x``."""
    if b.opset < 12:
        c = b.const(np.asarray(1.5, np.float32), "Mul", placement="constant")
        return b.op("Mul", [x, c], FLOAT, x.shape)
    scale = b.node("Constant", [], value_float=b.rng.choice([0.5, 2.0]))[0]
    y = b.op("Mul", [x, scale], FLOAT, x.shape)
    d = x.shape[-1]
    shifts = b.node("Constant", [], value_floats=[0.1 * (i + 1) for i in range(d)])[0]
    y = b.op("Add", [y, shifts], FLOAT, x.shape)
    shape = b.node("Constant", [], value_ints=[*x.shape[:-1], -1] if x.rank > 1 else [-1])[0]
    y = b.op("Reshape", [y, shape], FLOAT, x.shape)
    if b.rng.random() < 0.5:  # string Constants, read by Shape or Size (folded)
        words = [b"a", b"bc", b""][:b.rng.randint(1, 3)]
        many = b.rng.random() < 0.5
        text = b.node("Constant", [])[0]
        b.nodes[-1].attribute.append(  # (the builder's attributes hold no strings lists)
            helper.make_attribute("value_strings" if many else "value_string",
                                  words if many else words[0]))
        count = b.op("Shape", [text], INT64, (1,)) if many else \
            b.op("Size", [text], INT64, ())
        y = b.op("Add", [y, b.op("Cast", [count], FLOAT, count.shape, to=FLOAT)], FLOAT,
                 x.shape)
    one = b.node("Constant", [], value_int=1)[0]
    idx = b.op("Reshape", [one, b.ints([1], "Reshape")], INT64, (1,))
    if d > 1:
        picked = b.op("Gather", [y, idx], FLOAT, (*x.shape[:-1], 1), axis=-1)
        return b.op("Add", [y, picked], FLOAT, x.shape)
    return y


def _fold_limits(b: GraphBuilder, x: Value) -> Value:
    """Constant subgraphs at the folder's limits, added to ``x`` over its last dim: a
    Transpose of a constant above the input size limit (folded when it is the only
    consumer) and a reduction of such a constant (kept); an Expand above the output
    limit (kept); a Split of a constant (several outputs: kept); ConstantOfShape of a
    constant shape (kept by rule); a random op (kept) times zero; arithmetic on small
    constants (folded), at times of 12 rows (above the size limits a run may set)."""
    d = x.shape[-1]
    form = b.rng.choice(["transpose", "transpose", "large-output", "split", "cos",
                         "random", "small"])
    if form == "transpose":
        rows = _INPUT_LIMIT // 64 + 1 + b.rng.randint(0, 8)
        big = b.random_weight((64, rows), FLOAT, "Transpose", scale=0.05)
        t = b.op("Transpose", [big], FLOAT, (rows, 64), perm=[1, 0])
        if b.rng.random() < 0.4:  # a second consumer of the large constant
            b.op("ReduceMean", [big], FLOAT, (1, 1), keepdims=1)
        r = _reduce(b, "ReduceMean", t, [0], (1, 64))
        piece = b.op("Slice", [r, ints(b, [0]), ints(b, [min(d, 64)]), ints(b, [1])],
                     FLOAT, (1, min(d, 64))) if b.opset >= 10 else \
            b.op("Slice", [r], FLOAT, (1, min(d, 64)), starts=[0], ends=[min(d, 64)],
                 axes=[1])
        if min(d, 64) != d:
            return x
        return b.op("Add", [x, piece], FLOAT, broadcast(x.shape, piece.shape))
    if form == "large-output" and b.opset >= 8:
        side = int(_OUTPUT_LIMIT ** 0.5) + 2
        c = b.const(np.full((1, 1), 0.25, np.float32), "Expand")
        e = b.op("Expand", [c, ints(b, [side, side])], FLOAT, (side, side))
        m = b.op("ReduceMean", [e], FLOAT, (), keepdims=0)
        return b.op("Add", [x, m], FLOAT, x.shape)
    if form == "split":  # (on its second axis where the schema row gives the Split one)
        second = b.planned("Split", "attr:axis") == NONDEFAULT
        c = weight(b, (1, 2 * d) if second else (2, d), FLOAT, "Split")
        names = b.node("Split", [c.name], n_out=2, axis=1 if second else 0,
                       num_outputs=2 if b.opset >= 18 else None)
        a = b.op("Add", [x, names[0]], FLOAT, broadcast(x.shape, (1, d)))
        return b.op("Sub", [a, names[1]], FLOAT, a.shape)
    if form == "cos" and b.opset >= 9:
        shape = b.ints([d], "ConstantOfShape")
        c = b.op("ConstantOfShape", [shape], FLOAT, (d,),
                 value=tensor_proto(np.asarray([0.5], np.float32), "value"))
        return b.op("Add", [x, c], FLOAT, x.shape)
    if form == "random":
        rnd = b.op("RandomUniformLike", [x], FLOAT, x.shape, seed=b.rng.choice([None, 3.0]))
        zero = b.op("Mul", [rnd, b.scalar(0.0, FLOAT, "Mul")], FLOAT, x.shape)
        return b.op("Add", [x, zero], FLOAT, x.shape)
    rows = b.rng.choice([1, 1, 12])  # 12 rows: above the small limits optimize() may set
    c1 = weight(b, (rows, d), FLOAT, "Add")
    c2 = weight(b, (rows, d) if b.opset < 8 else (d,), FLOAT, "Add")  # Max-6: no broadcast
    s = b.op(b.rng.choice(["Add", "Mul", "Max"]), [c1, c2], FLOAT, (rows, d))
    if b.rng.random() < 0.5:
        s = b.op("Cast", [b.op("Cast", [s], INT32, (rows, d), to=INT32)], FLOAT, (rows, d),
                 to=FLOAT)
    if rows > 1:
        s = _reduce(b, "ReduceMean", s, [0], (1, d))
    return b.op("Add", [x, s], FLOAT, broadcast(x.shape, s.shape))


def _identity_outputs(b: GraphBuilder, x: Value) -> Value:
    """Identity nodes whose outputs are graph outputs: of ``x`` (a graph input at times:
    the folder cannot hand an input to an output), of an Identity that is an output
    itself, of a new intermediate; and a SplitToSequence (from opset 11) of a new input
    with a symbolic first dim by a split computed from its shape (one chunk, a split the
    folder sizes from its static shape), read back by SequenceAt."""
    first = b.op("Identity", [x], x.dtype, x.shape, x.props)
    b.graph_output(first)
    second = b.op("Identity", [first], x.dtype, x.shape, x.props)
    b.graph_output(second)
    y = b.op("Relu", [x], x.dtype, x.shape)
    z = b.op("Identity", [y], x.dtype, x.shape)
    b.graph_output(z)
    if b.opset >= 11 and b.rng.random() < 0.5:
        s = symbolic_input(b, x.shape[-1])
        split = _gather(b, _shape(b, s), 0)
        seq = b.node("SplitToSequence", [s.name, split.name], axis=0)[0]
        p = b.const(np.asarray(0, np.int64), "SequenceAt")
        at = b.op("SequenceAt", [seq, p.name], FLOAT, s.shape)
        # through a Cast, which a retype of the Identities' type can follow
        at = b.op("Cast", [at], x.dtype, s.shape, to=x.dtype)
        return b.op("Add", [y, at], x.dtype, broadcast(x.shape, s.shape))
    return y


def _reduce(b: GraphBuilder, op: str, x: Value, axes: list[int], out: tuple[int, ...],
            keepdims: int = 1) -> Value:
    """A reduction over ``axes`` in the opset's form."""
    if b.opset >= 18:
        return b.op(op, [x, b.ints(axes, op)], x.dtype, out, keepdims=keepdims)
    return b.op(op, [x], x.dtype, out, keepdims=keepdims, axes=axes)


#: the forms of the motifs above with the first opset each needs (a mixed draw picks them).
_FORMS: tuple[tuple[Emit, int], ...] = (
    (_shape_values, 11), (_cast_like, 7), (_concat_forms, 7), (_dropout, 7),
    (_sequences, 11), (_constant_attrs, 7), (_fold_limits, 7), (_identity_outputs, 7))


def _fold_mix(b: GraphBuilder, x: Value) -> Value | None:
    """One form of a motif above drawn at random (of those the opset has) on ``x`` (float,
    any rank): repeated, a region of the graph where the folder's partial evaluators and
    folding rules meet one another's results."""
    return b.rng.choice([emit for emit, since in _FORMS if b.opset >= since])(b, x)


MOTIFS = (
    ort_motif("os-fold-shape-values", (_FOLD,), repeat(_shape_values, 2), since=11,
              anchors=("Shape", "Gather", "Expand")),
    ort_motif("os-fold-cast-like", (_FOLD, "CastIdentity"), repeat(_cast_like, 3),
              anchors=("CastLike",)),
    ort_motif("os-fold-concat", (_FOLD,), repeat(_concat_forms, 3), ranks=(1, 4),
              anchors=("Concat",)),
    ort_motif("os-fold-dropout", (_FOLD, "dropout_zero_rule"), repeat(_dropout, 3),
              anchors=("Dropout",)),
    ort_motif("os-fold-sequences", (_FOLD,), repeat(_sequences, 4), since=11,
              anchors=("SequenceAt", "ConcatFromSequence")),
    ort_motif("os-fold-constant-attrs", (_FOLD, "LiftConstantsToInitializersPass"),
              _constant_attrs, anchors=("Constant",)),
    ort_motif("os-fold-limits", (_FOLD,), repeat(_fold_limits, 4), since=7,
              anchors=("Transpose", "Split")),
    ort_motif("os-fold-identity-outputs", (_FOLD,), _identity_outputs,
              anchors=("Identity",)),
    ort_motif("os-fold-mix", (_FOLD, "CastIdentity", "dropout_zero_rule",
                              "LiftConstantsToInitializersPass"), repeat(_fold_mix, 5)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 141
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
