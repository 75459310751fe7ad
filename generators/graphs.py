"""Scopes of an ONNX graph: the subgraphs a node holds (If branches, Loop and Scan bodies),
the names a graph defines, the names a subgraph reads from its enclosing scopes, and every
tensor a node reads (its inputs and its subgraphs' outer references).

Read by the mutators (:mod:`generators.mutate.graph`, which edits graphs with them) and by
the schema variation's shape follow-up (:mod:`generators.schema.reshape`), which sit on
either side of :mod:`generators.generate`: this module imports nothing of the generator.
"""

from __future__ import annotations

from onnx import AttributeProto, GraphProto, NodeProto


def subgraphs(node: NodeProto) -> list[GraphProto]:
    """The graphs held by ``node``'s attributes (If branches, Loop and Scan bodies)."""
    out: list[GraphProto] = []
    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            out.append(a.g)
        elif a.type == AttributeProto.GRAPHS:
            out.extend(a.graphs)
    return out


def defined(graph: GraphProto) -> list[str]:
    """Names ``graph`` itself defines: inputs, initializers, node outputs (in that order)."""
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    names += [t.values.name for t in graph.sparse_initializer]
    names += [o for n in graph.node for o in n.output if o]
    return list(dict.fromkeys(names))


def outer_refs(graph: GraphProto) -> list[str]:
    """Names a subgraph reads from its enclosing scopes (read but not defined in it)."""
    own = set(defined(graph))
    refs = [r for n in graph.node for r in reads(n) if r not in own]
    refs += [o.name for o in graph.output if o.name not in own]
    return list(dict.fromkeys(refs))


def reads(node: NodeProto) -> list[str]:
    """Tensors ``node`` reads: its non-empty inputs, then its subgraphs' outer references."""
    names = [i for i in node.input if i]
    for g in subgraphs(node):
        names += outer_refs(g)
    return list(dict.fromkeys(names))
