"""Simplification after the node-level steps: each edit of :data:`fuzzer.reduce.edits.EDITS`
is kept only where the failure survives it (greedy, one edit at a time, as C-Reduce's
transformation passes).
"""

from __future__ import annotations

from fuzzer.reduce.candidate import Built
from fuzzer.reduce.edits import EDITS, PRESERVING, apply_all
from fuzzer.reduce.state import Context, State


def simplify(state: State, ctx: Context) -> State:
    """Apply every edit of :data:`fuzzer.reduce.edits.EDITS` that keeps the failure; returns
    the final state.

    All edits together come first, then the :data:`fuzzer.reduce.edits.PRESERVING` ones
    together: where the failure survives them, one check replaces one per edit. The families
    not yet applied are then tried one edit at a time. Where the predicate checks several
    candidates at once, the groups and the first single edits on top of the preserving group
    are started together (:func:`_started`), so that the usual outcome, the preserving group
    kept and then one edit, costs one round of checks instead of two."""
    families = list(EDITS)
    groups = [families, [f for f in families if f in PRESERVING]]
    candidates = [apply_all(state.built, group) for group in groups]
    _started(ctx, candidates, [f for f in families if f not in PRESERVING])
    for group, candidate in zip(groups, candidates, strict=True):
        if candidate is not None and ctx.predicate(candidate):
            state = ctx.keep(candidate)
            families = [f for f in families if f not in group]
            break
    for family in families:
        for edit in EDITS[family](state.built):
            candidate = edit(state.built)
            if candidate is not None and ctx.predicate(candidate):
                state = ctx.keep(candidate)
    return state


def _started(ctx: Context, groups: list[Built | None], rest: list[str]) -> None:
    """Where the predicate runs checks at once, start checking the group candidates and
    then, speculatively, the first single edits of ``rest`` on the last (preserving) group
    (:meth:`fuzzer.reduce.predicate.Predicate.speculate`); the loop of :func:`simplify`
    then finds their verdicts cached."""
    predicate = ctx.predicate
    if predicate.parallel <= 1:
        return
    started = [c for c in groups if c is not None]
    base = groups[-1]
    if base is not None:
        for family in rest:
            started += [e(base) for e in EDITS[family](base)]
    predicate.speculate(started)
