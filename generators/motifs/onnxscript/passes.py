"""Motifs for the ``onnx_ir`` passes of onnxscript's ``optimize_ir`` sequence
(``onnx_ir/passes/common``) beyond what the shared families build: common subexpressions
whose twins are graph outputs, small and large Constant twins, random twins (kept);
optional outputs no node reads (removed by ``RemoveUnusedNodesPass``: Dropout's mask,
MaxPool's indices, BatchNormalization with an explicit ``training_mode=0``) and trailing
empty inputs; Loop bodies whose outputs are a body input or one value twice
(``OutputFixPass``) and hold a dead node; an ``ai.onnx.ml`` op on a constant (which the
folder cannot evaluate).
"""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, value_info
from generators.motifs.helpers import ort_motif, weight
from generators.motifs.onnxscript.fold import repeat
from generators.ops import shape_ops
from generators.ops.control import body_builder
from generators.values import BOOL, FLOAT, INT64, Value


def _cse_twins(b: GraphBuilder, x: Value) -> Value:
    """Two identical nodes on ``x`` (an op with list, float or tensor attributes), one or
    both graph outputs; twin Constant nodes of a small and of a large tensor; twin random
    ops (kept: not deterministic) times zero."""
    form = b.rng.choice(["op", "op", "constants", "random"])
    if form == "constants":
        value = b.rng.choice([0.5, 2.0])
        large = b.rng.random() < 0.5
        arr = np.full((11,) if large else (x.shape[-1],), value, np.float32)
        twins = [b.const(arr.copy(), "Add", placement="constant") for _ in range(2)]
        if large:  # above CSE's size limit: kept apart
            twins = [b.op("ReduceMean", [t], FLOAT, (), keepdims=0) for t in twins]
        y = b.op("Add", [x, twins[0]], FLOAT, x.shape)
        return b.op("Sub", [y, twins[1]], FLOAT, x.shape)
    if form == "random":
        outs = []
        for _ in range(2):
            r = b.op("RandomNormalLike", [x], FLOAT, x.shape)
            outs.append(b.op("Mul", [r, b.scalar(0.0, FLOAT, "Mul")], FLOAT, x.shape))
        y = b.op("Add", [x, outs[0]], FLOAT, x.shape)
        return b.op("Add", [y, outs[1]], FLOAT, x.shape)
    op = b.rng.choice(["Transpose", "LeakyRelu", "Relu", "Softmax"])
    attrs: dict = {}
    shape = x.shape
    if op == "Transpose":
        perm = list(reversed(range(x.rank)))
        attrs["perm"] = perm
        shape = tuple(x.shape[p] for p in perm)
    elif op == "LeakyRelu":
        attrs["alpha"] = 0.1
    elif op == "Softmax":
        attrs["axis"] = -1 if b.opset >= 13 or x.rank == 1 else x.rank - 1
    a = b.op(op, [x], FLOAT, shape, **attrs)
    c = b.op(op, [x], FLOAT, shape, **attrs)
    r = b.rng.random()
    if r < 0.35:
        b.graph_output(a)
        b.graph_output(c)
        return b.op("Neg", [a], FLOAT, shape)
    if r < 0.7:
        b.graph_output(c)
    return b.op("Add", [a, c], FLOAT, shape)


