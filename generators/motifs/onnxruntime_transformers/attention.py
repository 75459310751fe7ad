"""Motifs for the attention fusions of onnxruntime's Python transformer optimizer in the forms
``tb-bert-attention`` (blocks.py) does not build: the alternatives each fusion's
``match_parent_path`` lists accept, and the layouts of the model types other than BERT.

- ``tb-attention-forms`` (hint ``bert:enable_attention``; fusion_attention.py) and
  ``tb-clip-attention`` (hint ``clip:enable_attention``; fusion_attention_clip.py, CLIP's
  layout and score forms drawn more often; ``tb-attention-sdpa``, ``tb-attention-where``,
  ``tb-attention-albert`` and ``tb-clip-causal`` draw subsets of the forms): self-attention
  with the scores scaled by Div or Mul after Q.K^T, by Sqrt factors on Q and K (PyTorch's SDPA
  export), not at all (CLIP's unscaled form), or Q divided before the MatMul and the mask
  applied by Where (DistilBERT, or with a position bias added after the Where); the mask 1 - m
  (m cast or already float) times a negative constant, the SDPA form Where(Cast(1 -
  Expand(m)), lowest, 1 - Expand(m)), DistilBERT's Equal(m, 0) reshaped and expanded, or
  CLIP's causal Where(Less(...)) matrix; K transposed once or twice; V's head size sometimes
  another; the Reshape shapes constants or Concats of Shape-Gather-Unsqueeze, Mul, Div and
  constants (fusion_reshape.py rewrites some of them first); post-norm (BERT: residual Add,
  then LayerNormalization; sometimes ALBERT's Einsum output projection) or pre-norm (CLIP and
  GPT: LayerNormalization before the projections, the residual stream kept apart).
- ``tb-gpt2-attention``, ``tb-gpt2-megatron``, ``tb-gpt2-no-past`` (hint
  ``gpt2:enable_attention``; fusion_gpt_attention.py, fusion_gpt_attention_megatron.py,
  fusion_gpt_attention_no_past.py): GPT-2
  with past state: Gemm or MatMul QKV, Split, past halves by Gather or Split + Squeeze,
  the present output, the causal bias block sliced out of a constant by the scores' shape.
- ``tb-t5-attention`` (hint ``t5:enable_attention``; onnx_model_t5.py): T5's encoder
  attention with the RMS norm, unbiased projections and the relative position bias
  computed from bucketed Range differences (FusionRelativePositionBiasBlock's input);
  ``tb-t5-sliced-mask`` the same with the SD3/Flux export's sliced mask; ``tb-t5-decoder``
  the decoder's self-attention with past key and value (named as the export names them);
  ``tb-t5-cross`` its cross-attention over cached encoder key and value inputs.
- ``tb-bart-encoder``, ``tb-bart-decoder``, ``tb-bart-cross`` (hint
  ``bart:enable_attention``; fusion_bart_attention.py): BART's encoder, decoder (causal)
  and cross attention with the bias-first Adds of its export.

The model-qualified hints are what the target's ``motif_hints`` adds per enabled flag
(``fuzzer/targets/onnxruntime_transformers/target.py``): these forms are fused by one
optimizer class only, so they are drawn where it runs.

Shapes: the hidden states are (B, S, N*H) with B in 1..2, S in 2..5, N heads of size H.
Masks are 0/1 by construction (a bool graph input, cast to int64 or float), as in
``tb-bert-attention``. Element types float32 or float16.
"""

from __future__ import annotations

import math

import numpy as np

from generators.builder import GraphBuilder, value_info
from generators.motifs.helpers import FLOAT_INPUT, binary, const, float_view, ort_motif, tap
from generators.motifs.onnxruntime_transformers.blocks import (
    Weigher,
    _dense,
    _heads,
    _hidden_input,
    _norm,
    _weigher,
)
from generators.ops import shape_ops
from generators.values import BOOL, FLOAT, FLOAT16, INT64, NP_DTYPE, Value

#: the scores' forms: (scale, mask) kinds drawn by :func:`attention_forms`.
SCORE_FORMS = ("div-mask", "div-mask", "mul-mask", "div", "mul", "plain", "sdpa", "distil",
               "causal", "where-bias")


def _dim(b: GraphBuilder, shape: Value, axis: int) -> Value:
    """Gather(shape, axis): one dim of a Shape output as an int64 scalar."""
    return b.op("Gather", [shape, b.const(np.array(axis, np.int64), "Gather")], INT64, (),
                ("nonneg",), axis=0)


def _shape_of(b: GraphBuilder, x: Value, heads: int, head: int,
              kinds: tuple[str, ...] = ("const", "minus1", "div")) -> Value:
    """The head split's shape as exporters compute it: Concat(Unsqueeze(Gather(Shape(x),
    0)), Unsqueeze(Gather(Shape(x), 1)), [N], [H]); or its second entry a constant -1 (which
    fusion_reshape.py leaves alone, FusionAttentionClip reads N and H from it); or its last
    Unsqueeze(Div(Gather(Shape(x), 2), N)) (fusion_reshape.py's Div form); the form drawn
    from ``kinds``."""
    shape = b.op("Shape", [x], INT64, (x.rank,), ("nonneg",))
    kind = b.rng.choice(kinds)
    parts = [shape_ops.unsqueeze(b, _dim(b, shape, 0), [0])]
    if kind == "minus1":
        parts.append(b.ints([-1], "Concat"))
    else:
        parts.append(shape_ops.unsqueeze(b, _dim(b, shape, 1), [0]))
    parts.append(b.ints([heads], "Concat"))
    if kind == "div":
        n = b.const(np.array(heads, np.int64), "Div")
        d = b.op("Div", [_dim(b, shape, 2), n], INT64, (), ("nonneg",))
        parts.append(shape_ops.unsqueeze(b, d, [0]))
    else:
        parts.append(b.ints([head], "Concat"))
    return b.op("Concat", parts, INT64, (4,), axis=0)


def _merge_shape(b: GraphBuilder, t: Value, concat: bool) -> Value:
    """The merge Reshape's shape for t (B, S, N, H): [0, 0, N*H] (or static), or with
    ``concat`` Concat(Unsqueeze(Gather(Shape(t), 0)), Unsqueeze(Gather(Shape(t), 1)),
    Unsqueeze(Mul(Gather(Shape(t), 2), Gather(Shape(t), 3)))) (fusion_reshape.py's
    three-input form)."""
    bsz, seq, heads, head = t.shape
    if not concat:
        return b.ints([0, 0, heads * head] if b.rng.random() < 0.8 else
                      [bsz, seq, heads * head], "Reshape")
    shape = b.op("Shape", [t], INT64, (4,), ("nonneg",))
    parts = [shape_ops.unsqueeze(b, _dim(b, shape, a), [0]) for a in (0, 1)]
    m = b.op("Mul", [_dim(b, shape, 2), _dim(b, shape, 3)], INT64, (), ("nonneg",))
    return b.op("Concat", [*parts, shape_ops.unsqueeze(b, m, [0])], INT64, (3,), axis=0)


