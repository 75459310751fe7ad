"""Motifs for the matrix-product fusions of onnxslim (``core/pattern/fusion/gemm.py``:
``FusionGemm`` MatMul + Add into Gemm, with Reshapes around it for inputs of rank > 2;
``FusionGemmMul`` and ``FusionGemmAdd``, a constant Mul or Add after Gemm -> Reshape folded
into the Gemm) and onnx-simplifier's batched form (``fuse_matmul_add_bias_into_gemm_batched``
and ``eliminate_reshape_around_elementwise``, which cancels the Reshapes between two such
linears).

Varied beyond the textbook pattern: the input rank (2 to 4), the element type (float,
float16, and int32/int64 for which onnxruntime's CPU Gemm has no kernel), the constant on
either side of the MatMul and of the Add, bias shapes ``[N]``, ``[1, N]``, ``[M, N]``, a
scalar and rank-expanding ones, Gemm's ``transA``/``transB``/``alpha``/``beta`` and bias
shapes, a Reshape after the Gemm that keeps, moves or splits off the last dim
(``[M, N, 1]``: a ``[N]`` scale then broadcasts to ``[M, N, N]``), and a second consumer of
the MatMul, Gemm or Reshape output.
"""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.helpers import ints, swap, tap, weight
from generators.motifs.shaped import shaped_motif
from generators.values import FLOAT, FLOAT16, INT32, INT64, Value, broadcast

_TYPES = (FLOAT, FLOAT, FLOAT, FLOAT16, INT32, INT64)
#: element types of the Gemm motifs (onnxruntime runs Gemm in float and float16 only).
_GEMM_TYPES = (FLOAT, FLOAT, FLOAT16)


def _typed(b: GraphBuilder, x: Value, types: tuple[int, ...] = _TYPES) -> Value:
    """``x``, or ``x`` cast to a type drawn from ``types`` (integers from opset 9, where
    MatMul accepts them)."""
    dtype = b.rng.choice([t for t in types if b.opset >= 9 or t in (FLOAT, FLOAT16)])
    return x if dtype == x.dtype else b.op("Cast", [x], dtype, x.shape, x.props, to=dtype)


def _bias_shape(b: GraphBuilder, out: tuple[int, ...]) -> tuple[int, ...]:
    """A bias shape for a MatMul output ``out``: the common ones mostly, a rank-expanding
    one or one that spans the rows sometimes (the fusions must check what Gemm's C
    accepts)."""
    n = out[-1]
    common = [(n,), (n,), (1, n), ()]
    rare = [out[-2:], (1,) * len(out) + (n,), (1, 1, n), (out[-2], 1)]
    return b.rng.choice(common if b.rng.random() < 0.7 else rare)


def _matmul_add(b: GraphBuilder, x: Value) -> Value:
    """MatMul by a constant (K, N) weight (rarely with the constant on the left), then Add
    of a constant bias."""
    x = _typed(b, x)
    k, n = x.shape[-1], b.rng.randint(1, 4)
    if b.rng.random() < 0.1 and x.rank == 2:  # constant on the left: (N, M) @ (M, K)
        w = weight(b, (n, x.shape[0]), x.dtype, "MatMul")
        y = b.op("MatMul", [w, x], x.dtype, (n, k))
    else:
        w = weight(b, (k, n), x.dtype, "MatMul")
        y = b.op("MatMul", [x, w], x.dtype, (*x.shape[:-1], n))
    y = tap(b, y, 0.15)
    bias = weight(b, _bias_shape(b, y.shape), y.dtype, "Add")
    return b.op("Add", swap(b, y, bias), y.dtype, broadcast(y.shape, bias.shape))


def _gemm(b: GraphBuilder, x: Value) -> Value:
    """Gemm of 2-D ``x`` with random transB, alpha, beta and bias (or none)."""
    m, k = x.shape
    n = b.rng.randint(1, 4)
    trans_b = b.rng.choice([1, 1, 0])
    inputs = [x, weight(b, (n, k) if trans_b else (k, n), x.dtype, "Gemm")]
    if b.opset < 11 or b.rng.random() < 0.7:  # C is optional from opset 11
        inputs.append(weight(b, b.rng.choice([(n,), (1, n), (m, n), (m, 1), ()]), x.dtype,
                             "Gemm"))
    attrs = {"transB": trans_b if trans_b or b.rng.random() < 0.3 else None,
             "alpha": b.rng.choice([None, None, 0.5]),
             "beta": b.rng.choice([None, None, 2.0]) if len(inputs) == 3 else None}
    return b.op("Gemm", inputs, x.dtype, (m, n), **attrs)


def _reshape_target(b: GraphBuilder, m: int, n: int) -> tuple[int, ...]:
    """Where a Gemm's (M, N) output is reshaped to: the last dim kept (with leading dims
    split or added), the last dim split off into a trailing 1, or a flat vector."""
    return b.rng.choice([(1, m, n), (m, 1, n), (m, n, 1), (m, n, 1), (m * n,), (1, m * n)])


def _broadcasts(shape: tuple[int, ...], other: tuple[int, ...]) -> bool:
    try:
        broadcast(shape, other)
    except ValueError:
        return False
    return True


