"""Recorded values: every main-graph tensor of the original model, from one reference run.

A cut or a deleted node leaves tensors whose producer is gone; the reducer feeds them the
value they had in the original run, so the part of the model that remains computes exactly
what it computed before (Polygraphy ``debug reduce`` does the same with layerwise outputs).
Call :func:`record_sandboxed` from a campaign: the run (and shape inference) happens in a
sandbox worker, so a model that crashes onnxruntime cannot take the campaign down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuzzer.reduce.graph import produced_names


@dataclass
class Recorded:
    """Values and types of the original model's tensors.

    Attributes:
        values: ``{tensor name: ndarray}`` for every main-graph tensor onnxruntime could
            return (graph inputs included, sequences and optionals left out).
        types: ``{tensor name: TypeProto}`` from strict-free shape inference of the original
            (may hold symbolic dims, so a dynamic model stays dynamic).
    """

    values: dict[str, np.ndarray] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)


def infer_types(model: Any) -> dict[str, Any]:
    """``{name: TypeProto}`` of graph inputs, outputs and inferred value_info (main graph);
    empty when shape inference fails."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    graph = inferred.graph
    return {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]
            if v.type.HasField("tensor_type")}


def record(model: Any, feeds: dict[str, np.ndarray] | None) -> Recorded:
    """Run ``model`` once in onnxruntime with every intermediate tensor as a graph output.

    Args:
        model: the original ``onnx.ModelProto`` (not modified).
        feeds: its input feeds ``{name: ndarray}``; None synthesizes inputs (seed 0).

    Returns:
        A :class:`Recorded`; ``values`` holds only the graph inputs when the run fails.
    """
    import onnx

    from fuzzer.execution.reference import make_session, run_session

    if feeds is None:
        from generators.inputs import synthesize_inputs

        feeds = synthesize_inputs(model, 0, {})
    recorded = Recorded(values=dict(feeds), types=infer_types(model))
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    for name in produced_names(probe.graph):
        if name and name not in known:
            probe.graph.output.append(onnx.ValueInfoProto(name=name))
            known.add(name)
    try:
        values = run_session(make_session(probe.SerializeToString()), feeds)
    except Exception:
        return recorded
    for name, value in values.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            recorded.values[name] = value
    return recorded


def _record_bytes(data: bytes, feeds: dict[str, np.ndarray] | None) -> Recorded:
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    return record(model, feeds)


def record_sandboxed(sandbox: Any, model: Any, feeds: dict[str, np.ndarray] | None) -> Recorded:
    """:func:`record` run in ``sandbox``'s workers; only the feeds are known where the
    worker dies, hangs or fails."""
    try:
        return sandbox.call(_record_bytes, model.SerializeToString(), feeds)
    except Exception:
        return Recorded(values=dict(feeds or {}))