def _split(b: GraphBuilder, v: Value, heads: int, head: int, perm: list[int],
           concat: bool | tuple[str, ...], source: Value | None = None) -> Value:
    """Reshape (B, S, N*H) to (B, S, N, H) (shape [0, 0, N, H], or :func:`_shape_of` of
    ``source`` (default v) when ``concat``, of the kinds it names if a tuple), then
    Transpose by ``perm``."""
    bsz, seq, _ = v.shape
    src = v if source is None else source
    if not concat:
        spec = b.ints([0, 0, heads, head], "Reshape")
    elif isinstance(concat, tuple):
        spec = _shape_of(b, src, heads, head, concat)
    else:
        spec = _shape_of(b, src, heads, head)
    r = b.op("Reshape", [v, spec], v.dtype, (bsz, seq, heads, head))
    return b.op("Transpose", [r], v.dtype, tuple(r.shape[i] for i in perm), perm=perm)


def _mask_input(b: GraphBuilder, bsz: int, seq: int, kind: int) -> Value:
    """A 0/1 (B, S) mask: a bool graph input cast to ``kind`` (kept bool for BOOL)."""
    m = _hidden_input(b, BOOL, bsz, seq)
    if kind != BOOL:
        m = b.op("Cast", [m], kind, m.shape, ("nonneg",), to=kind)
    return m


def _lowest(b: GraphBuilder, dt: int) -> float:
    """The mask fill: -10000 or the float type's lowest value."""
    return b.rng.choice([-10000.0, float(np.finfo(NP_DTYPE[dt]).min)])


def _additive_mask(b: GraphBuilder, bsz: int, seq: int, dt: int, sdpa: bool) -> Value:
    """An additive (B, 1, 1, S) or (B, 1, S, S) mask: (1 - m) * c (m cast to float before
    or after its Unsqueezes, sometimes the bool graph input itself unsqueezed, or, as
    fusion_attention.py's second form, unsqueezed while float), or PyTorch SDPA's
    Where(Cast(1 - Expand(m), bool), lowest, 1 - Expand(m))."""
    if sdpa:
        m = _mask_input(b, bsz, seq, b.rng.choice([INT64, dt]))
        u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, m, [1]), [2])
        e = b.op("Expand", [u, b.ints([bsz, 1, seq, seq], "Expand")], u.dtype, (bsz, 1, seq, seq))
        if e.dtype != dt:
            e = b.op("Cast", [e], dt, e.shape, ("nonneg",), to=dt)
        inv = b.op("Sub", [const(b, 1.0, dt, ()), e], dt, e.shape)
        cond = b.op("Cast", [inv], BOOL, inv.shape, to=BOOL)
        return b.op("Where", [cond, const(b, _lowest(b, dt), dt, ()), inv], dt, inv.shape)
    r = b.rng.random()
    cast = r < 0.6
    # the bool graph input itself unsqueezed and cast (a third of the cast forms): the
    # fusion then retypes that graph input to int32 for the fused Attention
    m = _mask_input(b, bsz, seq, BOOL if r < 0.2 else (INT64 if cast else dt))
    u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, m, [1]), [2])
    if cast:
        u = b.op("Cast", [u], dt, u.shape, ("nonneg",), to=dt)
    inv = b.op("Sub", [const(b, 1.0, dt, ()), u], dt, u.shape)
    fill = _lowest(b, dt) if b.rng.random() < 0.95 else 100.0  # positive: must be refused
    return binary(b, "Mul", inv, const(b, fill, dt, ()), commute=b.rng.random() < 0.2)


def _distil_where(b: GraphBuilder, scores: Value) -> Value:
    """DistilBERT's mask: Where(Expand(Reshape(Equal(m, 0), (B, 1, 1, S))), lowest,
    scores), sometimes with a Cast to bool after the Expand."""
    bsz, heads, seq, _ = scores.shape
    m = _mask_input(b, bsz, seq, INT64)
    eq = b.op("Equal", [m, b.const(np.array(0, np.int64), "Equal")], BOOL, m.shape)
    r = b.op("Reshape", [eq, b.ints([bsz, 1, 1, seq], "Reshape")], BOOL, (bsz, 1, 1, seq))
    cond = b.op("Expand", [r, b.ints(list(scores.shape), "Expand")], BOOL, scores.shape)
    if b.rng.random() < 0.3:
        cond = b.op("Cast", [cond], BOOL, cond.shape, to=BOOL)
    fill = const(b, _lowest(b, scores.dtype), scores.dtype, ())
    return b.op("Where", [cond, fill, scores], scores.dtype, scores.shape)


def _where_bias(b: GraphBuilder, scores: Value) -> Value:
    """Where(Equal(Unsqueeze(Unsqueeze(m)), 0), lowest, scores) plus a position bias of the
    scores' shape (an Expand of a constant (1, N, S, S)): FusionAttention's fourth qk path,
    whose bias it passes on when shape inference gives both Add inputs one shape."""
    bsz, heads, seq, _ = scores.shape
    m = _mask_input(b, bsz, seq, INT64)
    u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, m, [1]), [2])
    cond = b.op("Equal", [u, b.const(np.array(0, np.int64), "Equal")], BOOL, u.shape)
    if b.rng.random() < 0.3:
        cond = b.op("Cast", [cond], BOOL, cond.shape, to=BOOL)
    fill = const(b, _lowest(b, scores.dtype), scores.dtype, ())
    masked = b.op("Where", [cond, fill, scores], scores.dtype, scores.shape)
    bias = b.op("Expand", [b.random_weight((1, heads, seq, seq), scores.dtype, "Expand"),
                           b.ints(list(scores.shape), "Expand")], scores.dtype, scores.shape)
    return b.op("Add", [masked, bias], scores.dtype, scores.shape)


def _causal(b: GraphBuilder, seq: int, dt: int) -> Value:
    """CLIP's causal mask: Expand(Unsqueeze(Unsqueeze(Where(Less(col, row), lowest, 0))))
    to (1, 1, S, S), the rows and columns Range outputs."""
    one, zero = (b.const(np.array(v, np.int64), "Range") for v in (1, 0))
    n = b.const(np.array(seq, np.int64), "Range")
    rng_ = b.op("Range", [zero, n, one], INT64, (seq,), ("nonneg",))
    col = shape_ops.unsqueeze(b, rng_, [0])
    row = shape_ops.unsqueeze(b, rng_, [1])
    less = b.op("Less", [row, col], BOOL, (seq, seq))
    w = b.op("Where", [less, const(b, _lowest(b, dt), dt, ()), const(b, 0.0, dt, ())], dt,
             (seq, seq))
    u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, w, [0]), [0])
    return b.op("Expand", [u, b.ints([1, 1, seq, seq], "Expand")], dt, (1, 1, seq, seq))


