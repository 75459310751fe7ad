"""Fusion motifs: Conv→BatchNormalization, Conv→Add(bias), MatMul→Add(bias), Pad→Conv,
Pad→Pool, Transpose→Gemm, Einsum patterns, three MatMuls sharing an input (QKV)."""

from __future__ import annotations

from onnx import numpy_helper

from generators.builder import GraphBuilder
from generators.edge_values import EDGE_SHARE, edge_value, maybe_edge
from generators.motifs.spec import Motif
from generators.ops import nn
from generators.values import FLOAT, Value

#: share of Convs drawn grouped (``group`` > 1: depthwise or another divisor of the input
#: channels; the weight has C / group input channels and a multiple of group outputs).
GROUPED_SHARE = 0.2


def conv(b: GraphBuilder, x: Value, bias: bool | None = None, pads: bool = True,
         placement: str | None = None) -> Value:
    """A Conv on (N, C, H, W) ``x`` with random window (``pads``: allow padding), grouped
    for a share :data:`GROUPED_SHARE` of inputs with more than one channel."""
    n, c, *spatial = x.shape
    w = nn.window(b, tuple(spatial), pad=pads)
    group = 1
    if c > 1 and b.rng.random() < GROUPED_SHARE:
        group = b.rng.choice([d for d in range(2, c + 1) if c % d == 0])
    m = b.rng.randint(1, 4) if group == 1 else group * b.rng.randint(1, 2)
    weight = b.random_weight((m, c // group, *w["kernel_shape"]), FLOAT, "Conv",
                             placement=placement)
    inputs = [x, weight]
    if bias or (bias is None and b.rng.random() < 0.5):
        inputs.append(b.random_weight((m,), FLOAT, "Conv", placement=placement))
    dil = w["dilations"] if any(d != 1 for d in w["dilations"]) else None
    return b.op("Conv", inputs, FLOAT, (n, m, *w["out"]), kernel_shape=w["kernel_shape"],
                strides=w["strides"], pads=w["pads"], dilations=dil,
                group=group if group > 1 else None)


#: edge kinds (:mod:`generators.edge_values`) per folded constant: what the fused form
#: computes differently if the rewrite ignores a precondition (a zero or denormal variance
#: under the square root, a scale whose product with the weights overflows, a bias that is
#: NaN or a negative zero, a Pad value that is not the pool's identity).
EDGE_KINDS_OF: dict[str, tuple[str, ...]] = {
    "bn-scale": ("overflow", "zero", "negative-zero", "denormal"),
    "bn-var": ("zero", "denormal", "overflow", "negative-zero"),
    "bias": ("overflow", "negative-zero", "denormal", "nan"),
    "pad-value": ("-inf", "negative-zero", "nan", "overflow"),
}


def edged_weight(b: GraphBuilder, shape: tuple[int, ...], op: str, site: str,
                 positive: bool = False) -> Value:
    """A float weight like :meth:`GraphBuilder.random_weight` whose values take edge
    values of ``site``'s kinds (:data:`EDGE_KINDS_OF`) with probability
    :data:`generators.edge_values.EDGE_SHARE`."""
    w = b.random_weight(shape, FLOAT, op, positive=positive)
    arr, kind = maybe_edge(b.rng, w.const, EDGE_KINDS_OF[site])
    if kind is None:
        return w
    for t in b.initializers:
        if t.name == w.name:
            t.CopyFrom(numpy_helper.from_array(arr, w.name))
    for n in b.nodes:
        if n.op_type == "Constant" and n.output[0] == w.name:
            n.attribute[0].t.CopyFrom(numpy_helper.from_array(arr, w.name))
    return Value(w.name, w.dtype, w.shape, frozenset(), arr)


def _conv_bn(b: GraphBuilder, x: Value) -> Value:
    y = conv(b, x)
    if b.rng.random() < 0.2:
        b.graph_output(y)  # intermediate also a graph output: the fusion must keep it
    c = y.shape[1]
    weights = [edged_weight(b, (c,), "BatchNormalization", "bn-scale", positive=True),
               b.random_weight((c,), FLOAT, "BatchNormalization"),
               b.random_weight((c,), FLOAT, "BatchNormalization"),
               edged_weight(b, (c,), "BatchNormalization", "bn-var", positive=True)]
    eps = b.rng.choice([1e-5, 1e-3, None])
    return b.op("BatchNormalization", [y, *weights], FLOAT, y.shape, epsilon=eps)


def _conv_add(b: GraphBuilder, x: Value) -> Value:
    y = conv(b, x, bias=b.rng.random() < 0.3)
    m = y.shape[1]
    shape = b.rng.choice([(m, 1, 1), (1, m, 1, 1), (1,), (m, 1, 1)])
    bias = edged_weight(b, shape, "Add", "bias")
    args = [y, bias] if b.rng.random() < 0.8 else [bias, y]
    return b.op("Add", args, FLOAT, y.shape)


def _matmul_add(b: GraphBuilder, x: Value) -> Value:
    k = x.shape[-1]
    n = b.rng.randint(1, 4)
    w = b.random_weight((k, n), FLOAT, "MatMul")
    y = b.op("MatMul", [x, w], FLOAT, (x.shape[0], n))
    bias = edged_weight(b, b.rng.choice([(n,), (1, n), (x.shape[0], n)]), "Add", "bias")
    args = [y, bias] if b.rng.random() < 0.8 else [bias, y]
    return b.op("Add", args, FLOAT, y.shape)


def pad(b: GraphBuilder, x: Value, pads: list[int], value: float | None = 0.0) -> Value:
    """Constant-mode Pad of ``x`` in the opset's form."""
    out = tuple(d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape))
    if b.opset < 11:
        return b.op("Pad", [x], x.dtype, out, pads=pads, mode="constant",
                    value=value if value else None)
    inputs = [x, b.ints(pads, "Pad")]
    if value is not None:
        inputs.append(b.scalar(value, x.dtype, "Pad"))
    return b.op("Pad", inputs, x.dtype, out, mode=b.rng.choice(["constant", None]))


