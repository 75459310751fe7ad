"""Motifs for the rotary position embedding fusion of onnxruntime's Python transformer
optimizer (``FusionRotaryEmbeddings`` in ``onnxruntime/transformers/fusion_rotary_attention.py``,
the ``enable_rotary_embeddings`` flag, run by every model class):

- ``tb-rotary`` : x * cos + rotate_half(x) * sin on heads x (B, N, S, H) taken from a
  Reshape and Transpose of hidden states, rotate_half(x) = Concat(-x[..., H/2:],
  x[..., :H/2]) with the half H/2 computed as Shape, Gather, Div, Unsqueeze (the export's
  floor division; sometimes with Casts around it, Qwen's form), cos and sin read from
  (M, H) caches (Llama's newer form: Slice to the sequence length, Gather at position ids,
  Unsqueeze) or (1, 1, M, H) caches (the older form: Slice, Squeeze, Squeeze, Gather,
  Unsqueeze), the caches Constant nodes mostly (the fusion moves their values into its
  own cache initializers), sometimes initializers (which it does not), or cos and sin
  computed from the position ids on the fly (Qwen3's export). Near-misses: the
  sin and cos sequence lengths from separate Shape nodes, a rotate_half of halves of
  another tensor.

- ``tb-llama-attention`` (hint ``gpt2:enable_attention``; ``FusionRotaryAttention``, which
  only the gpt2 model class runs): a LLaMA attention block whose Q and K go through that
  rotary embedding, with RMS norms and the LLaMA export's Where mask.

Shapes: B in 1..2, S in 4..6 (position ids come in [0, 3]), N in 1..3, H in {4, 8}.
float32.
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.helpers import FLOAT_INPUT, float_view, ort_motif
from generators.ops import shape_ops
from generators.ops.reduce import reduce
from generators.values import BOOL, FLOAT, INT64, Value


def _scalar_dim(b: GraphBuilder, shape: Value, axis: int) -> Value:
    """Gather(shape, axis) as an int64 scalar."""
    return b.op("Gather", [shape, b.const(np.array(axis, np.int64), "Gather")], INT64, (),
                ("nonneg",), axis=0)


def _half(b: GraphBuilder, xt: Value) -> Value:
    """Unsqueeze(Div(Gather(Shape(xt), 3), 2)), sometimes with one or two Casts between the
    Div and the Unsqueeze."""
    d = b.op("Div", [_scalar_dim(b, b.op("Shape", [xt], INT64, (4,), ("nonneg",)), 3),
                     b.const(np.array(2, np.int64), "Div")], INT64, (), ("nonneg",))
    casts = b.rng.choice([0, 0, 0, 1, 2])
    for _ in range(casts):
        d = b.op("Cast", [d], INT64, (), ("nonneg",), to=INT64)
    return shape_ops.unsqueeze(b, d, [0])


def _last_axis_slice(b: GraphBuilder, src: Value, start: Value, end: Value,
                     shape: tuple[int, ...]) -> Value:
    """``src[..., start:end]`` of a (B, N, S, H) ``src`` (``start`` and ``end`` 1-D, one
    value): a Slice with axes [3]; where the schema row the draw takes leaves Slice's axes
    out (or empty-named), its starts and ends over all four axes instead, Concats of the
    whole of the first three and the given bound (the form without axes means the same)."""
    level = b.planned("Slice", "in:axes")
    if level not in ("absent", "empty"):
        return b.op("Slice", [src, start, end, b.ints([3], "Slice")], FLOAT, shape)
    starts = b.op("Concat", [b.ints([0, 0, 0], "Concat"), start], INT64, (4,), axis=0)
    ends = b.op("Concat", [b.ints([2**62] * 3, "Concat"), end], INT64, (4,), axis=0)
    rest = ["", b.ints([1, 1, 1, 1], "Slice").name] if level == "empty" else []
    return b.add(Value(b.node("Slice", [src.name, starts.name, ends.name, *rest])[0], FLOAT,
                       shape))


def _cache(b: GraphBuilder, values: np.ndarray, constant: bool) -> Value:
    """A cos or sin cache: a Constant node or an initializer."""
    return b.const(values.astype(np.float32), "Slice", "constant" if constant else "initializer")


def _rope_table(b: GraphBuilder, seq: int, end: Value, pos: Value, table: Value,
                old: bool) -> Value:
    """cos or sin at the position ids, (B, 1, S, H): Slice the (M, H) table to ``end`` rows,
    Gather at ``pos``, Unsqueeze axis 1; or for ``old`` a (1, 1, M, H) table sliced on axis
    2, squeezed twice first."""
    h = table.shape[-1]
    if old:
        s = b.op("Slice", [table, b.ints([0], "Slice"), end, b.ints([2], "Slice")], FLOAT,
                 (1, 1, seq, h))
        form = shape_ops.axes_operand(b, "Squeeze", [1], 13)
        s = b.op("Squeeze", [s, *form["inputs"]], FLOAT, (1, seq, h), **form["attrs"])
        form = shape_ops.axes_operand(b, "Squeeze", [0], 13)
        s = b.op("Squeeze", [s, *form["inputs"]], FLOAT, (seq, h), **form["attrs"])
    else:
        s = b.op("Slice", [table, b.ints([0], "Slice"), end, b.ints([0], "Slice")], FLOAT,
                 (seq, h))
    g = b.op("Gather", [s, pos], FLOAT, (*pos.shape, h))
    return shape_ops.unsqueeze(b, g, [1])


def rotary(b: GraphBuilder, x: Value) -> Value:
    """Rotary embedding of heads (B, N, S, H) split from a hidden-state graph input (B, S,
    N*H) plus the mean of ``x`` (any shape), in the forms of the module docstring; returns
    the rotated heads."""
    x = float_view(b, x, (FLOAT,))
    bsz = x.shape[0]
    seq = b.rng.randint(4, 6)
    heads, head = b.rng.choice([1, 2, 3]), b.rng.choice([4, 8])
    hid = b.graph_input(FLOAT, (bsz, seq, heads * head))
    b.pool.remove(hid)
    # x joins as the mean of its values, added to a hidden-state input of the heads' shape
    mean = reduce(b, "ReduceMean", x, axes=list(range(x.rank)), keepdims=0)
    mixed = b.op("Add", [hid, mean], FLOAT, hid.shape)
    r = b.op("Reshape", [mixed, b.ints([0, 0, heads, head], "Reshape")], FLOAT,
             (bsz, seq, heads, head))
    xt = b.op("Transpose", [r], FLOAT, (bsz, heads, seq, head), perm=[0, 2, 1, 3])
    pos = b.graph_input(INT64, (bsz, seq))
    b.pool.remove(pos)
    return rope(b, xt, pos, caches(b, seq, head))


def caches(b: GraphBuilder, seq: int, head: int) -> tuple[Value, Value, bool]:
    """(cos, sin, old): the caches of head size ``head`` for at least ``seq`` positions,
    (M, H) or, for ``old``, (1, 1, M, H); Constant nodes mostly, sometimes initializers."""
    rows = seq + b.rng.randint(0, 3)
    old = b.rng.random() < 0.35
    constant = b.rng.random() < 0.85
    inv = 1.0 / (10000 ** (np.arange(0, head, 2) / head))
    ang = np.outer(np.arange(rows), inv)
    emb = np.concatenate([ang, ang], axis=-1)
    shape = (1, 1, rows, head) if old else (rows, head)
    return (_cache(b, np.cos(emb).reshape(shape), constant),
            _cache(b, np.sin(emb).reshape(shape), constant), old)


def on_the_fly(b: GraphBuilder, pos: Value, head: int) -> tuple[Value, Value]:
    """cos and sin (B, 1, S, H) computed from the position ids ``pos`` (B, S) as newer
    Hugging Face exports (Qwen3) do: freqs = Transpose(MatMul(Expand(Unsqueeze(inv_freq)),
    Cast(Unsqueeze(pos)))), emb = Concat(freqs, freqs), Cos(emb) and Sin(emb) times an
    attention scaling, unsqueezed on axis 1 (FusionRotaryEmbeddings' fifth cos/sin path,
    from which it computes caches of its own)."""
    bsz, seq = pos.shape
    inv = (1.0 / (10000 ** (np.arange(0, head, 2) / head))).astype(np.float32)
    inv_c = b.const(inv, "Unsqueeze", "constant" if b.rng.random() < 0.3 else "initializer")
    u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, inv_c, [0]), [2])
    e = b.op("Expand", [u, b.ints([bsz, head // 2, 1], "Expand")], FLOAT, (bsz, head // 2, 1))
    p = b.op("Cast", [shape_ops.unsqueeze(b, pos, [1])], FLOAT, (bsz, 1, seq), to=FLOAT)
    freqs = b.op("Transpose", [b.op("MatMul", [e, p], FLOAT, (bsz, head // 2, seq))], FLOAT,
                 (bsz, seq, head // 2), perm=[0, 2, 1])
    emb = b.op("Concat", [freqs, freqs], FLOAT, (bsz, seq, head), axis=-1)
    scale = b.const(np.array(b.rng.choice([1.0, 1.0, 0.5]), np.float32), "Mul")
    out = []
    for op in ("Cos", "Sin"):
        t = b.op("Mul", [b.op(op, [emb], FLOAT, emb.shape, ("bounded",)), scale], FLOAT,
                 emb.shape)
        out.append(shape_ops.unsqueeze(b, t, [1]))
    return out[0], out[1]


def rope(b: GraphBuilder, xt: Value, pos: Value, tables: tuple[Value, Value, bool]) -> Value:
    """x * cos + rotate_half(x) * sin of heads ``xt`` (B, N, S, H) at position ids ``pos``
    (B, S) with the caches ``tables`` (:func:`caches`), in the forms of the module
    docstring, or a quarter of the time with cos and sin computed :func:`on_the_fly`;
    returns the rotated heads."""
    bsz, heads, seq, head = xt.shape
    cos_t, sin_t, old = tables
    half = _half(b, xt)
    src = xt
    if b.rng.random() < 0.05:  # halves of another tensor: not rotate_half(x)
        src = b.op("Neg", [xt], FLOAT, xt.shape)
    x1 = _last_axis_slice(b, src, b.ints([0], "Slice"), half, (bsz, heads, seq, head // 2))
    x2 = _last_axis_slice(b, src, half, b.ints([2**62], "Slice"), x1.shape)
    rot = b.op("Concat", [b.op("Neg", [x2], FLOAT, x2.shape), x1], FLOAT, xt.shape, axis=-1)
    if b.rng.random() < 0.25:
        cos, sin = on_the_fly(b, pos, head)
        return b.op("Add", [b.op("Mul", [xt, cos], FLOAT, xt.shape),
                            b.op("Mul", [rot, sin], FLOAT, xt.shape)], FLOAT, xt.shape)
    seq_dim = _scalar_dim(b, b.op("Shape", [xt], INT64, (4,), ("nonneg",)), 2)
    end = shape_ops.unsqueeze(b, seq_dim, [0])
    if b.rng.random() < 0.1:  # a second Shape for sin: the caches' lengths not shared
        end_sin = shape_ops.unsqueeze(
            b, _scalar_dim(b, b.op("Shape", [xt], INT64, (4,), ("nonneg",)), 2), [0])
    else:
        end_sin = end
    cos = _rope_table(b, seq, end, pos, cos_t, old)
    sin = _rope_table(b, seq, end_sin, pos, sin_t, old)
    return b.op("Add", [b.op("Mul", [xt, cos], FLOAT, xt.shape),
                        b.op("Mul", [rot, sin], FLOAT, xt.shape)], FLOAT, xt.shape)


def _llama_mask(b: GraphBuilder, bsz: int, seq: int, heads: int = 0) -> Value:
    """The additive mask of Hugging Face's LLaMA export: Where(Cast(inv, bool), lowest,
    inv), inv = 1 - Cast(Expand(Unsqueeze(Unsqueeze(m)), (B, 1, S, S))) of a 0/1 int64 mask
    (FusionRotaryAttention's fourth mask form), mostly expanded to ``heads`` heads (its
    sixth)."""
    m = b.graph_input(BOOL, (bsz, seq))
    b.pool.remove(m)
    mi = b.op("Cast", [m], INT64, m.shape, ("nonneg",), to=INT64)
    u = shape_ops.unsqueeze(b, shape_ops.unsqueeze(b, mi, [1]), [2])
    e = b.op("Expand", [u, b.ints([bsz, 1, seq, seq], "Expand")], INT64, (bsz, 1, seq, seq))
    ef = b.op("Cast", [e], FLOAT, e.shape, ("nonneg",), to=FLOAT)
    inv = b.op("Sub", [b.const(np.array(1.0, np.float32), "Sub"), ef], FLOAT, ef.shape)
    cond = b.op("Cast", [inv], BOOL, inv.shape, to=BOOL)
    low = b.const(np.array(np.finfo(np.float32).min, np.float32), "Where")
    where = b.op("Where", [cond, low, inv], FLOAT, inv.shape)
    if heads and b.rng.random() < 0.7:
        # expanded to the heads: FusionRotaryAttention passes it on as it is (its sixth
        # mask form); without, it concatenates the mask once per head of the num_heads
        # argument, none when that is 0 as here, and FusionShape then fails on the
        # empty Concat
        return b.op("Expand", [where, b.ints([bsz, heads, seq, seq], "Expand")], FLOAT,
                    (bsz, heads, seq, seq))
    return where


def llama_attention(b: GraphBuilder, x: Value) -> Value:
    """A LLaMA attention block on a projection of ``x`` (B, S, E) to N*H (the form
    FusionRotaryAttention of fusion_rotary_attention.py fuses under the gpt2 model type,
    after FusionRotaryEmbeddings made RotaryEmbedding nodes of :func:`rope`): an RMS norm,
    Q, K, V MatMuls without bias split into heads, Q and K rotated at position ids, K
    transposed, scores divided by sqrt(H) plus :func:`_llama_mask`, Softmax, the context
    merged and projected without bias, the residual Add and another RMS norm. float32."""
    from generators.motifs.onnxruntime_transformers.forms import _layer_norm

    x = float_view(b, x, (FLOAT,))
    bsz, seq = x.shape[0], b.rng.randint(4, 6)
    heads, head = b.rng.choice([1, 2, 3]), b.rng.choice([4, 8])
    hidden = heads * head
    hid = b.graph_input(FLOAT, (bsz, seq, hidden))
    b.pool.remove(hid)
    mean = reduce(b, "ReduceMean", x, axes=list(range(x.rank)), keepdims=0)
    stream = b.op("Add", [hid, mean], FLOAT, hid.shape)
    normed = _layer_norm(b, stream, "rms")
    pos = b.graph_input(INT64, (bsz, seq))
    b.pool.remove(pos)
    tables = caches(b, seq, head)
    # the Reshapes' shapes from the batch and sequence sizes of Shape(normed), one pair of
    # Gathers for all four (what FusionRotaryAttention verifies), or constants
    dims = None
    if b.rng.random() < 0.85:
        shp = b.op("Shape", [normed], INT64, (3,), ("nonneg",))
        dims = [b.op("Gather", [shp, b.const(np.array(a, np.int64), "Gather")], INT64, (),
                     ("nonneg",), axis=0) for a in (0, 1)]

    def spec(tail: list[int]) -> Value:
        if dims is None:
            return b.ints([0, 0, *tail], "Reshape")
        parts = [shape_ops.unsqueeze(b, d, [0]) for d in dims]
        return b.op("Concat", [*parts, b.ints(tail, "Concat")], INT64, (2 + len(tail),),
                    axis=0)

    def heads_of(name: str) -> Value:
        m = b.op("MatMul", [normed, b.random_weight((hidden, hidden), FLOAT, name)], FLOAT,
                 normed.shape)
        r = b.op("Reshape", [m, spec([heads, head])], FLOAT, (bsz, seq, heads, head))
        return b.op("Transpose", [r], FLOAT, (bsz, heads, seq, head), perm=[0, 2, 1, 3])

    q = rope(b, heads_of("MatMul"), pos, tables)
    k = rope(b, heads_of("MatMul"), pos, tables)
    v = heads_of("MatMul")
    kt = b.op("Transpose", [k], FLOAT, (bsz, heads, head, seq), perm=[0, 1, 3, 2])
    qk = b.op("MatMul", [q, kt], FLOAT, (bsz, heads, seq, seq))
    div = b.op("Div", [qk, b.const(np.array(np.sqrt(head), np.float32), "Div")], FLOAT,
               qk.shape)
    scores = b.op("Add", [div, _llama_mask(b, bsz, seq, heads)], FLOAT, qk.shape)
    p = b.op("Softmax", [scores], FLOAT, scores.shape, ("bounded", "nonneg"), axis=-1)
    ctx = b.op("MatMul", [p, v], FLOAT, (bsz, heads, seq, head))
    t = b.op("Transpose", [ctx], FLOAT, (bsz, seq, heads, head), perm=[0, 2, 1, 3])
    merged = b.op("Reshape", [t, spec([hidden])], FLOAT, (bsz, seq, hidden))
    o = b.op("MatMul", [merged, b.random_weight((hidden, hidden), FLOAT, "MatMul")], FLOAT,
             merged.shape)
    return _layer_norm(b, b.op("Add", [stream, o], FLOAT, o.shape), "rms")

MOTIFS = (
    ort_motif("tb-rotary", ("enable_rotary_embeddings",), rotary, dtypes=FLOAT_INPUT,
              ranks=(1, 4), since=13, anchors=("Slice", "Concat")),
    ort_motif("tb-llama-attention", ("gpt2:enable_attention",), llama_attention,
              dtypes=FLOAT_INPUT, ranks=(1, 4), since=13, anchors=("Softmax",)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 123
