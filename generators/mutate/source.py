"""Mutated models from a seed: the ``mutated`` case source's model, rebuilt the same way in any
process, and a deterministic stream of mutated models for measurements.

A mutated case is ``{"kind": "mutated", "seed": n, "parent": <the parent's source>}``; the
worker materializes the parent, then :func:`mutate_parent` mutates it with a
``random.Random`` seeded by ``n`` and adds what it did to the case's provenance.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto

from generators.mutate.check import feeds_fit, run_problem
from generators.mutate.driver import Mutation, mutate
from generators.mutate.feeds import apply_policies

#: Parents tried per yielded model by :func:`mutated_models` before giving up.
PARENT_TRIES = 20


def mutated_models(seed: int, count: int, parents: Sequence[ModelProto] | None = None,
                   names: Sequence[str] | None = None, generator: str = "v2",
                   counts: Counter[tuple[str, str]] | None = None) -> Iterator[Mutation]:
    """Yield ``count`` kept mutations, deterministic from ``seed``.

    Args:
        seed: any int.
        count: how many to yield.
        parents: models to mutate, taken in turn; default: generated models (``generator``,
            seeds ``seed * 1_000_003 + i``).
        names: mutators to pick from (default: all).
        generator: generator of the default parents.
        counts: outcome counter per mutator (see :func:`generators.mutate.mutate`).

    Yields:
        :class:`generators.mutate.Mutation` with a model (a parent may be passed over when
        nothing kept applies to it).

    Raises:
        RuntimeError: :data:`PARENT_TRIES` parents in a row gave no kept mutation.
    """
    from generators.generate import generate

    made = misses = 0
    i = 0
    while made < count:
        parent = parents[i % len(parents)] if parents else \
            generate(seed * 1_000_003 + i, generator).model
        result = mutate(parent, random.Random(f"{seed}:{i}"), names, counts=counts)
        i += 1
        if result.model is None:
            misses += 1
            if misses >= PARENT_TRIES:
                raise RuntimeError(f"no mutation kept for {PARENT_TRIES} parents in a row")
            continue
        misses = 0
        made += 1
        yield result


def mutate_parent(model: ModelProto, feeds: dict[str, np.ndarray] | None, seed: int,
                  input_seed: int, check_parent: bool = True,
                  ) -> tuple[ModelProto, dict[str, np.ndarray] | None, dict[str, Any],
                             list[str]]:
    """Mutate a materialized parent for the ``mutated`` source.

    Args:
        model: the parent model.
        feeds: its stored feeds, or None (synthesized later).
        seed: the case's mutation seed.
        input_seed: seed of the input-value policies.
        check_parent: run the parent in onnxruntime first (a mutant of a mutant skips it:
            its parent passed the mutation driver's checks, and the case's own reference
            run judges the result).

    Returns:
        ``(model, feeds, provenance, policies)``: the mutated model (the parent where nothing
        was kept), the parent's feeds where they still fit it (else None), provenance
        ``{"mutators": [...], "feeds": [...], "discarded": n}`` (plus ``"reason"`` where
        nothing was kept, or the parent itself does not run in onnxruntime), and the
        input-feed policies still to apply to synthesized feeds.
    """
    unusable = run_problem(model, feeds) if check_parent else None
    if unusable is not None:
        return model, feeds, {"mutators": [], "reason": f"parent: {unusable}"}, []
    result = mutate(model, random.Random(seed), feeds=feeds)
    provenance: dict[str, Any] = {"mutators": result.mutators, "feeds": result.feeds,
                                  "discarded": len(result.discarded)}
    if result.model is None:
        provenance["reason"] = result.reason
        return model, feeds, provenance, []
    if feeds is not None and not feeds_fit(result.model, feeds):
        feeds = None
    if feeds is not None and result.feeds:
        return result.model, apply_policies(result.feeds, feeds, input_seed), provenance, []
    return result.model, feeds, provenance, result.feeds