def _spatial_pads(b: GraphBuilder, rank: int) -> list[int]:
    pads = [0] * (2 * rank)
    for i in range(2, rank):
        pads[i] = b.rng.randint(0, 2)
        pads[i + rank] = b.rng.randint(0, 2)
    if b.rng.random() < 0.1:
        pads[0] = 1  # a batch pad the fusion must refuse
    return pads


def _pad_conv(b: GraphBuilder, x: Value) -> Value:
    p = pad(b, x, _spatial_pads(b, x.rank), b.rng.choice([0.0, 0.0, None, 1.0]))
    return conv(b, p)


def _pad_pool(b: GraphBuilder, x: Value) -> Value:
    value = b.rng.choice([0.0, None, -1e4, 1.0])
    if b.rng.random() < EDGE_SHARE:
        value = edge_value(b.rng.choice(EDGE_KINDS_OF["pad-value"]))
    p = pad(b, x, _spatial_pads(b, x.rank), value)
    return nn.pool(b, b.rng.choice(["MaxPool", "AveragePool"]), p)


def _transpose_gemm(b: GraphBuilder, x: Value) -> Value:
    t = b.op("Transpose", [x], FLOAT, x.shape[::-1], perm=[1, 0])
    return nn.gemm(b, t, trans_a=b.rng.randrange(2))


def _einsum(b: GraphBuilder, x: Value) -> Value:
    eqs = {2: ["ij,jk->ik", "ij,kj->ik", "ik,kj->ij"], 3: ["bij,bjk->bik", "bij,bkj->bik"],
           4: ["bhij,bhjk->bhik", "bhij,bhkj->bhik", "abcd,abde->abce"]}
    return nn.einsum(b, x, b.rng.choice(eqs[x.rank]))


def _qkv(b: GraphBuilder, x: Value) -> Value:
    k = x.shape[-1]
    n = b.rng.randint(1, 4)
    outs = []
    for _ in range(3):
        w = b.random_weight((k, n), FLOAT, "MatMul")
        y = b.op("MatMul", [x, w], FLOAT, (*x.shape[:-1], n))
        if b.rng.random() < 0.5:
            y = b.op("Add", [y, b.random_weight((n,), FLOAT, "Add")], FLOAT, y.shape)
        outs.append(y)
    s = b.op("Add", [outs[0], outs[1]], FLOAT, outs[0].shape)
    return b.op("Mul", [s, outs[2]], FLOAT, s.shape)


MOTIFS = (
    Motif("conv-bn", ("fuse_bn_into_conv",), emit=_conv_bn, ranks=(4, 4), v1=True,
          anchors=("Conv", "BatchNormalization")),
    Motif("conv-add-bias", ("fuse_add_bias_into_conv",), emit=_conv_add, ranks=(4, 4),
          anchors=("Conv", "Add")),
    Motif("matmul-add-bias", ("fuse_matmul_add_bias_into_gemm",), emit=_matmul_add,
          ranks=(2, 2),
          anchors=("MatMul", "Add")),
    Motif("pad-conv", ("fuse_pad_into_conv",), emit=_pad_conv, ranks=(4, 4), since=7,
          anchors=("Pad", "Conv")),
    Motif("pad-pool", ("fuse_pad_into_pool",), emit=_pad_pool, ranks=(4, 4), since=7,
          anchors=("Pad", "MaxPool", "AveragePool")),
    Motif("transpose-gemm", ("fuse_transpose_into_gemm",), emit=_transpose_gemm,
          ranks=(2, 2),
          anchors=("Transpose", "Gemm")),
    Motif("einsum-matmul", ("replace_einsum_with_matmul",), emit=_einsum, ranks=(2, 4),
          since=12,
          anchors=("Einsum",)),
    Motif("qkv", ("fuse_qkv",), emit=_qkv, ranks=(2, 3),
          anchors=("MatMul", "Add")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 20
