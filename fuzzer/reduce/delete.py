"""Deleting nodes inside the cut: ddmin (Zeller & Hildebrandt 2002) over the remaining nodes.

A deleted node is bypassed by the builder: each tensor it wrote that a kept node reads gets
its recorded value (a graph input, or an initializer for constant-derived tensors; see
:mod:`fuzzer.reduce.candidate`), so the kept nodes compute what they computed before. A graph
output written by a deleted node is replaced by the tensors of kept nodes it was computed
from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fuzzer.delta.ddmin import ddmin
from fuzzer.reduce.graph import producers, reads, writes
from fuzzer.reduce.state import Context, State


def retarget(nodes: Sequence[Any], keep: Sequence[int], outputs: Sequence[str]) -> list[str]:
    """Graph outputs for the nodes ``keep`` (indices into ``nodes``): each output written by
    a deleted node is replaced by the nearest tensors written by kept nodes that it depends
    on; when none exist, the kept nodes' outputs that no kept node reads."""
    made = producers(nodes)
    kept = set(keep)
    result: list[str] = []
    seen: set[str] = set()
    stack = list(reversed(outputs))
    while stack:
        name = stack.pop()
        if name in seen or name not in made:
            continue
        seen.add(name)
        if made[name] in kept:
            result.append(name)
        else:
            stack.extend(reversed(reads(nodes[made[name]])))
    if not result:
        read = {n for i in keep for n in reads(nodes[i])}
        result = [n for i in keep for n in writes(nodes[i]) if n not in read]
    return list(dict.fromkeys(result))


def delete_nodes(state: State, ctx: Context) -> State:
    """ddmin over ``state.nodes``; returns the smallest failing candidate found."""
    nodes, best = state.nodes, state

    def fails(keep: list[int]) -> bool:
        nonlocal best
        found = ctx.try_cut([nodes[i] for i in keep], retarget(nodes, keep, state.outputs))
        if found is not None and len(found.nodes) < len(best.nodes):
            best = found
            return True
        return found is not None and len(found.nodes) <= len(keep)

    ddmin(list(range(len(nodes))), fails)
    return best
