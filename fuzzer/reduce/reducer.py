"""The reduction pipeline: cut outputs, cut inputs (Polygraphy ``debug reduce``'s bisection,
then a linear pass), ddmin over the nodes inside the cut (Zeller & Hildebrandt 2002), then
simplification. Every accepted step is a valid model that the predicate says still fails.

:data:`STEPS` is the registry of steps, in order. Where simplification renamed tensors and
more than one node is left, the steps run again on the renamed model (C-Reduce's loop to a
fixed point, here bounded by :data:`MAX_ROUNDS`): a failure that needs a numeric name may need
far fewer nodes once the number is smaller.

Where the predicate runs checks in parallel (``optfuzz reduce --check``), the bisections probe
several cut points per round. The original model is checked only where the first step finds
nothing smaller that fails (see :func:`reduce_model`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuzzer.reduce.candidate import MAX_IR_VERSION, Builder, Built
from fuzzer.reduce.cut import bisect_inputs, bisect_outputs, linear_outputs, subset_outputs
from fuzzer.reduce.delete import delete_nodes
from fuzzer.reduce.edits import tensor_names
from fuzzer.reduce.graph import count_nodes
from fuzzer.reduce.predicate import OutOfTime, Predicate
from fuzzer.reduce.simplify import simplify
from fuzzer.reduce.state import Context, State
from fuzzer.reduce.values import Recorded, record
from fuzzer.registry import Registry

Step = Callable[[State, Context], State]
Recorder = Callable[[Any, "dict[str, np.ndarray] | None"], Recorded]

#: step name -> step, run in this order.
STEPS: Registry[Step] = Registry("reduction step", {
    "bisect-outputs": bisect_outputs,
    "subset-outputs": subset_outputs,
    "bisect-inputs": bisect_inputs,
    "linear-outputs": linear_outputs,
    "ddmin-nodes": delete_nodes,
    "simplify": simplify,
})

#: most rounds of :data:`STEPS` (a round after the first runs only where the last renamed).
MAX_ROUNDS = 3


class NotReproducible(Exception):
    """The original model does not fail under the predicate; nothing can be reduced."""


@dataclass
class Reduction:
    """What a reduction produced.

    Attributes:
        built: the minimized model and its feeds.
        nodes: ``(original, minimized)`` node counts, subgraphs included.
        runs: checks actually run (cache hits and invalid candidates excluded).
        seconds: wall time of the reduction.
        complete: False when the time budget ran out before the last step ended.
        trace: ``{step name: node count after it}``; steps of a later round are named
            ``<step>/<round>``.
    """

    built: Built
    nodes: tuple[int, int]
    runs: int
    seconds: float
    complete: bool
    trace: dict[str, int] = field(default_factory=dict)


def reduce_model(model: Any, feeds: dict[str, np.ndarray] | None, predicate: Predicate,
                 recorded: Recorded | None = None,
                 recorder: Recorder | None = None, verified: bool = False) -> Reduction:
    """Shrink ``model`` while ``predicate`` holds, within ``predicate.budget``.

    Args:
        model: the failing ``onnx.ModelProto`` (not modified).
        feeds: its input feeds, or None when the predicate supplies its own inputs.
        predicate: True for a candidate that still fails the same way.
        recorded: recorded values of ``model``'s tensors; computed in this process when
            None (a campaign passes :func:`fuzzer.reduce.values.record_sandboxed`'s).
        recorder: ``(model, feeds) -> Recorded`` for the renamed model a later round starts
            from; :func:`fuzzer.reduce.values.record` (in this process) when None, so a
            campaign passes one that runs in its sandbox.
        verified: the caller has seen ``model`` fail under ``predicate``. Otherwise ``model``
            is checked only where the first step found no smaller candidate that fails (as
            Polygraphy, which never checks it: the largest, slowest check is needed only to
            tell "already minimal" from "does not fail").

    Raises:
        NotReproducible: ``predicate`` is False for ``model`` itself (and for every
            candidate of the first step).
        OutOfTime: the budget ran out before ``model`` or a smaller candidate was seen to
            fail.
    """
    import onnx

    original = onnx.ModelProto()
    original.CopyFrom(model)
    original.ir_version = min(original.ir_version, MAX_IR_VERSION)
    start = Built(original, dict(feeds or {}))
    graph = original.graph
    recorder = recorder or record
    state = State(list(graph.node), [o.name for o in graph.output], start)
    ctx = Context(Builder(original, feeds, recorded or recorder(original, feeds)), predicate)
    ctx.offer(state)
    trace: dict[str, int] = {}
    complete = True
    try:
        for round_ in range(1, MAX_ROUNDS + 1):
            names = set(tensor_names(state.built.model))
            for name, step in STEPS.items():
                state = step(state, ctx)
                if not verified and ctx.best.built is start:
                    verified = _reproduces(predicate, start)
                trace[name if round_ == 1 else f"{name}/{round_}"] = \
                    count_nodes(state.built.model.graph)
            state = ctx.best or state
            if round_ == MAX_ROUNDS or set(tensor_names(state.built.model)) <= names \
                    or count_nodes(state.built.model.graph) == 1:
                break  # no tensor renamed, or one node left: the steps are at a fixed point
            base = state.built
            base_feeds = base.feeds if feeds is not None else None
            ctx = Context(Builder(base.model, base_feeds, recorder(base.model, base_feeds)),
                          predicate)
            ctx.offer(state)
    except OutOfTime:
        if not verified and ctx.best.built is start:
            raise
        complete = False
    best = ctx.best or state
    return Reduction(best.built, (count_nodes(graph), count_nodes(best.built.model.graph)),
                     predicate.runs, predicate.budget.elapsed(), complete, trace)


def _reproduces(predicate: Predicate, start: Built) -> bool:
    """True when the original model ``start`` fails; else :class:`NotReproducible`."""
    if not predicate(start):
        raise NotReproducible("the model does not fail under the check")
    return True
