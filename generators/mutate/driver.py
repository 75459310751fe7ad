"""The havoc driver: 1 to 3 mutators stacked on one model, each result checked.

After AFL's havoc stage (Zalewski, AFL ``fuzz_one``: a random stack of small mutations per
child): :func:`mutate` draws how many mutators to stack, picks each by weight, applies it to a
copy of the current model and keeps the result only if it passes
:func:`generators.mutate.check.problem`; a mutator that does not apply is passed over, one
whose result is invalid (or does not run in onnxruntime) is discarded with its reason. Every
step is drawn from the caller's ``random.Random``, so the same model and the same random state
give the same mutation.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from onnx import ModelProto

from generators.mutate.check import problem
from generators.mutate.registry import MUTATORS
from generators.mutate.spec import Mutator

#: The outcomes counted per mutator: picked, returned a model, kept valid, discarded invalid.
OUTCOMES: tuple[str, ...] = ("tried", "applied", "kept", "discarded")
#: Most mutators stacked on one model.
MAX_STACK = 3
#: Default number of picks per mutation before giving up.
MAX_TRIES = 12


@dataclass
class Mutation:
    """The result of :func:`mutate`.

    Attributes:
        model: the mutated model (a new ModelProto), or None when nothing was kept.
        mutators: names of the mutators kept, in the order applied.
        feeds: input-feed policies asked for (:data:`generators.mutate.feeds.POLICIES`), in
            order.
        discarded: ``(mutator name, reason)`` of each result that failed the check.
        reason: why nothing was kept (None when ``model`` is set).
    """

    model: ModelProto | None
    mutators: list[str] = field(default_factory=list)
    feeds: list[str] = field(default_factory=list)
    discarded: list[tuple[str, str]] = field(default_factory=list)
    reason: str | None = None


#: Process-wide counts ``(mutator name, outcome) -> n`` of every :func:`mutate` call that is
#: given no counter of its own.
COUNTS: Counter[tuple[str, str]] = Counter()


def mutate(model: ModelProto, rng: random.Random, names: Sequence[str] | None = None,
           max_tries: int = MAX_TRIES, registry: Mapping[str, Mutator] | None = None,
           counts: Counter[tuple[str, str]] | None = None, run: bool = True,
           feeds: Mapping[str, np.ndarray] | None = None) -> Mutation:
    """Stack 1 to :data:`MAX_STACK` mutators on ``model`` (never changed itself).

    Args:
        model: the parent model.
        rng: the random source of every choice.
        names: mutators to pick from (default: all of ``registry``).
        max_tries: picks before giving up on reaching the drawn stack height.
        registry: name -> Mutator (default :data:`generators.mutate.registry.MUTATORS`).
        counts: where to count :data:`OUTCOMES` per mutator (default :data:`COUNTS`).
        run: also require that onnxruntime runs each result
            (:func:`generators.mutate.check.run_problem`).
        feeds: the parent's feeds, used for that run where they fit the result.

    Returns:
        A :class:`Mutation`; its model passes ``onnx.checker.check_model(full_check=True)``
        and strict shape inference (and runs in onnxruntime, with ``run``), or is None with
        the reason.

    Raises:
        ValueError: an unknown mutator name.
    """
    if registry is None:
        registry = MUTATORS
    counts = COUNTS if counts is None else counts
    unknown = [n for n in names or () if n not in registry]
    if unknown:
        raise ValueError(f"unknown mutator(s) {unknown}; known: {', '.join(registry)}")
    pool = [registry[n] for n in names] if names else list(registry.values())
    weights = [m.weight for m in pool]
    height = rng.randint(1, MAX_STACK)
    result = Mutation(None)
    current = model
    for _ in range(max_tries):
        if len(result.mutators) >= height:
            break
        mutator = rng.choices(pool, weights)[0]
        counts[(mutator.name, "tried")] += 1
        out = mutator(current, rng)
        if out is None:
            continue
        counts[(mutator.name, "applied")] += 1
        reason = None if mutator.feeds else problem(out, run, feeds)
        if reason is not None:
            counts[(mutator.name, "discarded")] += 1
            result.discarded.append((mutator.name, reason))
            continue
        counts[(mutator.name, "kept")] += 1
        current = out
        result.mutators.append(mutator.name)
        if mutator.feeds:
            result.feeds.append(mutator.feeds)
    if result.mutators:
        result.model = current
    else:
        last = result.discarded[-1][1] if result.discarded else "no mutator applied"
        result.reason = f"nothing kept after {max_tries} picks: {last}"
    return result