def _unused_outputs(b: GraphBuilder, x: Value) -> Value:
    """Nodes with optional outputs no node reads: Dropout's mask, MaxPool's Indices (4-D
    ``x``, opset 8+), BatchNormalization (4-D) with an explicit ``training_mode=0`` (opset
    14+); a Clip with a trailing empty input. A draw aimed at MaxPool unsqueezes a
    ``x`` of rank below 3."""
    forms = ["dropout", "clip"]
    if b.variant("", ("MaxPool",)) == "MaxPool" and x.rank < 3 and b.opset >= 8:
        x = shape_ops.unsqueeze(b, x, list(range(3 - x.rank)))  # a draw aimed at MaxPool
    if x.rank >= 3 and b.opset >= 8:
        forms.append("maxpool")
    if x.rank == 4 and b.opset >= 14:
        forms.append("bn")
    form = b.rng.choice(forms)
    # a draw aimed at the Dropout or the MaxPool makes it where it can
    form = {"Dropout": "dropout", "MaxPool": "maxpool"}.get(
        b.variant("", [o for o, f in (("Dropout", "dropout"), ("MaxPool", "maxpool"))
                       if f in forms]), form)
    if form == "dropout":
        names = b.node("Dropout", [x.name], n_out=2)
        return b.add(Value(names[0], FLOAT, x.shape, x.props))
    if form == "maxpool":
        names = b.node("MaxPool", [x.name], n_out=2, kernel_shape=[1] * (x.rank - 2))
        return b.add(Value(names[0], FLOAT, x.shape, x.props))
    if form == "bn":
        c = x.shape[1]
        ws = [b.random_weight((c,), FLOAT, "BatchNormalization", positive=True),
              weight(b, (c,), FLOAT, "BatchNormalization"),
              weight(b, (c,), FLOAT, "BatchNormalization"),
              b.random_weight((c,), FLOAT, "BatchNormalization", positive=True)]
        return b.op("BatchNormalization", [x, *ws], FLOAT, x.shape, training_mode=0)
    if b.opset < 11:
        return b.op("Clip", [x], FLOAT, x.shape, min=-1.0)
    lo = b.scalar(-1.0, FLOAT, "Clip")
    return b.op("Clip", [x.name, lo.name, ""], FLOAT, x.shape)


def _loop_passthrough(b: GraphBuilder, x: Value) -> Value:
    """Loop (from opset 11) over ``x`` whose body hands its condition input straight to
    its condition output (a graph input as graph output, which ``OutputFixPass`` wraps in
    an Identity), holds a node no output reads, and at times emits the carried value
    twice (as the carried output and as a scan output: one value, two outputs)."""
    trip_count = b.rng.randint(1, 2)
    trip = b.const(np.asarray(trip_count, np.int64), "Loop")
    cond = b.const(np.asarray(True), "Loop").name if b.rng.random() < 0.5 else ""
    body = body_builder(b)
    it_name, c_name, v_name = (b.namer.tensor("Loop") for _ in range(3))
    body.inputs += [value_info(it_name, INT64, []), value_info(c_name, BOOL, []),
                    value_info(v_name, x.dtype, list(x.shape))]
    v = body.op("Tanh", [Value(v_name, x.dtype, x.shape)], x.dtype, x.shape)
    body.op("Neg", [v], x.dtype, x.shape)  # read by nothing
    c_out = Value(c_name, BOOL, ())
    if b.rng.random() < 0.3:
        c_out = body.op("Identity", [c_out], BOOL, ())
    body.outputs.append(value_info(c_out.name, BOOL, []))
    body.output_names.add(c_out.name)
    body.graph_output(v)
    scan = b.rng.random() < 0.5
    if scan:
        body.outputs.append(value_info(v.name, x.dtype, list(x.shape)))
    names = b.node("Loop", [trip.name, cond, x.name], n_out=2 if scan else 1,
                   body=body.graph("loop_body"))
    y = b.add(Value(names[0], x.dtype, x.shape))
    if scan:
        b.add(Value(names[1], x.dtype, (trip_count, *x.shape)))
    return y


def _ml_fold(b: GraphBuilder, x: Value) -> Value:
    """``ai.onnx.ml`` Binarizer of a constant or of ``x``, added to ``x``: all its inputs
    constant, yet the folder keeps it (onnx's reference evaluator, which it asks, loads
    default-domain ops only)."""
    if b.rng.random() < 0.7:
        src = weight(b, (x.shape[-1],), FLOAT, "Binarizer")
        out = (x.shape[-1],)
    else:
        src, out = x, x.shape
    y = b.add(Value(b.node("Binarizer", [src.name], domain="ai.onnx.ml",
                           threshold=b.rng.choice([0.0, 0.25]))[0], FLOAT, out))
    return b.op("Add", [x, y], FLOAT, x.shape)


MOTIFS = (
    ort_motif("os-cse-twins", ("CommonSubexpressionEliminationPass",),
              repeat(_cse_twins, 2),
              anchors=("Transpose", "LeakyRelu")),
    ort_motif("os-unused-outputs", ("RemoveUnusedNodesPass",), repeat(_unused_outputs, 2),
              anchors=("Dropout", "MaxPool")),
    ort_motif("os-loop-passthrough", ("OutputFixPass", "RemoveUnusedNodesPass"),
              _loop_passthrough, since=11, anchors=("Loop",)),
    ort_motif("os-ml-fold", ("FoldConstantsPass",), _ml_fold, since=9),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 143
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
