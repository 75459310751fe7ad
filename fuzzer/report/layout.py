"""A layered (Sugiyama-style, one barycentre sweep) top-to-bottom layout of a DAG.

Coordinates are abstract units: layer ``k`` at ``y = -k``, vertices one unit apart in x and
centred on 0.
"""

from __future__ import annotations

import networkx as nx


def layers(g: nx.DiGraph) -> list[list[str]]:
    """Vertices per layer, each at its longest distance from a source; graph outputs go to
    the last layer. A cyclic graph (invalid ONNX) falls back to insertion order, one per
    layer."""
    if not nx.is_directed_acyclic_graph(g):
        return [[v] for v in g.nodes]
    depth: dict[str, int] = {}
    for v in nx.topological_sort(g):
        depth[v] = max((depth[u] + 1 for u in g.predecessors(v)), default=0)
    # constants sit just above their first consumer, not at the top
    for v in g.nodes:
        if g.nodes[v].get("kind") == "initializer" and g.out_degree(v):
            depth[v] = max(0, min(depth[w] for w in g.successors(v)) - 1)
    last = max(depth.values(), default=0)
    for v in g.nodes:
        if g.nodes[v].get("kind") == "output":
            depth[v] = last
    rows: list[list[str]] = [[] for _ in range(last + 1)]
    for v in g.nodes:
        rows[depth[v]].append(v)
    return [row for row in rows if row]


def layered_positions(g: nx.DiGraph) -> dict[str, tuple[float, float]]:
    """Vertex -> (x, y): layers from :func:`layers`, each ordered by the mean x of its
    predecessors (fewer crossings), centred on x = 0."""
    pos: dict[str, tuple[float, float]] = {}
    for k, row in enumerate(layers(g)):
        def barycentre(v: str) -> float:
            xs = [pos[u][0] for u in g.predecessors(v) if u in pos]
            return sum(xs) / len(xs) if xs else 0.0
        ordered = sorted(row, key=barycentre) if k else row
        for i, v in enumerate(ordered):
            pos[v] = (i - (len(ordered) - 1) / 2, -float(k))
    return pos
