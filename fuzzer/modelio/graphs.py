"""Walking an ONNX model: its subgraphs (If branches, Loop/Scan bodies), its stored tensors,
its op types, and node counts that include every subgraph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def subgraphs(node: Any) -> list[Any]:
    """GraphProtos held by ``node``'s attributes (If branches, Loop/Scan bodies)."""
    found = []
    for attr in node.attribute:
        if attr.HasField("g"):
            found.append(attr.g)
        found.extend(attr.graphs)
    return found


def iter_graphs(graph: Any) -> Iterator[Any]:
    """Yield ``graph`` and every subgraph (If/Loop/Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from iter_graphs(attr.g)
            for sub in attr.graphs:
                yield from iter_graphs(sub)


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


def count_all_nodes(graph: Any) -> int:
    """Nodes of ``graph`` (a GraphProto) including every subgraph's nodes."""
    return sum(1 + sum(count_all_nodes(g) for g in subgraphs(n)) for n in graph.node)


def node_count(model_bytes: bytes) -> int:
    """Nodes of a serialized model, subgraphs included (:func:`count_all_nodes`)."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(model_bytes)
    return count_all_nodes(model.graph)


def op_types(model: Any) -> set[str]:
    """Op types of every node of ``model`` (an ``onnx.ModelProto``), subgraphs included."""
    return {node.op_type for graph in iter_graphs(model.graph) for node in graph.node}
