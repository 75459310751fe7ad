"""Cutting a failing model by moving its graph outputs and inputs, after Polygraphy
``debug reduce`` (NVIDIA TensorRT tools): bisection over the topological order first, then a
linear pass over the nodes that remain.

- Output cut: make the outputs of node ``i`` the only graph outputs and drop what they do not
  depend on; bisection finds the earliest ``i`` that still fails.
- Input cut: drop nodes ``0..j-1``; what the rest reads from them becomes graph inputs fed
  with recorded values (see :mod:`fuzzer.reduce.candidate`); bisection finds the latest ``j``.
  Then, as Polygraphy's input cut (which makes node ``j``'s inputs the graph inputs and
  freezes the other branches to constants), one candidate keeps only node ``j`` and what
  depends on it.

Cut points are the nodes whose outputs depend on the graph inputs: a node computing constants
only (a Constant, a shape computation on weights) is never a useful cut, and a model exported
from PyTorch can have more of them than real nodes (878 of 1,493 in one detector); Polygraphy
folds them into initializers before it bisects. The bisections probe several cut points per
round where the predicate runs checks in parallel (k-ary search,
:func:`fuzzer.delta.section.first_true`). Bisection assumes the failure is monotone along the
order; the linear pass and ddmin (:mod:`fuzzer.reduce.delete`) repair what it misses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fuzzer.delta.ddmin import ddmin
from fuzzer.delta.section import first_true
from fuzzer.reduce.graph import descendants, writes
from fuzzer.reduce.state import Context, Cut, State

#: ``k -> `` the cut of cut point ``k``.
CutAt = Callable[[int], Cut]


def cut_points(state: State, ctx: Context) -> list[int]:
    """Indices of ``state.nodes`` that write a tensor depending on the graph inputs (all
    indices where no node does)."""
    data = ctx.builder.data
    points = [i for i, node in enumerate(state.nodes) if any(n in data for n in writes(node))]
    return points or list(range(len(state.nodes)))


#: the output search stops at a failing cut with at most this many cut points. At 2 the
#: input cut and the linear pass then spent up to four checks where the search needed one
#: more (a node whose consumer was cut with it: 9 checks instead of 6 on a 12-node model);
#: at 1 no model of benchmarks/reduce_vs_polygraphy.py needed more checks.
FEW = 1


def search_cut(points: Sequence[int], cut: CutAt, ctx: Context, guess: int | None = None,
               few: int = 0, follow: CutAt | None = None) -> State | None:
    """The failing candidate ``cut(points[k])`` of the smallest ``k`` (under the bisection's
    monotony assumption), found by :func:`fuzzer.delta.section.first_true` with as many
    candidates per round as the predicate can check at once, ``k = guess`` first where
    given, stopping at a failing candidate with at most ``few`` cut points; None when
    none failed.

    ``follow(points[k])`` is a cut of one node inside ``cut(points[k])``: the next step's
    first candidate where the answer is ``k``. The search's last round, whose probes leave
    checks free, checks first the follow-ups of its probes and of the smallest failing
    ``k`` above them, simplified and all at once (the answer is one of these ``k``): where
    one fails, that one node is the answer, and the probes are never run; else the probes
    run in the next round."""
    found: dict[int, State] = {}

    def alone_first(indices: Sequence[int]) -> list[bool] | None:
        assert follow is not None
        above = [k for k in found if k > indices[-1]]
        answers = [*indices, min(above)] if above else list(indices)
        states = ctx.try_cuts([follow(points[k]) for k in answers], simplest=True)
        hit = next(((k, s) for k, s in zip(answers, states, strict=True) if s is not None),
                   None)
        if hit is None:
            return None
        found[hit[0]] = hit[1]
        return [k >= hit[0] for k in indices]

    def test(indices: Sequence[int]) -> list[bool]:
        if follow is not None and len(indices) < ctx.width():
            verdicts = alone_first(indices)
            if verdicts is not None:
                return verdicts
        states = ctx.try_cuts([cut(points[k]) for k in indices])
        found.update((k, s) for k, s in zip(indices, states, strict=True) if s is not None)
        return [s is not None for s in states]

    def enough(k: int) -> bool:
        return len(cut_points(found[k], ctx)) <= few

    best = first_true(len(points), test, ctx.width, guess, enough)
    return None if best is None else found[best]


def bisect_outputs(state: State, ctx: Context) -> State:
    """Earliest cut point whose outputs, as the only graph outputs, still fail (or a failing
    one with at most :data:`FEW` cut points)."""
    nodes = state.nodes
    best = search_cut(cut_points(state, ctx), lambda i: (nodes, writes(nodes[i])), ctx,
                      few=FEW, follow=lambda i: ([nodes[i]], writes(nodes[i])))
    return best if best is not None and len(best.nodes) < len(state.nodes) else state


def bisect_inputs(state: State, ctx: Context) -> State:
    """Latest cut point ``j`` such that ``nodes[j:]`` (the rest fed recorded values) still
    fails; then the candidate of its first cut point and what depends on it (Polygraphy's
    input cut), kept where it fails with fewer nodes.

    The smartest first cut is the last cut point alone: after the output cut, the failure
    needs that node, and often nothing else (a one-node candidate is tried simplified
    first, see :meth:`fuzzer.reduce.state.Context.try_cut`); the bisection goes on below it.
    """
    nodes = state.nodes
    if len(nodes) <= 1:  # nothing to cut away; the simplification step tries its edits
        return state
    points = cut_points(state, ctx)[::-1]
    found = ctx.try_cut(nodes[points[0]:], state.outputs)
    if found is not None and len(found.nodes) < len(nodes):
        return found
    best = search_cut(points, lambda j: (nodes[j:], state.outputs), ctx, guess=0) or state
    first = cut_points(best, ctx)[0]
    below = descendants(best.nodes, first)
    if len(below) < len(best.nodes):
        found = ctx.try_cut([best.nodes[i] for i in below], best.outputs)
        if found is not None and len(found.nodes) < len(best.nodes):
            return found
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
