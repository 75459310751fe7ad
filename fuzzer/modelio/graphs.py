"""Walking an ONNX model: its subgraphs (If branches, Loop/Scan bodies), its stored tensors,
its op types, and node counts that include every subgraph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from oracles.base import count_nodes, iter_graphs, subgraphs

__all__ = ["count_nodes", "iter_graphs", "iter_tensors", "node_count", "op_types",
           "subgraphs"]


def iter_tensors(graph: Any) -> Iterator[Any]:
    """Yield every TensorProto stored in ``graph`` and its subgraphs: initializers and the
    tensors held by node attributes (e.g. Constant's ``value``)."""
    for g in iter_graphs(graph):
        yield from g.initializer
        for node in g.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t
                yield from attr.tensors


def node_count(model_bytes: bytes) -> int:
    """Nodes of a serialized model, subgraphs included (:func:`count_nodes`)."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(model_bytes)
    return count_nodes(model.graph)


def op_types(model: Any) -> set[str]:
    """Op types of every node of ``model`` (an ``onnx.ModelProto``), subgraphs included."""
    return {node.op_type for graph in iter_graphs(model.graph) for node in graph.node}
