"""Bloat oracle: the optimized model is larger than the original: more nodes (subgraphs
included), or unused initializers left behind where the target promises their removal.

Whether leftover initializers count is the target's knowledge, not the oracle's: a pass-based
optimizer routinely leaves the initializers of the nodes it removed for a clean-up pass, so
the target tells, per configuration, through ``Outcome.extra["unused_initializers_are_bloat"]``
(absent: True, a finished model is promised).
"""

from __future__ import annotations

from typing import Any

from oracles.base import Finding, Outcome, Symptom, register


def count_nodes(graph: Any) -> int:
    """Nodes of ``graph`` including every subgraph's nodes."""
    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            if attr.HasField("g"):
                total += count_nodes(attr.g)
            for sub in attr.graphs:
                total += count_nodes(sub)
    return total


def _used_names(graph: Any, used: set[str]) -> set[str]:
    for node in graph.node:
        used.update(node.input)
        for attr in node.attribute:
            if attr.HasField("g"):
                _used_names(attr.g, used)
                used.update(o.name for o in attr.g.output)
            for sub in attr.graphs:
                _used_names(sub, used)
                used.update(o.name for o in sub.output)
    used.update(o.name for o in graph.output)
    return used


def unused_initializers(graph: Any) -> list[str]:
    """Names of main-graph initializers read by no node, subgraph, or graph output, and not
    listed as graph inputs (IR < 4 overridable initializers are interface, not garbage)."""
    used = _used_names(graph, set())
    inputs = {i.name for i in graph.input}
    return [t.name for t in graph.initializer if t.name not in used and t.name not in inputs]


def bloat(outcome: Outcome) -> list[Finding]:
    """More nodes than before, or unused initializers left behind (where they count)."""
    if outcome.status != "ok" or outcome.original is None or outcome.optimized is None:
        return []
    before, after = count_nodes(outcome.original.graph), count_nodes(outcome.optimized.graph)
    if after > before:
        return [Finding("bloat", "compare", f"node count grew from {before} to {after}",
                        {"nodes_before": before, "nodes_after": after})]
    if not outcome.extra.get("unused_initializers_are_bloat", True):
        return []
    left = unused_initializers(outcome.optimized.graph)
    if left:
        return [Finding("bloat", "compare", f"{len(left)} unused initializer(s) left behind",
                        {"unused_initializers": left[:20]})]
    return []


register(Symptom(
    "bloat", 90, ("compare",), bloat, "makes the model larger",
    "The optimized model has no more nodes than the input and no unused initializers.",
    severity_class="size"))
