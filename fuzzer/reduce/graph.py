"""Graph facts the reducer needs: which names a node reads (its subgraphs' outer-scope
references included) and writes, which nodes a set of outputs depends on, and a model with
another graph built without copying the model's own.

ONNX keeps ``graph.node`` in topological order, so a node's index is its place in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fuzzer.modelio.graphs import count_nodes, subgraphs

__all__ = ["ancestors", "copy_fields", "count_nodes", "descendants", "outer_references",
           "produced_names", "producers", "reads", "subgraphs", "with_graph", "writes"]


def outer_references(graph: Any) -> set[str]:
    """Names ``graph`` (a subgraph) reads from enclosing scopes."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {t.name for t in graph.sparse_initializer}
    needed: set[str] = set()
    for node in graph.node:
        needed.update(n for n in reads(node) if n not in defined)
        defined.update(node.output)
    needed.update(o.name for o in graph.output if o.name not in defined)
    return needed


def reads(node: Any) -> list[str]:
    """Names ``node`` reads: its non-empty inputs, then its subgraphs' outer references."""
    names = [n for n in node.input if n]
    for sub in subgraphs(node):
        names.extend(sorted(outer_references(sub)))
    return names


def writes(node: Any) -> list[str]:
    """Non-empty output names of ``node``."""
    return [n for n in node.output if n]


def produced_names(graph: Any) -> list[str]:
    """Every tensor name produced by a node of ``graph`` (main level only), in order."""
    return [n for node in graph.node for n in writes(node)]


def producers(nodes: Sequence[Any]) -> dict[str, int]:
    """``{tensor name: index of the node writing it}``."""
    return {name: i for i, node in enumerate(nodes) for name in writes(node)}


def ancestors(nodes: Sequence[Any], outputs: Iterable[str]) -> list[int]:
    """Indices (ascending) of the nodes that ``outputs`` depend on."""
    made = producers(nodes)
    keep: set[int] = set()
    stack = [made[o] for o in outputs if o in made]
    while stack:
        index = stack.pop()
        if index in keep:
            continue
        keep.add(index)
        stack.extend(made[n] for n in reads(nodes[index]) if n in made)
    return sorted(keep)


def copy_fields(source: Any, target: Any, skip: Iterable[str] = ()) -> None:
    """Copy every field set in the protobuf message ``source`` into ``target`` (of the same
    type), except the fields named in ``skip``."""
    for field, value in source.ListFields():
        if field.name in skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def with_graph(model: Any, graph: Any) -> Any:
    """A new ``onnx.ModelProto`` with every field of ``model`` but its graph, and a copy of
    ``graph`` as its graph. Copying ``model`` whole and then replacing its graph would copy
    every initializer of the original first (54 MB for one OCR model, per candidate)."""
    import onnx

    new = onnx.ModelProto()
    copy_fields(model, new, ("graph",))
    new.graph.CopyFrom(graph)
    return new


def descendants(nodes: Sequence[Any], start: int) -> list[int]:
    """Indices (ascending) of ``nodes[start]`` and of every node that depends on it."""
    reached = set(writes(nodes[start]))
    keep = [start]
    for index in range(start + 1, len(nodes)):
        if any(n in reached for n in reads(nodes[index])):
            keep.append(index)
            reached.update(writes(nodes[index]))
    return keep
