"""Building a candidate model from a subset of the original's nodes and a choice of outputs.

Every reduction step describes a candidate as ``(nodes, outputs)``: the main-graph nodes to
keep (topological order) and the tensors to make graph outputs. :class:`Builder` turns that
into a model and its feeds: nodes the outputs do not depend on are dropped, and every tensor a
kept node reads whose producer is gone becomes

- a **graph input** fed with its recorded value, when it depends on the original's graph
  inputs (data), or
- an **initializer** holding its recorded value, when it was computed from constants only
  (a weight, a shape), so passes that need constant operands still see one.

This single rule implements Polygraphy ``debug reduce``'s output and input cuts as well as the
bypass of a deleted node (ddmin step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzzer.reduce.graph import ancestors, reads, with_graph, writes
from fuzzer.reduce.values import Recorded

#: highest IR version onnxruntime 1.31 reads.
MAX_IR_VERSION = 13


@dataclass
class Built:
    """A candidate: ``model`` (onnx.ModelProto) and ``feeds`` ``{graph input: ndarray}``."""

    model: Any
    feeds: dict[str, np.ndarray]


def data_dependent(graph: Any) -> set[str]:
    """Main-graph tensor names that depend on a graph input that is not an initializer."""
    inits = {t.name for t in graph.initializer}
    tainted = {i.name for i in graph.input if i.name not in inits}
    for node in graph.node:
        if any(n in tainted for n in reads(node)):
            tainted.update(writes(node))
    return tainted


def _value_info(name: str, type_proto: Any | None, value: np.ndarray | None,
                with_shape: bool = True) -> Any:
    import onnx

    info = onnx.ValueInfoProto(name=name)
    if type_proto is not None:
        info.type.CopyFrom(type_proto)
        return info
    assert value is not None
    info.type.tensor_type.elem_type = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
    info.type.tensor_type.shape.SetInParent()  # the checker wants a shape on graph inputs
    for size in value.shape:
        dim = info.type.tensor_type.shape.dim.add()
        if with_shape:
            dim.dim_value = size
    return info


def forget_dims(info: Any) -> None:
    """Keep the rank of ``info``'s tensor type but make every dim unknown."""
    shape = info.type.tensor_type.shape
    rank = len(shape.dim)
    shape.ClearField("dim")
    for _ in range(rank):
        shape.dim.add()


class Builder:
    """Turns ``(nodes, outputs)`` into a :class:`Built` against one original model.

    Args:
        model: the original ``onnx.ModelProto`` (not modified).
        feeds: the original's input feeds, or None where the check supplies its own inputs
            (``--check`` mode: new graph inputs then carry a shape, no value).
        recorded: values and types from :func:`fuzzer.reduce.values.record`.
    """

    def __init__(self, model: Any, feeds: dict[str, np.ndarray] | None,
                 recorded: Recorded) -> None:
        graph = model.graph
        self.model = model
        self.feeds = feeds
        self.recorded = recorded
        self.initializers = {t.name: t for t in graph.initializer}
        self.inputs = {i.name: i for i in graph.input}
        self.outputs = {o.name: o for o in graph.output}
        self.value_info = {v.name: v for v in graph.value_info}
        self.data = data_dependent(graph)

    def build(self, nodes: Sequence[Any], outputs: Sequence[str]) -> Built | None:
        """The candidate keeping the ancestors of ``outputs`` among ``nodes``; None when a
        tensor it needs has neither a producer nor a recorded value, or no output remains."""
        import onnx

        kept = [nodes[i] for i in ancestors(nodes, outputs)]
        made = {n for node in kept for n in writes(node)}
        outputs = list(dict.fromkeys(o for o in outputs if o in made))
        if not outputs:
            return None
        needed = list(dict.fromkeys(n for node in kept for n in reads(node) if n not in made))
        model = with_graph(self.model, onnx.GraphProto(name=self.model.graph.name or "reduced"))
        graph = model.graph
        feeds: dict[str, np.ndarray] = {}
        for name in needed:
            if not self._source(name, graph, feeds):
                return None
        graph.node.extend(kept)
        for name in outputs:
            graph.output.append(self._output_info(name))
        graph.value_info.extend(self.value_info[n] for n in made
                                if n in self.value_info and n not in outputs)
        model.ir_version = min(model.ir_version, MAX_IR_VERSION)
        return Built(model, feeds)

    def _source(self, name: str, graph: Any, feeds: dict[str, np.ndarray]) -> bool:
        """Add what defines ``name`` (input, initializer or recorded value) to ``graph``."""
        from onnx import numpy_helper

        if name in self.initializers:
            graph.initializer.append(self.initializers[name])
            if name in self.inputs:  # IR < 4: initializers are listed among the inputs
                graph.input.append(self.inputs[name])
            return True
        if name in self.inputs:
            graph.input.append(self.inputs[name])
            if self.feeds is not None:
                if name not in self.feeds:
                    return False
                feeds[name] = self.feeds[name]
            return True
        value = self.recorded.values.get(name)
        if value is None:
            return False
        if name not in self.data:
            graph.initializer.append(numpy_helper.from_array(value, name))
            return True
        graph.input.append(_value_info(name, self._typed(name, value), value))
        if self.feeds is not None:
            feeds[name] = value
        return True

    def _typed(self, name: str, value: np.ndarray) -> Any | None:
        """The inferred type of ``name`` when it agrees with the recorded value's dtype and
        rank (symbolic dims kept), else None (the recorded value's shape is used)."""
        import onnx

        inferred = self.recorded.types.get(name)
        if inferred is None:
            return None
        tensor = inferred.tensor_type
        if tensor.elem_type != onnx.helper.np_dtype_to_tensor_dtype(value.dtype):
            return None
        if not tensor.HasField("shape") or len(tensor.shape.dim) != value.ndim:
            return None
        if not all(d.HasField("dim_value") or d.dim_param for d in tensor.shape.dim):
            return None
        return inferred

    def _output_info(self, name: str) -> Any:
        if name in self.outputs:
            return self.outputs[name]
        inferred = self.recorded.types.get(name)
        if inferred is not None and inferred.tensor_type.elem_type:
            return _value_info(name, inferred, None)
        value = self.recorded.values.get(name)  # loaded only where the type is unknown
        if value is not None:
            return _value_info(name, None, value, with_shape=False)
        import onnx

        info = onnx.ValueInfoProto(name=name)
        info.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        return info
