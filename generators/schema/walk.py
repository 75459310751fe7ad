"""The walk of a motif's plan: the steps consecutive row-taking draws of the motif take.

A motif whose every draw makes all its anchor ops walks its plan's rows in order, one step
per row. A motif of *variants* (one draw makes an Add, another an Expand:
:func:`generators.schema.plan.always_made`) takes of a row only the levels of the anchors
its draw makes, so a walk of its rows alone covers about one variant's share of each
anchor's pairs. Its walk visits a row once per anchor op made apart that the row gives
levels to and can take it with (a row built under another variant's ties may give ``op``
a type its own tied ops do not get: :func:`generators.schema.plan.variant_conflict`):
step ``(row, op)`` *aims* the draw at ``op``
(:func:`generators.schema.apply.emit_for_row` emits until the draw makes it, and the motifs
read the aim to pick that variant: :meth:`generators.builder.GraphBuilder.variant`), and
covers ``op``'s pairs of the row with those of the anchors every draw makes. The steps
that add pairs come first, most new pairs first (the greedy set cover: Johnson,
"Approximation algorithms for combinatorial problems", JCSS 9, 1974), so that the first
steps of a walk cover the most, as the first rows of a plan do; every row no such step
visits follows (another chance at pairs a draw could not take), aimed at the ops apart in
turn.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from functools import cache

from generators.schema.plan import (
    always_made,
    motif_plan,
    op_pairs_with_opset,
    variant_conflict,
)
from generators.schema.rows import MotifPlan
from generators.schema.space import Pair


@dataclass(frozen=True)
class Step:
    """One step of a plan's walk.

    Attributes:
        row: index of the plan row the draw takes.
        aim: the anchor op the draw is to make; None: the anchors the row gives levels to.
    """

    row: int
    aim: str | None = None


@cache
def walk_steps(name: str) -> tuple[Step, ...]:
    """The steps of the walk of motif ``name``'s plan (see the module docstring); empty
    where the motif has no plan."""
    plan = motif_plan(name)
    if plan is None:
        return ()
    apart = [op for op in plan.spaces if op not in always_made(name, *plan.opsets)]
    if not apart:
        return tuple(Step(i) for i in range(len(plan.rows)))
    return _cover(plan, apart)


def _cover(plan: MotifPlan, apart: list[str]) -> tuple[Step, ...]:
    """The greedy cover of ``plan``'s feasible pairs by steps ``(row, op)`` for the ops
    ``apart`` (and ``(row, None)`` for a row that gives none of them levels), each holding
    its op's pairs of the row and those of the other anchors (ties go to the earlier row,
    then the earlier op of ``plan.spaces``); then a step for each row the cover does not
    visit, aimed at the next of ``apart`` the row gives levels to (None where it gives
    none)."""
    feasible = {(op, p) for op, ps in plan.pairs.items() for p in ps}
    aims = [_aims(plan, i, apart) for i in range(len(plan.rows))]
    candidates: list[tuple[Step, frozenset[tuple[str, Pair]]]] = []
    for i, row in enumerate(plan.rows):
        pairs = op_pairs_with_opset(row, plan.spaces) & feasible
        shared = {(op, p) for op, p in pairs if op not in apart}
        candidates += [(Step(i, op), frozenset(shared | {(o, p) for o, p in pairs if o == op}))
                       for op in aims[i]] or [(Step(i), frozenset(shared))]
    left = set().union(*(s for _, s in candidates))
    heap = [(-len(s), k) for k, (_, s) in enumerate(candidates)]
    heapq.heapify(heap)
    steps: list[Step] = []
    while heap and left:  # lazy greedy: a candidate's gain only shrinks
        _, k = heapq.heappop(heap)
        gain = len(candidates[k][1] & left)
        if not gain:
            continue
        if heap and (-gain, k) > heap[0]:
            heapq.heappush(heap, (-gain, k))
            continue
        steps.append(candidates[k][0])
        left -= candidates[k][1]
    visited = {s.row for s in steps}
    for turn, i in enumerate(i for i in range(len(plan.rows)) if i not in visited):
        steps.append(Step(i, aims[i][turn % len(aims[i])] if aims[i] else None))
    return tuple(steps)


def _aims(plan: MotifPlan, row: int, apart: list[str]) -> list[str]:
    """The ops of ``apart`` that row ``row`` of ``plan`` gives levels to and that a draw
    aimed at can take the row with (:func:`generators.schema.plan.variant_conflict`)."""
    return [op for op in apart if plan.op_row(plan.rows[row], op)
            and variant_conflict(plan, plan.rows[row], op) is None]


#: a note of :func:`generators.schema.apply.vary` that a draw made no node of an anchor op.
_NO_NODE = re.compile(r"^(?P<op>[^|*]+)\|\*: the draw made no (?P=op) node$")


def aimed_notes(notes: list[str], aim: str | None) -> list[str]:
    """``notes`` of a draw that took a step aimed at ``aim``, without the notes that it made
    no node of another anchor op (a draw aimed at one variant makes no other by design;
    that it made no ``aim`` node is kept). Returns ``notes`` as they are where ``aim`` is
    None."""
    if aim is None:
        return notes
    return [n for n in notes if (m := _NO_NODE.match(n)) is None or m["op"] == aim]