def _self_attention(b: GraphBuilder, root: Value, heads: int, head: int, w, form: str,
                    concat: bool | tuple[str, ...], einsum: bool = False) -> Value:
    """The attention core on ``root`` (B, S, N*H) in score form ``form`` (one of
    :data:`SCORE_FORMS`); returns the merged context (B, S, N*H') after its Transpose and
    Reshape, H' the value head size (H mostly, sometimes another); with ``einsum`` instead
    the context (B, S, N, H') projected to N*H by an Einsum with an (N, H', N*H) weight
    (ALBERT's export) plus a bias."""
    bsz, seq, hidden = root.shape
    dt = root.dtype
    q = _split(b, _dense(b, root, hidden, w), heads, head, [0, 2, 1, 3], concat)
    if b.rng.random() < 0.8 or form == "sdpa":
        k = _split(b, _dense(b, root, hidden, w), heads, head, [0, 2, 3, 1], concat)
    else:
        k0 = _split(b, _dense(b, root, hidden, w), heads, head, [0, 2, 1, 3], concat)
        k = b.op("Transpose", [k0], dt, (bsz, heads, head, seq), perm=[0, 1, 3, 2])
    # V's head size sometimes differs from Q's and K's (the fused Attention's qkv_hidden_sizes)
    vh = head if b.rng.random() < 0.85 else b.rng.choice([h for h in (2, 4, 8) if h != head])
    v = _split(b, _dense(b, root, heads * vh, w), heads, vh, [0, 2, 1, 3], concat)
    scale = math.sqrt(head)
    if form == "sdpa":
        factor = b.op("Sqrt", [const(b, 1 / scale, dt, ())], dt, ())
        q = b.op("Mul", [q, factor], dt, q.shape)
        k = b.op("Mul", [k, factor], dt, k.shape)
    if form in ("distil", "where-bias"):
        q = b.op("Div", [q, const(b, scale, dt, ())], dt, q.shape)
    qk = b.op("MatMul", [q, k], dt, (bsz, heads, seq, seq))
    scores = qk
    if form.startswith("div"):
        scores = b.op("Div", [qk, const(b, scale, dt, ())], dt, qk.shape)
    elif form.startswith("mul") or form == "causal":
        scores = b.op("Mul", [qk, const(b, 1 / scale, dt, ())], dt, qk.shape)
    if form.endswith("-mask") or form == "sdpa":
        # the mask first or second: with Mul-scaled scores, FusionAttention's mask path finds
        # the first Mul input of the Add
        # a Where mask with Mul-scaled scores: a Mul mask hides the scale's Mul (and the
        # other way round) from the first-Mul-parent searches of the qk and mask paths
        where = form == "sdpa" or (form == "mul-mask" and b.rng.random() < 0.7)
        mask = _additive_mask(b, bsz, seq, dt, where)
        scores = b.op("Add", [scores, mask] if b.rng.random() < 0.5 else [mask, scores], dt,
                      scores.shape)
    elif form == "distil":
        scores = _distil_where(b, scores)
    elif form == "where-bias":
        scores = _where_bias(b, scores)
    elif form == "causal":
        scores = b.op("Add", [scores, _causal(b, seq, dt)], dt, scores.shape)
    p = tap(b, b.op("Softmax", [scores], dt, scores.shape, ("bounded", "nonneg"),
                    axis=-1 if b.opset >= 13 else 3), 0.03)
    ctx = b.op("MatMul", [p, v], dt, (bsz, heads, seq, vh))
    t = b.op("Transpose", [ctx], dt, (bsz, seq, heads, vh), perm=[0, 2, 1, 3])
    if einsum:
        e = b.op("Einsum", [t, w((heads, vh, hidden), dt, "Einsum")], dt, (bsz, seq, hidden),
                 equation="bfnd,ndh->bfh")
        return binary(b, "Add", e, w((hidden,), dt, "Add"))
    return b.op("Reshape", [t, _merge_shape(b, t, bool(concat))], dt, (bsz, seq, heads * vh))


def attention_forms(b: GraphBuilder, x: Value) -> Value:
    """Self-attention on a projection of ``x`` (B, S, E) to N*H in one score form of
    :data:`SCORE_FORMS`, post-norm (output projection + root, then a normalization: what
    FusionAttention starts from) or pre-norm (the stream r normalized into the projections,
    r + output projection normalized after: what FusionAttentionClip starts from once the
    skip fusion made that a SkipLayerNormalization)."""
    return _attention_forms(b, x, SCORE_FORMS, 0.45, 0.5, BERT_SHAPES)


#: the head-shape forms drawn under bert (the Div form becomes [0, 0, N, -1], from which
#: FusionAttention reads no head size).
BERT_SHAPES = ("const", "const", "minus1", "div")


def attention_sdpa(b: GraphBuilder, x: Value) -> Value:
    """:func:`attention_forms` in PyTorch SDPA's forms: Sqrt factors on Q and K, or scores
    scaled by Mul, with the Where mask."""
    return _attention_forms(b, x, ("sdpa", "mul-mask"), 0.45, 0.5, BERT_SHAPES)


def attention_where(b: GraphBuilder, x: Value) -> Value:
    """:func:`attention_forms` with Q divided before Q.K^T and the mask applied by Where
    (DistilBERT's form, or with a position bias after the Where)."""
    return _attention_forms(b, x, ("distil", "where-bias"), 0.45, 0.5, BERT_SHAPES)


def attention_albert(b: GraphBuilder, x: Value) -> Value:
    """:func:`attention_forms` post-norm with ALBERT's Einsum output projection (from
    opset 12; below, the MatMul projection)."""
    return _attention_forms(b, x, ("div-mask", "div", "sdpa"), 0.45, 1.0, BERT_SHAPES,
                            einsum_p=1.0)


#: the head-shape forms drawn under clip: FusionAttentionClip reads N and H from a Concat
#: that fusion_reshape.py leaves alone (the -1 form), rarely from one it makes constant.
CLIP_SHAPES = ("minus1", "minus1", "minus1", "const")
#: the score forms FusionAttentionClip matches (unscaled, scaled after Q.K^T, causal).
CLIP_FORMS = ("plain", "mul", "mul", "causal", "causal", "mul-mask")


def clip_attention(b: GraphBuilder, x: Value) -> Value:
    """:func:`attention_forms` in CLIP's layout: pre-norm mostly, the head split's shape a
    Concat (FusionAttentionClip reads the head count from it), the score forms of
    :data:`CLIP_FORMS`."""
    return _attention_forms(b, x, CLIP_FORMS, 0.9, 0.15, CLIP_SHAPES, 1.0)


def clip_causal(b: GraphBuilder, x: Value) -> Value:
    """:func:`clip_attention` with CLIP's causal mask (its text encoder)."""
    return _attention_forms(b, x, ("causal",), 0.9, 0.15, CLIP_SHAPES, 1.0)


