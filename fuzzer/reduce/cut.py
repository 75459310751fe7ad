"""Cutting a failing model by moving its graph outputs and inputs, after Polygraphy
``debug reduce`` (NVIDIA TensorRT tools): bisection over the topological order first, then a
linear pass over the nodes that remain.

- Output cut: make the outputs of node ``i`` the only graph outputs and drop what they do not
  depend on; bisection finds the earliest ``i`` that still fails.
- Input cut: drop nodes ``0..j-1``; what the rest reads from them becomes graph inputs fed
  with recorded values (see :mod:`fuzzer.reduce.candidate`); bisection finds the latest ``j``.
Bisection assumes the failure is monotone along the order; the linear pass and ddmin
(:mod:`fuzzer.reduce.delete`) repair what it misses.
"""

from __future__ import annotations

from fuzzer.delta.ddmin import ddmin
from fuzzer.reduce.graph import writes
from fuzzer.reduce.state import Context, State


def bisect_outputs(state: State, ctx: Context) -> State:
    """Earliest node whose outputs, as the only graph outputs, still fail (bisection)."""
    nodes = state.nodes
    best: State | None = None
    low, high = 0, len(nodes) - 1
    while low <= high:
        mid = (low + high) // 2
        found = ctx.try_cut(nodes, writes(nodes[mid]))
        if found is not None:
            best, high = found, mid - 1
        else:
            low = mid + 1
    return best if best is not None and len(best.nodes) < len(state.nodes) else state


def bisect_inputs(state: State, ctx: Context) -> State:
    """Latest start index ``j`` such that ``nodes[j:]`` (the rest fed recorded values) still
    fails (bisection)."""
    nodes = state.nodes
    best = state
    low, high = 1, len(nodes) - 1
    while low <= high:
        mid = (low + high) // 2
        found = ctx.try_cut(nodes[mid:], state.outputs)
        if found is not None:
            best, low = found, mid + 1
        else:
            high = mid - 1
    return best


def subset_outputs(state: State, ctx: Context) -> State:
    """ddmin over the graph outputs (a failure may need only some of them)."""
    if len(state.outputs) < 2:
        return state
    best = state

    def fails(outputs: list[str]) -> bool:
        nonlocal best
        found = ctx.try_cut(state.nodes, outputs)
        if found is not None and len(found.nodes) <= len(best.nodes):
            best = found
            return True
        return False

    ddmin(state.outputs, fails)
    return best


def linear_outputs(state: State, ctx: Context) -> State:
    """Try each remaining node's outputs as the only graph outputs, latest node first,
    keeping every cut that still fails with fewer nodes."""
    index = len(state.nodes) - 2
    while index >= 0:
        if index < len(state.nodes):
            found = ctx.try_cut(state.nodes, writes(state.nodes[index]))
            if found is not None and len(found.nodes) < len(state.nodes):
                state = found
                index = len(state.nodes) - 1
        index -= 1
    return state
