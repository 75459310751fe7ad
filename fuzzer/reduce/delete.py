"""Deleting nodes inside the cut: ddmin (Zeller & Hildebrandt 2002) over the remaining nodes.

A deleted node is bypassed by the builder: each tensor it wrote that a kept node reads gets
its recorded value (a graph input, or an initializer for constant-derived tensors; see
:mod:`fuzzer.reduce.candidate`), so the kept nodes compute what they computed before. A graph
output written by a deleted node is replaced by the tensors of kept nodes it was computed
from.

Where a deletion loses the failure and the model names tensors with plain numbers, the same
deletion is tried once more with those numbers lowered by the number of values it removed
(:func:`renumbered`). An optimizer that names its temporaries from a counter of the graph's
values (onnx's IR does: ``Graph::getNextUnique``) breaks when a tensor already carries the
name it generates; every value a deletion removes moves the counter, so the colliding name
must move with it, or the ddmin cannot shrink a name-collision bug past its first step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fuzzer.delta.ddmin import ddmin
from fuzzer.reduce.candidate import Built
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


def value_count(model: Any) -> int:
    """Values of ``model``'s main graph as onnx's IR numbers them: graph inputs,
    initializers that are not inputs, and node outputs."""
    graph = model.graph
    inputs = {i.name for i in graph.input}
    return len(inputs) + sum(t.name not in inputs for t in graph.initializer) + \
        sum(len(node.output) for node in graph.node)


def renumbered(built: Built, removed: int) -> Built | None:
    """``built`` with every tensor named by a plain number ``n >= removed`` renamed
    ``n - removed`` (see the module docstring), lowest first, each where its new name is
    free (else it keeps its name); None where nothing would change."""
    from fuzzer.reduce.edits import is_number, rename_tensors, tensor_names

    if removed <= 0:
        return None
    names = tensor_names(built.model)
    taken = set(names)
    mapping: dict[str, str] = {}
    for old in sorted((n for n in names if is_number(n) and int(n) >= removed), key=int):
        new = str(int(old) - removed)
        if new not in taken:
            mapping[old] = new
            taken.discard(old)
            taken.add(new)
    return rename_tensors(built, mapping) if mapping else None


def delete_nodes(state: State, ctx: Context) -> State:
    """ddmin over ``state.nodes``; returns the smallest failing candidate found."""
    nodes, best = state.nodes, state

    base = value_count(ctx.builder.model)

    def cut(kept: list[Any], outputs: list[str]) -> State | None:
        built = ctx.builder.build(kept, outputs)
        if built is None:
            return None
        found = ctx.try_built(built)
        if found is not None:
            return found
        shifted = renumbered(built, base - value_count(built.model))
        return ctx.try_built(shifted) if shifted is not None else None

    def fails(keep: list[int]) -> bool:
        nonlocal best
        found = cut([nodes[i] for i in keep], retarget(nodes, keep, state.outputs))
        if found is not None and len(found.nodes) < len(best.nodes):
            best = found
            return True
        return found is not None and len(found.nodes) <= len(keep)

    ddmin(list(range(len(nodes))), fails)
    return best