def _attention_forms(b: GraphBuilder, x: Value, forms: tuple[str, ...], concat_p: float,
                     post_p: float, kinds: tuple[str, ...] = ("const", "minus1", "div"),
                     stream_first: float = 0.2, einsum_p: float = 0.15) -> Value:
    """The body of :func:`attention_forms`: a score form drawn from ``forms``, Concat head
    shapes (of ``kinds``, :func:`_shape_of`) with probability ``concat_p``, post-norm with
    probability ``post_p``, a pre-norm residual Add with the stream first with probability
    ``stream_first``, a post-norm Einsum output projection with probability ``einsum_p``."""
    x = float_view(b, x, (FLOAT, FLOAT, FLOAT16))
    w = _weigher(b)
    heads, head = _heads(b)
    form = b.rng.choice(forms)
    concat = kinds if b.rng.random() < concat_p else False
    stream = _dense(b, x, heads * head, w)
    if b.rng.random() < post_p:  # post-norm
        root = _norm(b, stream, w)
        if b.opset >= 12 and b.rng.random() < einsum_p:  # ALBERT: Einsum output projection
            out = _self_attention(b, root, heads, head, w, form, concat, einsum=True)
            return _norm(b, b.op("Add", [root, out], out.dtype, out.shape), w)
        ctx = _self_attention(b, root, heads, head, w, form, concat)
        out = tap(b, _dense(b, ctx, heads * head, w), 0.03)
        return _norm(b, binary(b, "Add", out, root, commute=b.rng.random() < 0.2), w)
    ln = _norm(b, stream, w)
    ctx = _self_attention(b, ln, heads, head, w, form, concat)
    out = _dense(b, ctx, heads * head, w)
    # the stream first is CLIP's order; FusionAttention takes the first Add parent of the
    # residual Add for the output projection's, so BERT's pre-norm has it second mostly
    first = b.rng.random() < stream_first
    return _norm(b, b.op("Add", [stream, out] if first else [out, stream], out.dtype,
                         out.shape), w)




# -- GPT-2 ------------------------------------------------------------------------------------
def _squeezed_dim(b: GraphBuilder, shape: Value, start: int) -> Value:
    """Squeeze(Slice(shape, [start], [start + 1])): one dim of a Shape output as a scalar
    (GPT-2's export)."""
    s = b.op("Slice", [shape, b.ints([start], "Slice"), b.ints([start + 1 if start != -1 else
                                                              2**62], "Slice"),
                       b.ints([0], "Slice")], INT64, (1,), ("nonneg",))
    form = shape_ops.axes_operand(b, "Squeeze", [0], 13)
    return b.op("Squeeze", [s, *form["inputs"]], INT64, (), ("nonneg",), **form["attrs"])


def _gpt2_causal(b: GraphBuilder, div: Value, total: int, float_block: bool = False) -> Value:
    """GPT-2's causal bias: a constant (1, 1, M, M) lower-triangular (rarely all ones: not
    unidirectional, or not triangular: refused), bool or float, and its row block
    Slice(Slice(bias, [T - S], [T], axis 2), [0], [T], axis 3) of the scores' query length
    S and key length T read from Shape(div), cast to bool (always for a float bias); with
    ``float_block`` the float block itself."""
    m = total + b.rng.randint(0, 2)
    r = b.rng.random()
    kind = np.float32 if float_block else b.rng.choice([np.bool_, np.float32])
    tri = np.tril(np.ones((m, m), kind)) if r < 0.85 else (
        np.ones((m, m), kind) if r < 0.93 else np.triu(np.ones((m, m), kind)))
    bias = b.const(tri.reshape(1, 1, m, m), "Slice")
    shape = b.op("Shape", [div], INT64, (4,), ("nonneg",))
    t = _squeezed_dim(b, shape, -1)
    s = _squeezed_dim(b, shape, -2)
    start = shape_ops.unsqueeze(b, b.op("Sub", [t, s], INT64, (), ("nonneg",)), [0])
    end = shape_ops.unsqueeze(b, t, [0])
    seq = div.shape[2]
    rows = b.op("Slice", [bias, start, end, b.ints([2], "Slice")], bias.dtype, (1, 1, seq, m))
    block = b.op("Slice", [rows, b.ints([0], "Slice"), end, b.ints([3], "Slice")], bias.dtype,
                 (1, 1, seq, total))
    if float_block or (block.dtype == BOOL and b.rng.random() < 0.7):
        return block
    return b.op("Cast", [block], BOOL, block.shape, to=BOOL)


def _gpt2_fc(b: GraphBuilder, ln: Value, n: int, w, gemm: bool) -> Value:
    """GPT-2's Conv1D: Reshape to 2-D, Gemm with a (K, n) weight and (n,) bias, Reshape
    back; or MatMul plus bias Add."""
    bsz, seq, k = ln.shape
    if not gemm:
        return _dense(b, ln, n, w)
    flat = b.op("Reshape", [ln, b.ints([-1, k], "Reshape")], ln.dtype, (bsz * seq, k))
    inputs = [flat, w((k, n), ln.dtype, "Gemm")]
    if b.rng.random() < 0.95:  # without C, fusion_gpt_attention.py indexes a missing input
        inputs.append(w((n,), ln.dtype, "Gemm"))
    g = b.op("Gemm", inputs, ln.dtype, (bsz * seq, n))
    return b.op("Reshape", [g, b.ints([bsz, seq, n], "Reshape")], ln.dtype, (bsz, seq, n))


def gpt2_megatron(b: GraphBuilder, x: Value) -> Value:
    """:func:`gpt2_attention` in Megatron's form: MatMul + Add projections, the past halves
    by Split and Squeeze, K concatenated in (B, N, T, H), Q and K each divided by
    H^(1/4) before Q.K^T, the causal bias by Mul and Sub, Softmax over axis 3
    (fusion_gpt_attention_megatron.py)."""
    return gpt2_attention(b, x, gemm=False, megatron=True)


def gpt2_no_past(b: GraphBuilder, x: Value) -> Value:
    """:func:`gpt2_attention` without past state, the Gemm projections and no attention
    mask (fusion_gpt_attention_no_past.py, which the gpt2 class runs for graphs with one
    input or one output: the draw adds no graph input)."""
    return gpt2_attention(b, x, gemm=True, past=False)


