"""Graph-aware mutators of existing models (generated or real), by name, and the driver.

A mutator (:class:`~generators.mutate.spec.Mutator`) makes one kind of change that keeps a
model valid: attribute values at their edges, dtype and rank changes, tensor renaming,
initializer <-> Constant node in every attribute form, duplicated and shared initializers, a
motif spliced in at a type-compatible edge, a region wrapped in If or Loop or moved into a
model-local function, a second consumer of an intermediate, and input values at their edges
(which change the feeds, not the model). :func:`mutate` stacks 1 to 3 of them and checks the
result; :func:`mutated_models` yields mutated models deterministically from a seed.

A new mutator is one new module in :data:`FAMILIES` exporting ``MUTATORS``.
"""

from __future__ import annotations

import importlib

from generators.mutate.driver import COUNTS, OUTCOMES, Mutation, mutate
from generators.mutate.spec import KINDS, Mutator

#: Family modules, each exporting ``MUTATORS``.
FAMILIES: tuple[str, ...] = ("attributes", "dtypes", "ranks", "names", "constants",
                             "initializers", "splice", "control", "functions", "consumers",
                             "feeds", "repeat")


def _load() -> dict[str, Mutator]:
    out: dict[str, Mutator] = {}
    for fam in FAMILIES:
        for m in importlib.import_module(f"generators.mutate.{fam}").MUTATORS:
            if m.name in out:
                raise ValueError(f"duplicate mutator name {m.name!r}")
            out[m.name] = m
    return out


#: name -> Mutator, built once at import.
MUTATORS: dict[str, Mutator] = _load()

from generators.mutate.source import mutated_models  # noqa: E402  (needs MUTATORS)

__all__ = ["COUNTS", "FAMILIES", "KINDS", "MUTATORS", "OUTCOMES", "Mutation", "Mutator",
           "mutate", "mutated_models"]
