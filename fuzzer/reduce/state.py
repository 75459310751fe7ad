"""The reducer's current best candidate and what the steps share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fuzzer.reduce.candidate import Builder, Built
from fuzzer.reduce.edits import EDITS, apply_all
from fuzzer.reduce.graph import count_nodes
from fuzzer.reduce.predicate import Predicate

#: a cut: ``(nodes, graph output names)``.
Cut = tuple[list[Any], list[str]]


@dataclass
class State:
    """The smallest candidate known to fail the same way.

    Attributes:
        nodes: its main-graph nodes (NodeProtos of the original, topological order).
        outputs: its graph output names.
        built: the model and feeds built from them (possibly simplified further).
    """

    nodes: list[Any]
    outputs: list[str]
    built: Built


def size(state: State) -> tuple[int, int, int]:
    """Order of candidates: nodes (subgraphs included), then graph inputs plus initializers,
    then serialized bytes."""
    graph = state.built.model.graph
    return (count_nodes(graph), len(graph.input) + len(graph.initializer),
            state.built.model.ByteSize())


@dataclass
class Context:
    """What every step uses: the :class:`Builder` of candidates and the predicate.

    Attributes:
        best: the smallest failing state seen so far (see :func:`size`); what the reducer
            returns when its time budget runs out in the middle of a step.
    """

    builder: Builder
    predicate: Predicate
    best: State | None = None

    def offer(self, state: State) -> None:
        """Remember ``state`` (known to fail) if it is smaller than the best so far."""
        if self.best is None or size(state) < size(self.best):
            self.best = state

    def try_cut(self, nodes: list[Any], outputs: list[str]) -> State | None:
        """The state for ``(nodes, outputs)`` if it builds and still fails, else None.

        A candidate of one node is tried first with every simplification applied
        (:func:`fuzzer.reduce.edits.apply_all`): where the failure survives that, as it
        usually does, the reduction is done in one check (no node to remove, nothing left
        to simplify)."""
        built = self.builder.build(nodes, outputs)
        simplest = _simplest(built)
        if simplest is not None and self.predicate(simplest):
            return self.keep(simplest)
        return self.try_built(built) if built is not None else None

    def try_cuts(self, cuts: Sequence[Cut], simplest: bool = False) -> list[State | None]:
        """:meth:`try_cut` of each ``(nodes, outputs)``, checked together (up to the
        predicate's :attr:`~fuzzer.reduce.predicate.Predicate.parallel` at once): the plain
        candidates, or with ``simplest`` the first candidate :meth:`try_cut` checks (a
        candidate of one node with every simplification applied)."""
        builts = [self.builder.build(nodes, outputs) for nodes, outputs in cuts]
        if simplest:
            builts = [_simplest(built) or built for built in builts]
        verdicts = self.predicate.map(builts)
        accept = self.keep if simplest else self._accept
        return [accept(b) if b is not None and v else None
                for b, v in zip(builts, verdicts, strict=True)]

    def try_built(self, built: Built) -> State | None:
        """The state of candidate ``built`` if it still fails, else None."""
        return self._accept(built) if self.predicate(built) else None

    def width(self) -> int:
        """Candidates worth checking together now (checks that could start at once)."""
        return self.predicate.free()

    def keep(self, built: Built) -> State:
        """The state of a failing simplification of a candidate, made the best unless the
        best has fewer nodes or inputs: a simplification never adds either, and a simpler
        model wins over a few bytes (``t0`` is longer than ``x``)."""
        state = self._accept(built)
        if self.best is not None and size(state)[:2] <= size(self.best)[:2]:
            self.best = state
        return state

    def _accept(self, built: Built) -> State:
        graph = built.model.graph
        state = State(list(graph.node), [o.name for o in graph.output], built)
        self.offer(state)
        return state


def _simplest(built: Built | None) -> Built | None:
    """A one-node candidate with every simplification applied
    (:func:`fuzzer.reduce.edits.apply_all`); None for other candidates or where none
    applies."""
    if built is None or len(built.model.graph.node) != 1:
        return None
    return apply_all(built, EDITS)
