"""Graph-aware mutators of existing models (generated or real), by name, and the driver.

A mutator (:class:`~generators.mutate.spec.Mutator`) makes one kind of change that keeps a
model valid: attribute values at their edges, dtype and rank changes, tensor renaming,
initializer <-> Constant node in every attribute form, duplicated and shared initializers, a
motif spliced in at a type-compatible edge, a region wrapped in If or Loop or moved into a
model-local function, a second consumer of an intermediate, and input values at their edges
(which change the feeds, not the model). :func:`mutate` stacks 1 to 3 of them and checks the
result; :func:`mutated_models` yields mutated models deterministically from a seed.

A new mutator is one new module in :data:`generators.mutate.registry.FAMILIES` exporting
``MUTATORS``.
"""

from __future__ import annotations

from generators.mutate.driver import COUNTS, OUTCOMES, Mutation, mutate
from generators.mutate.registry import FAMILIES, MUTATORS
from generators.mutate.source import mutated_models
from generators.mutate.spec import KINDS, Mutator

__all__ = ["COUNTS", "FAMILIES", "KINDS", "MUTATORS", "OUTCOMES", "Mutation", "Mutator",
           "mutate", "mutated_models"]
