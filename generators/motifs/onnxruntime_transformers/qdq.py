"""Motifs for the QOrdered fusions of onnxruntime's Python transformer optimizer
(``fusion_qordered_gelu.py``, ``fusion_qordered_layernorm.py``, ``fusion_qordered_matmul.py``:
quantized graphs whose QuantizeLinear / DequantizeLinear pairs sit around a Gelu, a
LayerNormalization or a MatMul; the fused ops have CUDA kernels only, which the target
documents):

- ``tb-qdq`` : x quantized to int8 (zero point 0) and dequantized, then one of a
  ``com.microsoft`` Gelu or FastGelu, a LayerNormalization (the ONNX op from opset 17, else
  its decomposition, which the layer-norm fusion fuses first), or a MatMul by a dequantized
  int8 weight plus a bias (and sometimes a residual Add of another dequantized value),
  then quantized and dequantized again. Near-misses the checks of
  ``FusionUtils.check_qdq_node_for_fusion`` refuse: a per-channel scale, a nonzero zero
  point, the zero point left out (which it accepts); and a second consumer of the op.

Shapes are x's (rank 2-3; the LayerNormalization normalizes the last axis). float32.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper

from generators.builder import GraphBuilder
from generators.motifs.helpers import FLOAT_INPUT, float_view, ort_motif, room_for_axis, tap
from generators.motifs.onnxruntime_transformers.blocks import _norm, _weigher
from generators.values import FLOAT, Value

INT8 = TensorProto.INT8
MS = "com.microsoft"


def _int8(b: GraphBuilder, values: np.ndarray, op: str) -> str:
    """An int8 initializer holding ``values``; returns its name."""
    name = b.namer.weight(op)
    b.initializers.append(numpy_helper.from_array(values.astype(np.int8), name))
    return name


def _scale(b: GraphBuilder, n: int, per_channel: bool) -> Value:
    """A positive scale: a scalar, or (per_channel) one per channel of ``n``."""
    shape = (n,) if per_channel else ()
    return b.const(np.full(shape, b.rng.choice([0.02, 0.05, 0.1]), np.float32), "QuantizeLinear")


def _qdq(b: GraphBuilder, x: Value, odd: str) -> Value:
    """DequantizeLinear(QuantizeLinear(x)) through int8, with the zero point 0, absent
    (uint8 then) or (``odd == "zp"``) 3, and the scale per channel for ``odd ==
    "channel"`` (axis -1)."""
    n = x.shape[-1]
    per_channel = odd == "channel"
    s = _scale(b, n, per_channel)
    axis = {"axis": -1} if per_channel else {}
    if odd == "nozp":
        q = b.op("QuantizeLinear", [x, s], TensorProto.UINT8, x.shape, **axis)
        return b.op("DequantizeLinear", [q, s], FLOAT, x.shape, **axis)
    zp_value = 3 if odd == "zp" else 0
    zp = _int8(b, np.full((n,) if per_channel else (), zp_value), "QuantizeLinear")
    q = b.op("QuantizeLinear", [x, s, zp], INT8, x.shape, **axis)
    return b.op("DequantizeLinear", [q, s, zp], FLOAT, x.shape, **axis)


def qdq(b: GraphBuilder, x: Value) -> Value:
    """QDQ around a Gelu, FastGelu, LayerNormalization or MatMul + bias (+ residual) on x
    (see the module docstring); returns the last DequantizeLinear's output."""
    x = room_for_axis(b, float_view(b, x, (FLOAT,)), "QuantizeLinear", "DequantizeLinear")
    per_channel_ok = b.opset >= 13
    odd = b.rng.choice(["", "", "", "", "zp", "nozp"] + (["channel"] if per_channel_ok else []))
    a = _qdq(b, x, odd)
    kind = b.rng.choice(["gelu", "fastgelu", "norm", "matmul", "matmul"])
    w = _weigher(b)
    if kind == "gelu":
        y = b.op("Gelu", [a], FLOAT, a.shape, domain=MS)
    elif kind == "fastgelu":
        y = b.op("FastGelu", [a], FLOAT, a.shape, domain=MS)
    elif kind == "norm":
        y = _norm(b, a, w)
    else:
        k, n = a.shape[-1], b.rng.choice([a.shape[-1], 4])
        wq = _int8(b, b.nprng.integers(-8, 8, size=(k, n)), "DequantizeLinear")
        ws = _scale(b, n, b.rng.random() < 0.3 and per_channel_ok)
        dq_inputs = [wq, ws.name]
        if b.rng.random() < 0.7:
            dq_inputs.append(_int8(b, np.zeros(ws.shape, np.int8), "DequantizeLinear"))
        axis = {"axis": 1} if ws.shape else {}
        wd = b.op("DequantizeLinear", dq_inputs, FLOAT, (k, n), **axis)
        m = b.op("MatMul", [a, wd], FLOAT, (*a.shape[:-1], n))
        y = b.op("Add", [m, b.random_weight((n,), FLOAT, "Add")], FLOAT, m.shape)
        if n == k and b.rng.random() < 0.4:
            y = b.op("Add", [y, _qdq(b, x, "")], FLOAT, y.shape)
    y = tap(b, y, 0.05)
    return _qdq(b, y, b.rng.choice(["", "", "", "", "zp"]))


MOTIFS = (
    ort_motif("tb-qdq", ("enable_qordered_matmul", "enable_gelu", "enable_layer_norm"), qdq,
              dtypes=FLOAT_INPUT, ranks=(2, 3), since=10,
              anchors=("QuantizeLinear", "DequantizeLinear")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 125
