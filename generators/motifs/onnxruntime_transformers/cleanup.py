"""Motifs for the steps ``optimize_model`` of onnxruntime's Python transformer optimizer runs
whatever the flags (``BertOnnxModel.optimize``: identity and useless Cast removal, the
Transpose constant folding, the Shape fusion, the useless Reshape removal,
``adjust_reshape_and_expand``), named by the hint ``optimize_model`` that the target's
``motif_hints`` always gives:

``tb-optimize-steps`` draws one of these forms:

- the Transpose folds (fusion_constant_fold.py): a 2-D weight initializer transposed
  (perm [1, 0], no perm, or the identity perm [0, 1]) into MatMul or Gemm (transB 0 or 1),
  whose transposed copy the fold stores; and two Transposes in a row with the same perm (an
  involution such as [1, 0, 2], or a rotation such as [1, 2, 0] that two applications do
  not undo), sometimes without a perm attribute.
- the Shape concat (fusion_shape.py): Concat(Unsqueeze(Gather(Shape(x), i))) over every
  axis i of x, which FusionShape replaces by Shape(x), feeding a Reshape or Expand;
  near-misses with the axes out of order or one left out.
- the cleanups (fusion_utils.py, onnx_model.py, onnx_model_bert.py): Identity chains (one
  a graph output), a Cast to the type the value has, a Reshape to the shape it has, a
  Reshape of a one-element tensor by an empty shape (to a scalar), the Slice, Reshape,
  Expand, Expand, Reshape chain ``adjust_reshape_and_expand`` shortens.

Element types float32 or float16; shapes of the input value x.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.helpers import FLOAT_INPUT, float_view, ort_motif
from generators.ops import shape_ops
from generators.values import FLOAT, FLOAT16, INT64, Value


def transpose_fold(b: GraphBuilder, x: Value) -> Value:
    """x (rank 2-4) times a transposed weight, or x through two Transposes of one perm
    (see the module docstring); returns the result."""
    x = float_view(b, x, (FLOAT, FLOAT, FLOAT16))
    dt = x.dtype
    if b.rng.random() < 0.55:
        k, n = x.shape[-1], b.rng.choice([2, 3, 4])
        if x.rank == 2 and b.rng.random() < 0.4:
            # Gemm(x, Transpose(W)) with transB 0 (W is (n, k)) or 1 (W is (k, n)): the fold
            # stores W transposed and sets transB to 0
            trans_b = b.rng.choice([0, 0, 1])
            wt = b.random_weight((k, n) if trans_b else (n, k), dt, "Transpose",
                                 placement="initializer")
            t = b.op("Transpose", [wt], dt, wt.shape[::-1], perm=[1, 0])
            return b.op("Gemm", [x, t, b.random_weight((n,), dt, "Gemm")], dt,
                        (x.shape[0], n), transB=trans_b or None)
        perm = b.rng.choice([[1, 0], [1, 0], None, [0, 1]])
        shape = (k, n) if perm == [0, 1] else (n, k)
        wt = b.random_weight(shape, dt, "Transpose", placement="initializer")
        t = b.op("Transpose", [wt], dt, (k, n), perm=perm)
        return b.op("MatMul", [x, t], dt, (*x.shape[:-1], n))
    r = x.rank
    choices = [list(range(r))[::-1]]
    if r >= 3:
        choices += [[1, 0, *range(2, r)], [*range(1, r), 0]]
    perm = b.rng.choice(choices)
    if b.rng.random() < 0.05 and perm == list(range(r))[::-1]:
        perm = None  # the default perm: the fold reads attribute[0] regardless
    once = tuple(x.shape[i] for i in (perm or list(range(r))[::-1]))
    t1 = b.op("Transpose", [x], dt, once, perm=perm)
    twice = tuple(once[i] for i in (perm or list(range(r))[::-1]))
    t2 = b.op("Transpose", [t1], dt, twice, perm=perm)
    if b.rng.random() < 0.15:
        return t2  # possibly a graph output with no consumer, which the fold looks up
    return b.op("Relu", [t2], dt, twice)


def shape_concat(b: GraphBuilder, x: Value) -> Value:
    """Reshape or Expand of x by Concat(Unsqueeze(Gather(Shape(x), i)) ...) (see the module
    docstring); returns its output, of x's shape."""
    shape = b.op("Shape", [x], INT64, (x.rank,), ("nonneg",))
    axes = list(range(x.rank))
    r = b.rng.random()
    if r < 0.1 and x.rank >= 2 and x.shape[0] == x.shape[1]:
        axes[0], axes[1] = 1, 0  # same sizes, other Gathers: not Shape(x) to the fusion
    parts = []
    for a in axes:
        g = b.op("Gather", [shape, b.const(np.array(a, np.int64), "Gather")], INT64, (),
                 ("nonneg",), axis=0)
        parts.append(shape_ops.unsqueeze(b, g, [0]))
    if r >= 0.9 and x.rank >= 2:  # one dim a constant
        parts[-1] = b.ints([x.shape[-1]], "Concat")
    spec = b.op("Concat", parts, INT64, (x.rank,), ("nonneg",), axis=0) if len(parts) > 1 \
        else parts[0]
    if b.rng.random() < 0.5:
        return b.op("Reshape", [x, spec], x.dtype, x.shape, x.props)
    return b.op("Expand", [x, spec], x.dtype, x.shape, x.props)


