"""The reducer's current best candidate and what the steps share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuzzer.reduce.candidate import Builder, Built
from fuzzer.reduce.graph import count_nodes
from fuzzer.reduce.predicate import Predicate


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
        """The state for ``(nodes, outputs)`` if it builds and still fails, else None."""
        built = self.builder.build(nodes, outputs)
        return None if built is None else self.try_built(built)

    def try_built(self, built: Built) -> State | None:
        """The state of candidate ``built`` if it still fails, else None."""
        if not self.predicate(built):
            return None
        graph = built.model.graph
        state = State(list(graph.node), [o.name for o in graph.output], built)
        self.offer(state)
        return state