def _gemm_reshape_affine(op: str):
    def emit(b: GraphBuilder, x: Value) -> Value:
        x = _typed(b, x, _GEMM_TYPES)
        g = tap(b, _gemm(b, x), 0.3)
        m, n = g.shape
        target = _reshape_target(b, m, n)
        spec = list(target)
        if b.rng.random() < 0.3:
            spec[spec.index(max(spec))] = -1
        r = tap(b, b.op("Reshape", [g, ints(b, spec, "Reshape")], g.dtype, target), 0.1)
        shapes = [(n,), (n,), (), (1,), (target[-1],), (n, 1)]
        shape = b.rng.choice([s for s in shapes if _broadcasts(target, s)])
        c = weight(b, shape, r.dtype, op, positive=op == "Mul")
        return b.op(op, swap(b, r, c), r.dtype, broadcast(r.shape, c.shape))
    return emit


def _linear(b: GraphBuilder, x: Value, n: int) -> Value:
    w = weight(b, (x.shape[-1], n), x.dtype, "MatMul")
    y = b.op("MatMul", [x, w], x.dtype, (*x.shape[:-1], n))
    bias = weight(b, b.rng.choice([(n,), (n,), (1, n), ()]), x.dtype, "Add")
    return b.op("Add", swap(b, y, bias), x.dtype, y.shape)


def _mlp(b: GraphBuilder, x: Value) -> Value:
    """Two rank-3 linears with an element-wise chain between them (the transformer MLP that
    onnxsim turns into Gemms with Reshape scaffolding, then cancels the scaffolding); an
    element of the chain may have a consumer outside it."""
    x = _typed(b, x, _GEMM_TYPES)
    if x.rank == 2:
        x = b.op("Unsqueeze", [x, ints(b, [0], "Unsqueeze")], x.dtype, (1, *x.shape)) \
            if b.opset >= 13 else b.op("Unsqueeze", [x], x.dtype, (1, *x.shape), axes=[0])
    h = _chain(b, _linear(b, x, b.rng.randint(2, 6)))
    return _linear(b, h, b.rng.randint(1, 4))


def _chain(b: GraphBuilder, h: Value) -> Value:
    """One to three element-wise ops on ``h`` (activations, a constant scale or shift), each
    at times read outside the chain."""
    for _ in range(b.rng.randint(1, 3)):
        op = b.rng.choice(["Relu", "Tanh", "Sigmoid", "Mul", "Add"])
        if op in ("Mul", "Add"):
            c = weight(b, b.rng.choice([(h.shape[-1],), ()]), h.dtype, op)
            h = b.op(op, swap(b, h, c), h.dtype, h.shape)
        else:
            h = b.op(op, [h], h.dtype, h.shape)
        h = tap(b, h, 0.1)
    return h


def _gemm_scaffold(b: GraphBuilder, x: Value) -> Value:
    """Gemm, Reshape to rank 3 (the rows split), an element-wise chain, Reshape back to rank 2
    (mostly the inverse), Gemm: the scaffolding fuse_matmul_add_bias_into_gemm_batched leaves
    between two linears and eliminate_reshape_around_elementwise removes."""
    x = _typed(b, x, _GEMM_TYPES)
    g = _gemm(b, x)
    m, n = g.shape
    lead = (1, m) if m == 1 or b.rng.random() < 0.4 else (m // _factor(m), _factor(m))
    u = b.op("Reshape", [g, ints(b, [*lead, n], "Reshape")], g.dtype, (*lead, n))
    e = _chain(b, u)
    back = b.rng.choice([[-1, n], [m, n]])
    if b.rng.random() < 0.1 and m > 1:
        back = [n, m]
    f = b.op("Reshape", [e, ints(b, back, "Reshape")], e.dtype, (m, n) if back != [n, m]
             else (n, m))
    return _gemm(b, f)


def _factor(m: int) -> int:
    """The largest proper factor of ``m`` (1 for a prime)."""
    return next((d for d in range(m // 2, 1, -1) if m % d == 0), 1)


MOTIFS = (
    shaped_motif("slim-matmul-add", ("FusionGemm", "fuse_matmul_add_bias_into_gemm",
                                     "fuse_matmul_add_bias_into_gemm_batched"),
                 _matmul_add, dtypes=frozenset({FLOAT, FLOAT16}), ranks=(2, 4),
                 anchors=("MatMul", "Add")),
    shaped_motif("slim-gemm-reshape-mul", ("FusionGemmMul",), _gemm_reshape_affine("Mul"),
                 dtypes=frozenset({FLOAT, FLOAT16}), ranks=(2, 2),
                 anchors=("Gemm", "Reshape", "Mul")),
    shaped_motif("slim-gemm-reshape-add", ("FusionGemmAdd",), _gemm_reshape_affine("Add"),
                 dtypes=frozenset({FLOAT, FLOAT16}), ranks=(2, 2),
                 anchors=("Gemm", "Reshape", "Add")),
    shaped_motif("sim-gemm-reshape-chain", ("eliminate_reshape_around_elementwise",),
                 _gemm_scaffold, dtypes=frozenset({FLOAT, FLOAT16}), ranks=(2, 2),
                 anchors=("Gemm", "Reshape")),
    shaped_motif("sim-linear-chain-linear", ("fuse_matmul_add_bias_into_gemm_batched",
                                             "eliminate_reshape_around_elementwise",
                                             "FusionGemm"),
                 _mlp, dtypes=frozenset({FLOAT, FLOAT16}), ranks=(2, 3),
                 anchors=("MatMul", "Add")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 170