def cleanup(b: GraphBuilder, x: Value) -> Value:
    """Identity, same-type Cast, same-shape Reshape, empty-shape Reshape and the
    Slice/Expand chain on x (see the module docstring); returns a value of x's shape and
    type."""
    v = x
    for _ in range(b.rng.randint(1, 3)):
        kind = b.rng.choice(["identity", "identity", "cast", "reshape"])
        if kind == "identity":
            v = b.op("Identity", [v], v.dtype, v.shape, v.props)
            if b.rng.random() < 0.25:
                b.graph_output(v)
        elif kind == "cast":
            v = b.op("Cast", [v], v.dtype, v.shape, v.props, to=v.dtype)
        else:
            v = b.op("Reshape", [v, b.ints(list(v.shape), "Reshape")], v.dtype, v.shape,
                     v.props)
    if b.rng.random() < 0.3:
        _slice_expand(b, v)
    if b.rng.random() < 0.3:
        one = b.op("ReduceMean", [v], v.dtype, (1,) * v.rank, keepdims=1) if b.opset < 18 \
            else b.op("ReduceMean", [v, b.ints(list(range(v.rank)), "ReduceMean")], v.dtype,
                      (1,) * v.rank, keepdims=1)
        s = b.op("Reshape", [one, b.ints([], "Reshape")], v.dtype, ())
        v = b.op("Add", [v, s], v.dtype, v.shape)
    return v


def _slice_expand(b: GraphBuilder, v: Value) -> Value:
    """Reshape(Expand(Expand(Reshape(Slice(flat v), [m]), [n, m]), [n, m]), [n * m]), n 1
    or 2: the path ``BertOnnxModel.adjust_reshape_and_expand`` rewires to read the Slice
    directly (the same values only for n = 1). Returns the last Reshape's output (left in
    the pool)."""
    flat = b.op("Reshape", [v, b.ints([-1], "Reshape")], v.dtype, (v.size,), v.props)
    m = b.rng.randint(1, v.size)
    s = b.op("Slice", [flat, b.ints([0], "Slice"), b.ints([m], "Slice")], v.dtype, (m,),
             v.props)
    r = b.op("Reshape", [s, b.ints([m], "Reshape")], v.dtype, (m,), v.props)
    n = b.rng.choice([1, 2])
    e1 = b.op("Expand", [r, b.ints([n, m], "Expand")], v.dtype, (n, m), v.props)
    e2 = b.op("Expand", [e1, b.ints([n, m], "Expand")], v.dtype, (n, m), v.props)
    return b.op("Reshape", [e2, b.ints([n * m], "Reshape")], v.dtype, (n * m,), v.props)


def optimize_steps(b: GraphBuilder, x: Value) -> Value:
    """One of :func:`transpose_fold`, :func:`shape_concat` and :func:`cleanup` on x (rank
    2-4): the steps every configuration runs, one motif so that together they take one
    share of a hinted draw."""
    return b.rng.choice([transpose_fold, shape_concat, cleanup])(b, x)


MOTIFS = (
    ort_motif("tb-optimize-steps", ("optimize_model",), optimize_steps, dtypes=FLOAT_INPUT,
              ranks=(2, 4), since=9, anchors=("Transpose", "Concat", "Identity", "Cast")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 124