def gpt2_attention(b: GraphBuilder, x: Value, gemm: bool | None = None,
                   past: bool = True, megatron: bool = False) -> Value:
    """GPT-2 self-attention with past state on a projection of ``x`` (B, S, E) to N*H
    (fusion_gpt_attention.py, gpt2 model type): LayerNormalization, the fused QKV projection
    (Gemm between Reshapes, or MatMul + Add), Split into Q, K, V split into heads, a past
    graph input (2, B, N, P, H) whose halves come by Gather (K transposed) or by Split and
    Squeeze and are concatenated before K and V, a present graph output
    Concat(Unsqueeze(K), Unsqueeze(V)), scores divided by sqrt(H), the causal bias applied
    by Where or by the older Mul and Sub (and, sometimes, an additive 0/1 attention mask,
    reshaped first or not), the output projection
    (Gemm between Reshapes, or with MatMul + Add projections MatMul + Add and the residual
    first: fusion_gpt_attention_megatron.py's form) and the residual Add into the next
    LayerNormalization. float32
    (Gemm has no float16 CPU kernel here)."""
    x = float_view(b, x, (FLOAT,))
    w = _weigher(b)
    heads, head = _heads(b)
    hidden = heads * head
    bsz, seq = x.shape[0], x.shape[1]
    dt = FLOAT
    stream = _dense(b, x, hidden, w)
    ln = _norm(b, stream, w)
    gemm = b.rng.random() < 0.7 if gemm is None else gemm
    fc = _gpt2_fc(b, ln, 3 * hidden, w, gemm)
    q, k, v = shape_ops.split(b, fc, 2, [hidden] * 3)
    def heads_of(t: Value, perm: list[int]) -> Value:
        r = b.op("Reshape", [t, b.ints([0, 0, heads, head], "Reshape")], dt,
                 (bsz, seq, heads, head))
        return b.op("Transpose", [r], dt, tuple(r.shape[i] for i in perm), perm=perm)

    if not past:  # no past state: Q, K, V split straight into heads
        total = seq
        qh = heads_of(q, [0, 2, 1, 3])
        kk = heads_of(k, [0, 2, 3, 1])
        cv = heads_of(v, [0, 2, 1, 3])
    else:
        past_len = b.rng.randint(1, 3)
        state = b.graph_input(dt, (2, bsz, heads, past_len, head))
        b.pool.remove(state)

        if not megatron and b.rng.random() < 0.6:  # pattern 1: Gather
            pk = b.op("Gather", [state, b.const(np.array(0, np.int64), "Gather")], dt,
                      (bsz, heads, past_len, head), axis=0)
            pv = b.op("Gather", [state, b.const(np.array(1, np.int64), "Gather")], dt, pk.shape,
                      axis=0)
        else:  # pattern 2: Split and Squeeze
            # Split-18's num_outputs (no split input) is rare: fusion_gpt_attention.py asserts
            # that the input exists and ends the optimization
            if b.opset >= 18 and b.rng.random() < 0.15:
                names = b.node("Split", [state.name], n_out=2, axis=0, num_outputs=2)
            elif b.opset >= 13:
                names = b.node("Split", [state.name, b.ints([1, 1], "Split").name], n_out=2, axis=0)
            else:
                names = b.node("Split", [state.name], n_out=2, axis=0, split=[1, 1])
            halves = [Value(n, dt, (1, bsz, heads, past_len, head)) for n in names]
            pk, pv = (b.op("Squeeze", [h, *shape_ops.axes_operand(b, "Squeeze", [0], 13)["inputs"]],
                           dt, (bsz, heads, past_len, head),
                           **shape_ops.axes_operand(b, "Squeeze", [0], 13)["attrs"])
                      for h in halves)
        total = past_len + seq
        qh = heads_of(q, [0, 2, 1, 3])
        if not megatron and b.rng.random() < 0.7:
            kh = heads_of(k, [0, 2, 3, 1])
            pkt = b.op("Transpose", [pk], dt, (bsz, heads, head, past_len), perm=[0, 1, 3, 2])
            ck = b.op("Concat", [pkt, kh], dt, (bsz, heads, head, total), axis=-1)
            kk = ck
            present_k = b.op("Transpose", [ck], dt, (bsz, heads, total, head), perm=[0, 1, 3, 2])
        else:  # K concatenated in (B, N, T, H), then transposed
            kh = heads_of(k, [0, 2, 1, 3])
            ck = b.op("Concat", [pk, kh], dt, (bsz, heads, total, head), axis=-2)
            present_k = ck
            kk = b.op("Transpose", [ck], dt, (bsz, heads, head, total), perm=[0, 1, 3, 2])
        cv = b.op("Concat", [pv, heads_of(v, [0, 2, 1, 3])], dt, (bsz, heads, total, head),
                  axis=-2)
        uk = shape_ops.unsqueeze(b, present_k, [0])
        uv = shape_ops.unsqueeze(b, cv, [0])
        present = b.op("Concat", [uk, uv], dt, (2, bsz, heads, total, head), axis=0)
        b.graph_output(present)
        b.pool.remove(present)
    if megatron:  # Q and K each divided by H^(1/4), no Div after Q.K^T
        root4 = const(b, math.sqrt(math.sqrt(head)), dt, ())
        qh = b.op("Div", [qh, root4], dt, qh.shape)
        kk = b.op("Div", [kk, root4], dt, kk.shape)
    qk = b.op("MatMul", [qh, kk], dt, (bsz, heads, seq, total))
    div = qk if megatron else b.op("Div", [qk, const(b, math.sqrt(head), dt, ())], dt,
                                   qk.shape)
    if megatron or b.rng.random() < 0.3:  # the older form: div * block - 10000 * (1 - block)
        block = _gpt2_causal(b, div, total, float_block=True)
        kept = b.op("Mul", [div, block], dt, div.shape)
        inv = b.op("Sub", [const(b, 1.0, dt, ()), block], dt, block.shape)
        scores = b.op("Sub", [kept, b.op("Mul", [inv, const(b, 10000.0, dt, ())], dt,
                                         block.shape)], dt, div.shape)
    else:
        scores = b.op("Where", [_gpt2_causal(b, div, total), div,
                                const(b, -10000.0, dt, ())], dt, div.shape)
    if past and not megatron and b.rng.random() < 0.4:
        m = _mask_input(b, bsz, total, b.rng.choice([INT64, dt]))
        if b.rng.random() < 0.5:  # the mask input reshaped to (B, T) first
            m = b.op("Reshape", [m, b.ints([bsz, -1], "Reshape")], m.dtype, m.shape, m.props)
        u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, m, [1]), [2])
        if u.dtype != dt:
            u = b.op("Cast", [u], dt, u.shape, ("nonneg",), to=dt)
        inv = b.op("Sub", [const(b, 1.0, dt, ()), u], dt, u.shape)
        scores = binary(b, "Add", scores, binary(b, "Mul", inv, const(b, -10000.0, dt, ())))
    p = b.op("Softmax", [scores], dt, scores.shape, ("bounded", "nonneg"),
             axis=-1 if b.opset >= 13 and not megatron else 3)
    ctx = b.op("MatMul", [p, cv], dt, (bsz, heads, seq, head))
    t = b.op("Transpose", [ctx], dt, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    merged = b.op("Reshape", [t, b.ints([0, 0, hidden], "Reshape")], dt, (bsz, seq, hidden))
    # MatMul + Add projections with the residual first: Megatron's form
    out = _gpt2_fc(b, merged, hidden, w, gemm or b.rng.random() < 0.3)
    first = b.rng.random() < (0.8 if gemm else 0.2)
    res = b.op("Add", [out, stream] if first else [stream, out], dt, out.shape)
    return _norm(b, res, w)


# -- T5 ---------------------------------------------------------------------------------------
def _t5_buckets(b: GraphBuilder, seq: int) -> tuple[Value, Value]:
    """T5's bidirectional relative-position buckets of a (S, S) grid (32 buckets, max
    distance 128, as Hugging Face's ``_relative_position_bucket`` exports): rel =
    Unsqueeze(Range, 0) - Unsqueeze(Range, 1); n = |rel|; large = 8 + Cast(Log(Cast(n) / 8)
    / log(128 / 8) * 8), capped by Min with ConstantOfShape(Shape(large), 15); bucket =
    (rel > 0) * 16 + Where(n < 8, n, large). Returns (bucket, the Range)."""
    one, zero = (b.const(np.array(v, np.int64), "Range") for v in (1, 0))
    rng_ = b.op("Range", [zero, b.const(np.array(seq, np.int64), "Range"), one], INT64,
                (seq,), ("nonneg",))
    rel = b.op("Sub", [shape_ops.unsqueeze(b, rng_, [0]), shape_ops.unsqueeze(b, rng_, [1])],
               INT64, (seq, seq))
    n = b.op("Abs", [rel], INT64, (seq, seq), ("nonneg",))
    nf = b.op("Cast", [n], FLOAT, n.shape, ("nonneg",), to=FLOAT)
    log_max = math.log(128 / 8) if b.rng.random() < 0.9 else math.log(64 / 8)
    lg = b.op("Log", [b.op("Div", [nf, const(b, 8.0, FLOAT, ())], FLOAT, n.shape)], FLOAT,
              n.shape)
    scaled = b.op("Mul", [b.op("Div", [lg, const(b, log_max, FLOAT, ())], FLOAT, n.shape),
                          const(b, 8.0, FLOAT, ())], FLOAT, n.shape)
    large = b.op("Add", [b.op("Cast", [scaled], INT64, n.shape, to=INT64),
                         b.const(np.array(8, np.int64), "Add")], INT64, n.shape)
    cap = b.op("ConstantOfShape", [b.op("Shape", [large], INT64, (2,), ("nonneg",))], INT64,
               n.shape, ("nonneg",), value=_int_tensor(15))
    large = b.op("Min", [large, cap], INT64, n.shape)
    small = b.op("Less", [n, b.const(np.array(8, np.int64), "Less")], BOOL, n.shape)
    where = b.op("Where", [small, n, large], INT64, n.shape)
    if b.rng.random() < 0.5:
        return where, rng_
    side = b.op("Cast", [b.op("Greater", [rel, b.const(np.array(0, np.int64), "Greater")],
                              BOOL, n.shape)], INT64, n.shape, ("nonneg",), to=INT64)
    rb = b.op("Mul", [side, b.const(np.array(16, np.int64), "Mul")], INT64, n.shape)
    return b.op("Add", [rb, where], INT64, n.shape), rng_


def _int_tensor(value: int):
    """A one-element int64 TensorProto (ConstantOfShape's value)."""
    from generators.builder import tensor_proto
    return tensor_proto(np.array([value], np.int64), "value")


def _t5_mask(b: GraphBuilder, m: Value, dt: int, cast: bool = True) -> Value:
    """The T5 export's additive mask of a 0/1 mask ``m`` (B, T):
    ``(1 - m[:, None, None, :]) * -10000`` (B, 1, 1, T) of type ``dt``, ``m`` cast to ``dt``
    first unless ``cast`` is False (it is of that type already)."""
    um = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, m, [1]), [2])
    cm = b.op("Cast", [um], dt, um.shape, ("nonneg",), to=dt) if cast else um
    return b.op("Mul", [b.op("Sub", [const(b, 1.0, dt, ()), cm], dt, cm.shape),
                        const(b, -10000.0, dt, ())], dt, cm.shape)


