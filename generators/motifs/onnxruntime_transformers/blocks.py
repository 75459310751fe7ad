"""Motifs for onnxruntime's Python transformer fusions (``onnxruntime/transformers/``, the
``onnxruntime-transformers`` target), named after the FusionOptions flags they target:

- ``tb-embed-layer-norm`` (``enable_embed_layer_norm``, fusion_embedlayer.py): word, position
  and segment embedding Gathers, their Adds and a LayerNormalization, followed by an
  attention block (the fusion looks for one). Position embeddings in BERT's form (Slice of a
  constant position-id row up to the sequence length), DistilBERT's (Range, Unsqueeze,
  Expand to the ids' shape) and GPT-2's (a position-ids graph input).
- ``tb-bert-attention`` (``enable_attention``, fusion_attention.py): BERT self-attention from
  Q, K, V MatMul + bias Add to the residual Add and the LayerNormalization after it, with or
  without the additive mask (Unsqueeze, Unsqueeze, Cast, 1 - m, * a negative constant) of a
  0/1 mask input.
- ``tb-bias-skip-layer-norm`` (``enable_skip_layer_norm``, ``enable_bias_skip_layer_norm``,
  fusion_skiplayernorm.py): MatMul, bias Add, residual Add, LayerNormalization; sometimes a
  Cast between the MatMul and the bias (mixed precision), a (1, S, H) residual, or the
  residual Add already fused into a ``com.microsoft`` SkipLayerNormalization (what
  onnxruntime's own level-2 optimization hands to the Python fusions); half the draws are
  instead one of the layer normalization spellings of forms.py (``layer_norm_forms``).
- ``tb-bias-gelu`` (``enable_bias_gelu``, ``enable_gemm_fast_gelu``, ``enable_gelu``;
  fusion_biasgelu.py, fusion_gemmfastgelu.py): MatMul, bias Add, then ONNX Gelu (opset 20,
  exact or tanh), a ``com.microsoft`` Gelu or FastGelu, or GELU spelled with Erf; and MatMul
  straight into FastGelu; most draws (80%) are instead one of the GELU spellings of
  forms.py (``gelu_forms``, nine forms to these three).

Masks are 0/1 by construction (a bool graph input, possibly cast to int64 or float): the
fused Attention treats any positive mask value as 1, the unfused graph computes 1 - m, so
other integers are outside the pattern's contract. Element types are float32 and float16
(both run on onnxruntime's CPU execution provider, fused or not). Besides the forms the
fusions expect, each motif sometimes builds one they must refuse or handle with care: a
constant that is not the pattern's (a scale other than 1/sqrt(head size), a position-id row
that does not count from 0), weights in Constant nodes or overridable graph inputs, an
intermediate with a second consumer or that is a graph output, a mask broadcast along the
query axis. LayerNormalization is the ONNX op from opset 17, below that its decomposition
(which ``enable_layer_norm`` fuses first).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.helpers import (
    FLOAT_INPUT,
    binary,
    const,
    float_view,
    ort_motif,
    placement,
    tap,
)
from generators.motifs.onnxruntime_transformers.forms import gelu_forms, layer_norm_forms
from generators.ops import shape_ops
from generators.ops.reduce import reduce
from generators.schema.levels import NONDEFAULT
from generators.values import BOOL, FLOAT, FLOAT16, INT32, INT64, NP_DTYPE, Value

MS = "com.microsoft"
#: A weight maker: ``(shape, dtype, op, positive) -> Value``.
Weigher = Callable[..., Value]


def _weigher(b: GraphBuilder) -> Weigher:
    """Weights of one block: all initializers mostly (the fusions read their values), else
    each placed like :func:`~generators.motifs.helpers.placement` (a Constant node or an
    overridable graph input, which the fusions must take as they are or refuse)."""
    mixed = b.rng.random() < 0.15

    def make(shape: tuple[int, ...], dtype: int, op: str = "Const",
             positive: bool = False) -> Value:
        where = placement(b) if mixed else "initializer"
        return b.random_weight(shape, dtype, op, placement=where, positive=positive)

    return make


def _heads(b: GraphBuilder) -> tuple[int, int]:
    """(number of heads, head size); hidden size is their product."""
    return b.rng.choice([1, 2, 2, 3, 4]), b.rng.choice([2, 4, 4, 8])


def _norm(b: GraphBuilder, x: Value, w: Weigher) -> Value:
    """LayerNormalization over the last axis with gamma and beta: the ONNX op from opset 17,
    else ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add (fusion_layernorm.py)."""
    h, dt = x.shape[-1], x.dtype
    gamma = w((h,), dt, "LayerNormalization", positive=True)
    beta = w((h,), dt, "LayerNormalization")
    eps = b.rng.choice([1e-5, 1e-12, 1e-6])
    if b.opset >= 17:
        return b.op("LayerNormalization", [x, gamma, beta], dt, x.shape, axis=-1,
                    epsilon=eps if b.rng.random() < 0.8 else None)
    axes = [-1] if b.opset >= 11 else [x.rank - 1]
    mean = reduce(b, "ReduceMean", x, axes=axes, keepdims=1)
    d = b.op("Sub", [x, mean], dt, x.shape)
    var = reduce(b, "ReduceMean", b.op("Pow", [d, const(b, 2.0, dt)], dt, x.shape, ("nonneg",)),
                 axes=axes, keepdims=1)
    # a scalar epsilon mostly: the fusions pass it to float(), which numpy 2 refuses for a
    # (1,) array (TypeError), so that form ends the whole optimization
    eps_shape = () if b.rng.random() < 0.95 else (1,)
    s = b.op("Sqrt", [binary(b, "Add", var, const(b, eps, dt, eps_shape), commute=False)], dt,
             var.shape)
    n = b.op("Div", [d, s], dt, x.shape)
    return binary(b, "Add", binary(b, "Mul", n, gamma, commute=False), beta, commute=False)


def _dense(b: GraphBuilder, x: Value, n: int, w: Weigher, bias: bool = True) -> Value:
    """MatMul by a (K, n) weight, then (if ``bias``) Add of an (n,) bias in either order."""
    m = b.op("MatMul", [x, w((x.shape[-1], n), x.dtype, "MatMul")], x.dtype,
             (*x.shape[:-1], n))
    return binary(b, "Add", m, w((n,), x.dtype, "Add")) if bias else m


def _hidden_input(b: GraphBuilder, dtype: int, bsz: int, seq: int) -> Value:
    """A new graph input of ``dtype`` and shape (bsz, seq), kept out of the pool."""
    v = b.graph_input(dtype, (bsz, seq))
    b.pool.remove(v)
    return v


# -- attention --------------------------------------------------------------------------------
def _mask(b: GraphBuilder, scores: Value) -> Value:
    """``scores`` + (1 - m) * c for a 0/1 mask m of shape (B, S): m is a bool graph input, cast
    to int64 or float, unsqueezed to (B, 1, 1, S) (rarely (B, 1, S, 1): a mask along the
    query axis the fusion must not take for a key mask); c is -10000, the float type's
    lowest value, or (rarely) a value the fusion must refuse (positive)."""
    bsz, _, _, seq = scores.shape
    dt = scores.dtype
    m = _hidden_input(b, BOOL, bsz, seq)
    kind = b.rng.choice([INT64, INT64, dt, BOOL])
    if kind != BOOL:
        m = b.op("Cast", [m], kind, m.shape, ("nonneg",), to=kind)
    second = 2 if b.rng.random() < 0.95 or seq != scores.shape[2] else 3
    u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, m, [1]), [second])
    if u.dtype != dt:
        u = b.op("Cast", [u], dt, u.shape, ("nonneg",), to=dt)
    fill = b.rng.choice([-10000.0, -10000.0, float(np.finfo(NP_DTYPE[dt]).min), 10000.0]
                        if b.rng.random() < 0.1 else [-10000.0])
    inverted = b.op("Sub", [const(b, 1.0, dt, ()), u], dt, u.shape)
    additive = binary(b, "Mul", inverted, const(b, fill, dt, ()), commute=b.rng.random() < 0.1)
    return binary(b, "Add", scores, additive)


def _batch_concat(b: GraphBuilder, shape: Value, tail: list[int]) -> Value:
    """Concat(Unsqueeze(Gather(shape, 0)), [-1], tail): a Reshape shape whose batch size is
    read from a Shape output (DistilBERT's ``view(bs, -1, ...)``)."""
    g = b.op("Gather", [shape, b.const(np.array(0, np.int64), "Gather")], INT64, (),
             ("nonneg",), axis=0)
    parts = [shape_ops.unsqueeze(b, g, [0]), b.ints([-1], "Concat"), b.ints(tail, "Concat")]
    return b.op("Concat", parts, INT64, (2 + len(tail),), axis=0)


def _split_heads(b: GraphBuilder, v: Value, heads: int, head: int, perm: list[int],
                 shape: Value | None = None) -> Value:
    """Reshape (B, S, N*H) to (B, S, N, H) (shape [0, 0, N, H] mostly, sometimes static or
    [0, -1, N, H], or with ``shape`` (a Shape output of the hidden states)
    :func:`_batch_concat`) and Transpose by ``perm``."""
    bsz, seq, _ = v.shape
    if shape is not None:
        spec_v = _batch_concat(b, shape, [heads, head])
    else:
        spec = b.rng.choice([[0, 0, heads, head]] * 4 + [[bsz, seq, heads, head],
                                                         [0, -1, heads, head]])
        spec_v = b.ints(spec, "Reshape")
    r = b.op("Reshape", [v, spec_v], v.dtype, (bsz, seq, heads, head))
    return b.op("Transpose", [r], v.dtype, tuple(r.shape[i] for i in perm), perm=perm)


def attention_block(b: GraphBuilder, root: Value, heads: int, head: int, w: Weigher) -> Value:
    """BERT self-attention on ``root`` (B, S, N*H) with the residual Add and the
    LayerNormalization after it (fusion_attention.py: FusionAttention starts at that
    normalization). The scale is 1/sqrt(H) as a Div or a Mul, rarely another constant; a
    mask is added to the scores most of the time. A quarter of the time the Reshape shapes
    read the batch size from Shape(root) (DistilBERT's export, whose embedding fusion looks
    for that Shape among the normalization's consumers)."""
    bsz, seq, hidden = root.shape
    dt = root.dtype
    shp = b.op("Shape", [root], INT64, (3,), ("nonneg",)) if b.rng.random() < 0.25 else None
    q = _split_heads(b, _dense(b, root, hidden, w), heads, head, [0, 2, 1, 3], shp)
    if b.rng.random() < 0.8:
        k = _split_heads(b, _dense(b, root, hidden, w), heads, head, [0, 2, 3, 1], shp)
    else:  # K transposed to heads first, then its last two axes swapped
        k0 = _split_heads(b, _dense(b, root, hidden, w), heads, head, [0, 2, 1, 3], shp)
        k = b.op("Transpose", [k0], dt, (bsz, heads, head, seq), perm=[0, 1, 3, 2])
    v = _split_heads(b, _dense(b, root, hidden, w), heads, head, [0, 2, 1, 3], shp)
    qk = b.op("MatMul", [q, k], dt, (bsz, heads, seq, seq))
    scale = math.sqrt(head) if b.rng.random() < 0.9 else b.rng.choice(
        [math.sqrt(hidden), 8.0, head])
    if b.rng.random() < 0.7:
        scores = b.op("Div", [qk, const(b, scale, dt, ())], dt, qk.shape)
    else:
        scores = binary(b, "Mul", qk, const(b, 1 / scale, dt, ()), commute=b.rng.random() < 0.1)
    if b.rng.random() < 0.75:
        scores = _mask(b, scores)
    axis = -1 if b.opset >= 13 and b.rng.random() < 0.5 else 3
    if b.opset >= 13 and b.rng.random() < 0.04:
        axis = 2  # a softmax over the queries: not attention, though every op matches
    p = tap(b, b.op("Softmax", [scores], dt, scores.shape, ("bounded", "nonneg"), axis=axis),
            0.05)
    ctx = b.op("MatMul", [p, v], dt, (bsz, heads, seq, head))
    t = b.op("Transpose", [ctx], dt, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    spec = _batch_concat(b, shp, [hidden]) if shp is not None else \
        b.ints([0, 0, hidden], "Reshape")
    r = b.op("Reshape", [t, spec], dt, (bsz, seq, hidden))
    out = tap(b, _dense(b, r, hidden, w), 0.05)
    return _norm(b, binary(b, "Add", out, root, commute=b.rng.random() < 0.2), w)


def _attention(b: GraphBuilder, x: Value) -> Value:
    """:func:`attention_block` on hidden states made from ``x`` (B, S, E): a projection to
    N*H, normalized first most of the time (BERT's post-norm layout)."""
    x = float_view(b, x, (FLOAT, FLOAT, FLOAT16))
    w = _weigher(b)
    heads, head = _heads(b)
    root = _dense(b, x, heads * head, w, bias=b.rng.random() < 0.5)
    if b.rng.random() < 0.85:
        root = _norm(b, root, w)
    return attention_block(b, root, heads, head, w)


# -- embeddings -------------------------------------------------------------------------------
def _position_row(b: GraphBuilder, count: int) -> np.ndarray:
    """The (1, count) position-id row BERT slices: 0, 1, 2 ... mostly; rarely counting from
    1 or backwards (not the positions EmbedLayerNormalization assumes)."""
    r = b.rng.random()
    row = np.arange(count) + (1 if 0.9 <= r < 0.95 else 0)
    return (row[::-1].copy() if r >= 0.95 else row).reshape(1, count).astype(np.int64)


def _seq_len(b: GraphBuilder, ids: Value) -> Value:
    """Gather(Shape(ids), 1): the sequence length as an int64 scalar."""
    shape = b.op("Shape", [ids], INT64, (2,), ("nonneg",))
    return b.op("Gather", [shape, b.const(np.array(1, np.int64), "Gather")], INT64, (),
                ("nonneg",), axis=0)


def _bert_positions(b: GraphBuilder, ids: Value, table: Value) -> Value:
    """Gather(table, Slice(position row, [0], Unsqueeze(seq length, 0), [1], [1]))."""
    seq = ids.shape[1]
    n = _seq_len(b, ids)
    if b.rng.random() < 0.3:
        n = b.op("Add", [n, b.const(np.array(0, np.int64), "Add")], INT64, (), ("nonneg",))
    end = shape_ops.unsqueeze(b, n, [0])
    row = b.const(_position_row(b, table.shape[0]), "Slice")
    inputs = [row, b.ints([0], "Slice"), end, b.ints([1], "Slice")]
    if b.rng.random() < 0.5:
        inputs.append(b.ints([1], "Slice"))
    pos = b.op("Slice", inputs, INT64, (1, seq), ("nonneg",))
    return b.op("Gather", [table, pos], table.dtype, (1, seq, table.shape[1]))


def _distilbert_positions(b: GraphBuilder, ids: Value, table: Value) -> Value:
    """Gather(table, Expand(Unsqueeze(Range(0, seq length, 1), 0), Shape(ids)))."""
    n = _seq_len(b, ids)
    if b.rng.random() < 0.3:
        n = b.op("Cast", [n], INT64, (), ("nonneg",), to=INT64)
    one, zero = (b.const(np.array(v, np.int64), "Range") for v in (1, 0))
    rng_ = b.op("Range", [zero, n, one], INT64, (ids.shape[1],), ("nonneg",))
    u = shape_ops.unsqueeze(b, rng_, [0])
    shape = b.op("Shape", [ids], INT64, (2,), ("nonneg",))
    pos = b.op("Expand", [u, shape], INT64, ids.shape, ("nonneg",))
    return b.op("Gather", [table, pos], table.dtype, (*ids.shape, table.shape[1]))


def _embed_layer_norm(b: GraphBuilder, x: Value) -> Value:
    """Embeddings of id inputs (values 0..3, so every table has at least 4 rows), their sum
    normalized, then :func:`attention_block`. ``x`` only picks the element type. A schema
    row that gives the Gather a non-default axis gets a (hidden, vocab) word table gathered
    by column and transposed back."""
    dt = b.rng.choice([FLOAT, FLOAT, FLOAT16]) if x.dtype == FLOAT else x.dtype
    w = _weigher(b)
    heads, head = _heads(b)
    hidden = heads * head
    bsz, seq = b.rng.randint(1, 2), b.rng.randint(2, 6)
    ids = _hidden_input(b, b.rng.choice([INT64, INT64, INT32]), bsz, seq)
    vocab = b.rng.randint(6, 12)
    if b.planned("Gather", "attr:axis") == NONDEFAULT:  # a (hidden, vocab) table, by column
        words = w((hidden, vocab), dt, "Gather")
        cols = b.op("Gather", [words, ids], dt, (hidden, bsz, seq), axis=1)
        word = b.op("Transpose", [cols], dt, (bsz, seq, hidden), perm=[1, 2, 0])
    else:
        words = w((vocab, hidden), dt, "Gather")
        word = b.op("Gather", [words, ids], dt, (bsz, seq, hidden))
    form = b.rng.choice(["bert", "bert", "distilbert", "gpt2"])
    rows = 4 + b.rng.randint(0, 2) if form == "gpt2" else seq + b.rng.randint(1, 3)
    positions = w((rows, hidden), dt, "Gather")
    if form == "gpt2":
        pos_ids = _hidden_input(b, INT64, bsz, seq)
        total = binary(b, "Add", word, b.op("Gather", [positions, pos_ids], dt, word.shape))
    elif form == "distilbert":
        total = binary(b, "Add", word, _distilbert_positions(b, ids, positions))
    else:
        segments = w((4, hidden), dt, "Gather")
        seg = b.op("Gather", [segments, _hidden_input(b, INT64, bsz, seq)], dt, word.shape)
        pair = b.op("Add", [word, seg] if b.rng.random() < 0.85 else [seg, word], dt,
                    word.shape)
        total = b.op("Add", [pair, _bert_positions(b, ids, positions)], dt, word.shape)
    return attention_block(b, _norm(b, tap(b, total, 0.1), w), heads, head, w)


# -- bias + skip + layer norm -----------------------------------------------------------------
def _bias_skip_layer_norm(b: GraphBuilder, x: Value) -> Value:
    """LayerNormalization(MatMul(x) + bias + residual): the residual a second projection of
    x, of x's shape or (1, S, H); the bias Add sometimes behind a Cast of the MatMul to
    float16, sometimes a 2-D bias (the bias fusion must refuse it); the residual Add and the
    normalization sometimes already a com.microsoft SkipLayerNormalization."""
    w = _weigher(b)
    dt = b.rng.choice([FLOAT, FLOAT, FLOAT16])
    cast = dt == FLOAT16 and b.rng.random() < 0.3
    x = float_view(b, x, (FLOAT,) if cast else (dt,))
    h = b.rng.choice([x.shape[-1], 4, 8])
    m = _dense(b, x, h, w, bias=False)
    if cast:
        m = b.op("Cast", [m], FLOAT16, m.shape, to=FLOAT16)
        x = b.op("Cast", [x], FLOAT16, x.shape, to=FLOAT16)
    bias = w((h,) if b.rng.random() < 0.9 else (1, h), dt, "Add")
    biased = tap(b, binary(b, "Add", m, bias), 0.05)
    source = x
    if b.rng.random() < 0.2 and x.shape[0] > 1:  # a skip of shape (1, S, H)
        source = reduce(b, "ReduceMean", x, axes=[0], keepdims=1)
    skip = _dense(b, source, h, w, bias=b.rng.random() < 0.5)
    if b.rng.random() < 0.25 and skip.shape == biased.shape:
        gamma = w((h,), dt, "SkipLayerNormalization", positive=True)
        beta = w((h,), dt, "SkipLayerNormalization")
        args = [biased, skip] if b.rng.random() < 0.7 else [skip, biased]
        return b.op("SkipLayerNormalization", [*args, gamma, beta], dt, biased.shape,
                    domain=MS, epsilon=b.rng.choice([1e-5, 1e-12]))
    total = tap(b, binary(b, "Add", biased, skip), 0.1)
    return _norm(b, total, w)


# -- bias + gelu ------------------------------------------------------------------------------
def _erf_gelu(b: GraphBuilder, a: Value) -> Value:
    """a * 0.5 * (1 + Erf(a / sqrt(2))) (fusion_gelu.py, pattern 1)."""
    dt = a.dtype
    e = b.op("Erf", [b.op("Div", [a, const(b, math.sqrt(2), dt)], dt, a.shape)], dt, a.shape,
             ("bounded",))
    one_plus = binary(b, "Add", e, const(b, 1.0, dt))
    return binary(b, "Mul", binary(b, "Mul", a, const(b, 0.5, dt)), one_plus)


def _bias_gelu(b: GraphBuilder, x: Value) -> Value:
    """MatMul, bias Add, then a GELU: ONNX Gelu (exact or tanh, opset 20), com.microsoft
    Gelu or FastGelu, or its Erf spelling; or MatMul straight into FastGelu (the
    GemmFastGelu fusion)."""
    w = _weigher(b)
    x = float_view(b, x, (FLOAT, FLOAT, FLOAT16))
    n = b.rng.choice([x.shape[-1], 4, 6])
    m = _dense(b, x, n, w, bias=False)
    aimed = b.variant("", ("Gelu",)) == "Gelu" and b.opset >= 20  # ONNX Gelu, opset 20
    if b.rng.random() < 0.15 and not aimed:
        return b.op("FastGelu", [m], x.dtype, m.shape, domain=MS)
    a = tap(b, binary(b, "Add", m, w((n,) if b.rng.random() < 0.9 else (1, n), x.dtype, "Add")),
            0.08)
    forms = ["ms-gelu", "fast-gelu", "erf"] + (["onnx", "onnx"] if b.opset >= 20 else [])
    form = "onnx" if aimed else b.rng.choice(forms)
    if form == "onnx":
        return b.op("Gelu", [a], a.dtype, a.shape, approximate=b.rng.choice([None, "tanh"]))
    if form == "erf":
        return _erf_gelu(b, a)
    return b.op("Gelu" if form == "ms-gelu" else "FastGelu", [a], a.dtype, a.shape, domain=MS)


def _bias_skip_or_norm_forms(b: GraphBuilder, x: Value) -> Value:
    """:func:`_bias_skip_layer_norm` or (half the time)
    :func:`~generators.motifs.onnxruntime_transformers.forms.layer_norm_forms`."""
    if b.rng.random() < 0.5:
        return _bias_skip_layer_norm(b, x)
    return layer_norm_forms(b, x)


def _bias_gelu_or_forms(b: GraphBuilder, x: Value) -> Value:
    """:func:`_bias_gelu` or (80% of the time)
    :func:`~generators.motifs.onnxruntime_transformers.forms.gelu_forms`; a draw aimed at
    Gelu makes the ONNX Gelu of :func:`_bias_gelu` (from opset 20)."""
    if b.rng.random() < 0.2 or b.variant("", ("Gelu",)) == "Gelu":
        return _bias_gelu(b, x)
    return gelu_forms(b, x)


MOTIFS = (
    ort_motif("tb-embed-layer-norm", ("enable_embed_layer_norm", "enable_attention"),
              _embed_layer_norm, dtypes=FLOAT_INPUT, ranks=(1, 4), since=11,
              anchors=("Gather", "LayerNormalization")),
    ort_motif("tb-bert-attention", ("enable_attention",), _attention, dtypes=FLOAT_INPUT,
              ranks=(3, 3), since=11,
              anchors=("MatMul", "Softmax", "LayerNormalization")),
    ort_motif("tb-bias-skip-layer-norm", ("enable_skip_layer_norm",
                                          "enable_bias_skip_layer_norm",
                                          "BiasSkipLayerNormFusion", "enable_layer_norm"),
              _bias_skip_or_norm_forms, dtypes=FLOAT_INPUT, ranks=(3, 3), since=9,
              anchors=("MatMul", "Add", "LayerNormalization")),
    ort_motif("tb-bias-gelu", ("enable_bias_gelu", "enable_gemm_fast_gelu", "enable_gelu"),
              _bias_gelu_or_forms, dtypes=FLOAT_INPUT, ranks=(2, 3), since=9,
              anchors=("MatMul", "Add", "Gelu", "Erf")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 120
