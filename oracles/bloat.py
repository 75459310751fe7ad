"""Bloat oracle: the optimized model is larger than the original: more nodes (subgraphs
included), or unused initializers left behind where the configuration asked for their removal.

Passes of a pass-based optimizer routinely leave the initializers of the nodes they removed
for a clean-up pass (onnxoptimizer's ``eliminate_unused_initializer``); such leftovers are
bloat only when the clean-up ran after every pass that could orphan an initializer
(:func:`cleanup_ran_last`), or when the configuration has no pass list at all (the target
promises a finished model).
"""

from __future__ import annotations

from typing import Any

from oracles.base import Finding, Outcome, oracle

#: The pass whose job is to remove unused initializers.
CLEANUP_PASS = "eliminate_unused_initializer"
#: Passes that never orphan an initializer: they may run after the clean-up.
NON_ORPHANING = frozenset({CLEANUP_PASS, "eliminate_duplicate_initializer", "rewrite_where",
                           "nop"})


def cleanup_ran_last(passes: list[str] | None) -> bool:
    """Whether unused initializers left by a run with ``passes`` count as bloat: no pass
    list at all, or the clean-up pass followed only by passes in :data:`NON_ORPHANING`."""
    if passes is None:
        return True
    if CLEANUP_PASS not in passes:
        return False
    last = len(passes) - 1 - passes[::-1].index(CLEANUP_PASS)
    return all(p in NON_ORPHANING for p in passes[last:])


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


@oracle("bloat")
def bloat(outcome: Outcome) -> list[Finding]:
    """More nodes than before, or unused initializers left behind."""
    if outcome.status != "ok" or outcome.original is None or outcome.optimized is None:
        return []
    before, after = count_nodes(outcome.original.graph), count_nodes(outcome.optimized.graph)
    if after > before:
        return [Finding("bloat", "compare", f"node count grew from {before} to {after}",
                        {"nodes_before": before, "nodes_after": after})]
    if not cleanup_ran_last((outcome.extra.get("config") or {}).get("passes")):
        return []
    left = unused_initializers(outcome.optimized.graph)
    if left:
        return [Finding("bloat", "compare", f"{len(left)} unused initializer(s) left behind",
                        {"unused_initializers": left[:20]})]
    return []