def _t5_output(b: GraphBuilder, qk: Value, bias: Value, v: Value, source: Value,
               w: Weigher) -> Value:
    """T5 attention's output: ``Softmax(qk + bias) @ v`` with ``qk`` (B, N, S, T) and ``v``
    (B, N, T, H), heads merged by a Reshape to (B, S, N*H) whose shape is
    ``Concat(Shape(source)[0], -1, N*H)`` (``source`` the (B, S, E) value the export reads
    the batch size from), then an unbiased dense projection (B, S, N*H)."""
    dt = qk.dtype
    bsz, heads, seq, _ = qk.shape
    head = v.shape[3]
    hidden = heads * head
    p = b.op("Softmax", [b.op("Add", [qk, bias], dt, qk.shape)], dt, qk.shape,
             ("bounded", "nonneg"), axis=-1 if b.opset >= 13 else 3)
    ctx = b.op("MatMul", [p, v], dt, (bsz, heads, seq, head))
    t = b.op("Transpose", [ctx], dt, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    shape = b.op("Shape", [source], INT64, (3,), ("nonneg",))
    spec = b.op("Concat", [shape_ops.unsqueeze(b, _dim(b, shape, 0), [0]),
                           b.ints([-1], "Concat"), b.ints([hidden], "Concat")], INT64, (3,),
                axis=0)
    merged = b.op("Reshape", [t, spec], dt, (bsz, seq, hidden))
    return _dense(b, merged, hidden, w, bias=False)


def t5_sliced_mask(b: GraphBuilder, x: Value) -> Value:
    """:func:`t5_attention` with the mask of the SD3 and Flux exports: Slice((1 - m) *
    -10000) on the key axis, m float and unsqueezed twice (FusionT5Attention then finds the
    position bias behind a Slice and goes on to fuse)."""
    return t5_attention(b, x, sliced=True)


def t5_attention(b: GraphBuilder, x: Value, sliced: bool = False) -> Value:
    """T5 encoder self-attention on a projection of ``x`` (B, S, E) to N*H (onnx_model_t5.py,
    t5 model type): an RMS norm (T5LayerNorm: x * 1/sqrt(mean(x^2) + eps) * gamma), Q, K, V
    MatMuls without bias or scale, the scores plus the relative position bias (a (32, N)
    table gathered at :func:`_t5_buckets`, transposed, unsqueezed and sliced, the form
    FusionRelativePositionBiasBlock fuses) plus the additive mask (1 - m) * -10000, the
    merge Reshape's shape a Concat of Shape-Gather-Unsqueeze, the output projection and the
    residual Add. float32 (the bias table's fusion writes float)."""
    x = float_view(b, x, (FLOAT,))
    w = _weigher(b)
    heads, head = _heads(b)
    hidden = heads * head
    bsz, seq = x.shape[0], x.shape[1]
    dt = FLOAT
    stream = _dense(b, x, hidden, w, bias=False)
    sq = b.op("Pow", [stream, const(b, 2.0, dt, ())], dt, stream.shape, ("nonneg",))
    var = shape_ops.unsqueeze(b, b.op("ReduceMean", [sq], dt, (bsz, seq), keepdims=0,
                                      axes=[-1]), [-1]) if b.opset < 18 else \
        b.op("ReduceMean", [sq, b.ints([-1], "ReduceMean")], dt, (bsz, seq, 1), keepdims=1)
    rs = b.op("Sqrt", [b.op("Add", [var, const(b, 1e-6, dt, ())], dt, var.shape)], dt,
              var.shape, ("nonneg",))
    inv = b.op("Div", [const(b, 1.0, dt, ()), rs], dt, rs.shape)
    normed = b.op("Mul", [w((hidden,), dt, "Mul", positive=True),
                          b.op("Mul", [stream, inv], dt, stream.shape)], dt, stream.shape)
    q = _split(b, _dense(b, normed, hidden, w, bias=False), heads, head, [0, 2, 1, 3], False)
    k = _split(b, _dense(b, normed, hidden, w, bias=False), heads, head, [0, 2, 3, 1], False)
    v = _split(b, _dense(b, normed, hidden, w, bias=False), heads, head, [0, 2, 1, 3], False)
    qk = b.op("MatMul", [q, k], dt, (bsz, heads, seq, seq))
    bucket, _ = _t5_buckets(b, seq)
    table = b.random_weight((32, heads), dt, "Gather")
    g = b.op("Gather", [table, bucket], dt, (seq, seq, heads))
    tb = b.op("Transpose", [g], dt, (heads, seq, seq), perm=[2, 0, 1])
    ub = shape_ops.unsqueeze(b, tb, [0])
    sl = b.op("Slice", [ub, b.ints([0], "Slice"), b.ints([seq], "Slice"), b.ints([2], "Slice")],
              dt, (1, heads, seq, seq))
    ext = _t5_mask(b, _mask_input(b, bsz, seq, dt if sliced else INT64), dt, cast=not sliced)
    if sliced:
        ext = b.op("Slice", [ext, b.ints([0], "Slice"), b.ints([seq], "Slice"),
                             b.ints([3], "Slice")], dt, ext.shape)
    bias = b.op("Add", [sl, ext], dt, (bsz, heads, seq, seq))
    out = _t5_output(b, qk, bias, v, normed, w)
    return b.op("Add", [stream, out], dt, out.shape)




def _named_input(b: GraphBuilder, stem: str, dtype: int, shape: tuple[int, ...]) -> Value:
    """A graph input whose name contains ``stem`` (T5's decoder fusion reads the past and
    present tensors by their export names), kept out of the pool."""
    name = f"{stem}_{b.namer.weight(stem).replace('/', '_').replace(':', '_')}"
    b.inputs.append(value_info(name, dtype, shape))
    b.input_names.add(name)
    return Value(name, dtype, shape)


def _named(b: GraphBuilder, stem: str, op: str, inputs: list[Value], dtype: int,
           shape: tuple[int, ...], **attrs: object) -> Value:
    """An ``op`` node whose output name contains ``stem``, made a graph output."""
    name = f"{stem}_{b.namer.weight(stem).replace('/', '_').replace(':', '_')}"
    b.node(op, [v.name for v in inputs], outputs=[name], **attrs)
    v = Value(name, dtype, shape)
    b.graph_output(v)
    return v


def t5_decoder(b: GraphBuilder, x: Value) -> Value:
    """T5 decoder self-attention with past state on a projection of ``x`` (B, S, E) to N*H
    (FusionT5Attention.fuse_t5_decoder, t5 model type): unbiased Q, K, V MatMuls split
    into heads; K and V concatenated after past key and value graph inputs named
    ``past_key_self_*`` and ``past_value_self_*`` into present graph outputs named
    ``present_key_self_*`` and ``present_value_self_*`` (the fusion finds them by those
    names), K either in (B, N, T, H) with the past or in (B, T, N, H) after transposing
    the past; no scale; the scores plus a sliced constant position bias plus the
    additive mask; the merge Reshape's shape a Concat of Shape(hidden) dims. float32."""
    x = float_view(b, x, (FLOAT,))
    w = _weigher(b)
    heads, head = _heads(b)
    hidden = heads * head
    bsz, seq = x.shape[0], x.shape[1]
    dt = FLOAT
    hid = _dense(b, x, hidden, w, bias=False)
    past_len = b.rng.randint(1, 2)
    total = past_len + seq

    def proj() -> Value:
        m = _dense(b, hid, hidden, w, bias=False)
        return b.op("Reshape", [m, b.ints([0, 0, heads, head], "Reshape")], dt,
                    (bsz, seq, heads, head))

    q = b.op("Transpose", [proj()], dt, (bsz, heads, seq, head), perm=[0, 2, 1, 3])
    past_k = _named_input(b, "past_key_self", dt, (bsz, heads, past_len, head))
    past_v = _named_input(b, "past_value_self", dt, (bsz, heads, past_len, head))
    if b.rng.random() < 0.6:  # K in (B, N, T, H)
        kh = b.op("Transpose", [proj()], dt, (bsz, heads, seq, head), perm=[0, 2, 1, 3])
        ck = _named(b, "present_key_self", "Concat", [past_k, kh], dt,
                    (bsz, heads, total, head), axis=2)
        kt = b.op("Transpose", [ck], dt, (bsz, heads, head, total), perm=[0, 1, 3, 2])
    else:  # K in (B, T, N, H): the past transposed to it, the present transposed back
        pk = b.op("Transpose", [past_k], dt, (bsz, past_len, heads, head), perm=[0, 2, 1, 3])
        ck = b.op("Concat", [pk, proj()], dt, (bsz, total, heads, head), axis=1)
        _named(b, "present_key_self", "Transpose", [ck], dt, (bsz, heads, total, head),
               perm=[0, 2, 1, 3])
        kt = b.op("Transpose", [ck], dt, (bsz, heads, head, total), perm=[0, 2, 3, 1])
    vh = b.op("Transpose", [proj()], dt, (bsz, heads, seq, head), perm=[0, 2, 1, 3])
    cv = _named(b, "present_value_self", "Concat", [past_v, vh], dt,
                (bsz, heads, total, head), axis=2)
    qk = b.op("MatMul", [q, kt], dt, (bsz, heads, seq, total))
    table = b.random_weight((1, heads, total, total), dt, "Slice")
    rows = b.op("Slice", [table, b.ints([past_len], "Slice"), b.ints([total], "Slice"),
                          b.ints([2], "Slice")], dt, (1, heads, seq, total))
    ext = _t5_mask(b, _mask_input(b, bsz, total, INT64), dt)
    bias = b.op("Add", [rows, ext], dt, (bsz, heads, seq, total))
    return b.op("Add", [hid, _t5_output(b, qk, bias, cv, hid, w)], dt, hid.shape)


def t5_cross(b: GraphBuilder, x: Value) -> Value:
    """T5 decoder cross-attention with cached encoder key and value (the static-kv branch of
    FusionT5Attention.fuse_t5_decoder, t5 model type): Q an unbiased MatMul of a projection
    of ``x`` (B, S, E) split into heads; K and V the graph inputs ``past_key_cross_*`` and
    ``past_value_cross_*`` (B, N, T, H) (the fusion finds them by those names), K
    transposed; no scale; the scores plus zeros plus the additive mask (1 - m) * -10000 of
    a 0/1 (B, T) mask; the merge Reshape's shape a Concat of Shape(hidden) dims. float32."""
    x = float_view(b, x, (FLOAT,))
    w = _weigher(b)
    heads, head = _heads(b)
    hidden = heads * head
    bsz, seq = x.shape[0], x.shape[1]
    dt = FLOAT
    hid = _dense(b, x, hidden, w, bias=False)
    enc = b.rng.randint(2, 4)
    m = _dense(b, hid, hidden, w, bias=False)
    q = b.op("Transpose", [b.op("Reshape", [m, b.ints([0, 0, heads, head], "Reshape")], dt,
                                (bsz, seq, heads, head))], dt, (bsz, heads, seq, head),
             perm=[0, 2, 1, 3])
    past_k = _named_input(b, "past_key_cross", dt, (bsz, heads, enc, head))
    past_v = _named_input(b, "past_value_cross", dt, (bsz, heads, enc, head))
    kt = b.op("Transpose", [past_k], dt, (bsz, heads, head, enc), perm=[0, 1, 3, 2])
    qk = b.op("MatMul", [q, kt], dt, (bsz, heads, seq, enc))
    ext = _t5_mask(b, _mask_input(b, bsz, enc, INT64), dt)
    zeros = b.const(np.zeros((1, heads, seq, enc), np.float32), "Add")
    bias = b.op("Add", [zeros, ext], dt, (bsz, heads, seq, enc))
    return b.op("Add", [hid, _t5_output(b, qk, bias, past_v, hid, w)], dt, hid.shape)

# -- BART -------------------------------------------------------------------------------------
def _bias_first(b: GraphBuilder, x: Value, n: int, w) -> Value:
    """Add(bias, MatMul(x, W)): the projection with the bias as the first Add input (BART's
    export; fusion_bart_attention.py reads the MatMul at input 1)."""
    m = b.op("MatMul", [x, w((x.shape[-1], n), x.dtype, "MatMul")], x.dtype,
             (*x.shape[:-1], n))
    return b.op("Add", [w((n,), x.dtype, "Add"), m], x.dtype, m.shape)


def bart_encoder(b: GraphBuilder, x: Value) -> Value:
    """:func:`bart_attention`'s encoder self-attention."""
    return bart_attention(b, x, "encoder")


def bart_decoder(b: GraphBuilder, x: Value) -> Value:
    """:func:`bart_attention`'s causal decoder self-attention."""
    return bart_attention(b, x, "decoder")


def bart_cross(b: GraphBuilder, x: Value) -> Value:
    """:func:`bart_attention`'s decoder cross-attention."""
    return bart_attention(b, x, "cross")


def bart_attention(b: GraphBuilder, x: Value, kind: str) -> Value:
    """BART attention on a projection of ``x`` (B, S, E) to N*H (fusion_bart_attention.py,
    bart model type), ``kind`` one of: encoder self-attention (no mask), decoder self-attention (the
    scores plus Where(causal, lowest, 0) of a (S, S) lower-triangular constant), decoder
    cross-attention (K and V projected from a second hidden-state input, no mask). Q is
    scaled by 1/sqrt(H) before its head split (Hugging Face) or after it (OpenAI's form), K
    has no bias, V and Q their bias first; the output projection's Add and the residual
    Add end in a normalization. float32 or float16."""
    x = float_view(b, x, (FLOAT, FLOAT, FLOAT16))
    w = _weigher(b)
    heads, head = _heads(b)
    hidden = heads * head
    bsz, seq = x.shape[0], x.shape[1]
    dt = x.dtype
    root = _norm(b, _dense(b, x, hidden, w), w)
    kv_root = root
    if kind == "cross":
        enc = b.graph_input(dt, (bsz, b.rng.randint(2, 5), hidden))
        b.pool.remove(enc)
        kv_root = enc
    kv_seq = kv_root.shape[1]
    scale = const(b, 1 / math.sqrt(head), dt, ())
    q = _bias_first(b, root, hidden, w)
    hf = b.rng.random() < 0.6
    if hf:
        q = b.op("Mul", [q, scale], dt, q.shape)
    # the head shapes sometimes Concats of Shape(root) dims or of -1, N, H constants, which
    # FusionBartReshape (onnx_model_bart.py) turns into constant shapes first
    concat = b.rng.choice([False, False, ("const",), ("minus1",)])
    qh = _split(b, q, heads, head, [0, 2, 1, 3], concat, root)
    if not hf:
        qh = b.op("Mul", [qh, scale], dt, qh.shape)
    km = b.op("MatMul", [kv_root, w((hidden, hidden), dt, "MatMul")], dt,
              (bsz, kv_seq, hidden))
    kh = _split(b, km, heads, head, [0, 2, 3, 1], concat, kv_root)
    vh = _split(b, _bias_first(b, kv_root, hidden, w), heads, head, [0, 2, 1, 3], concat,
                kv_root)
    scores = b.op("MatMul", [qh, kh], dt, (bsz, heads, seq, kv_seq))
    if kind == "decoder":
        tri = np.tril(np.ones((seq, seq), np.bool_))
        cond = b.const(tri, "Where")
        causal = b.op("Where", [cond, const(b, 0.0, dt, ()), const(b, _lowest(b, dt), dt, ())],
                      dt, (seq, seq))
        scores = b.op("Add", [scores, causal], dt, scores.shape)
    p = b.op("Softmax", [scores], dt, scores.shape, ("bounded", "nonneg"),
             axis=-1 if b.opset >= 13 else 3)
    ctx = b.op("MatMul", [p, vh], dt, (bsz, heads, seq, head))
    t = b.op("Transpose", [ctx], dt, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    merged = b.op("Reshape", [t, b.ints([0, 0, hidden], "Reshape")], dt, (bsz, seq, hidden))
    out = _bias_first(b, merged, hidden, w)
    return _norm(b, b.op("Add", [root, out], dt, out.shape), w)


MOTIFS = (
    ort_motif("tb-attention-forms", ("bert:enable_attention",), attention_forms,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax", "Where")),
    ort_motif("tb-attention-sdpa", ("bert:enable_attention",), attention_sdpa,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax", "Where")),
    ort_motif("tb-attention-where", ("bert:enable_attention",), attention_where,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax", "Where")),
    ort_motif("tb-attention-albert", ("bert:enable_attention",), attention_albert,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax", "Einsum")),
    ort_motif("tb-clip-attention", ("clip:enable_attention",), clip_attention,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-clip-causal", ("clip:enable_attention",), clip_causal,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-gpt2-attention", ("gpt2:enable_attention",), gpt2_attention,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-gpt2-megatron", ("gpt2:enable_attention",), gpt2_megatron,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-gpt2-no-past", ("gpt2:enable_attention",), gpt2_no_past,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-t5-attention", ("t5:enable_attention",), t5_attention,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=12, anchors=("Softmax",)),
    ort_motif("tb-t5-sliced-mask", ("t5:enable_attention",), t5_sliced_mask,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=12, anchors=("Softmax",)),
    ort_motif("tb-t5-decoder", ("t5:enable_attention",), t5_decoder,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-t5-cross", ("t5:enable_attention",), t5_cross,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-bart-encoder", ("bart:enable_attention",), bart_encoder,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-bart-decoder", ("bart:enable_attention",), bart_decoder,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
    ort_motif("tb-bart-cross", ("bart:enable_attention",), bart_cross,
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11, anchors=("Softmax",)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 122
