"""The mutator record: one graph-aware change of an existing model.

A mutator's function takes a model and a ``random.Random`` and returns the changed model, or
``None`` (without side effects) where the change does not apply to that model. Calling the
:class:`Mutator` hands the function a copy, so the caller's model is never changed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from onnx import ModelProto

from generators.mutate.graph import copy_model

#: ``(model, rng) -> model | None``; may change ``model`` in place (it is the caller's copy).
MutatorFunction = Callable[[ModelProto, random.Random], "ModelProto | None"]

#: The kinds of change, in the field's terms.
KINDS: tuple[str, ...] = ("attribute", "dtype", "rank", "name", "weight-form",
                          "weight-sharing", "splice", "control-flow", "function", "interface",
                          "inputs")


@dataclass(frozen=True, slots=True)
class Mutator:
    """One mutator.

    Attributes:
        name: registry name (kebab-case), recorded in a mutated case's provenance.
        kind: the kind of change, one of :data:`KINDS`.
        function: see :data:`MutatorFunction`.
        weight: relative chance of being picked by :func:`generators.mutate.mutate`.
        feeds: for an input-value mutator (kind ``inputs``): the input-feed policy of
            :data:`generators.mutate.feeds.POLICIES` it asks for; the model is left as it is.
    """

    name: str
    kind: str
    function: MutatorFunction
    weight: float = 1.0
    feeds: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"mutator {self.name!r}: unknown kind {self.kind!r}")

    def __call__(self, model: ModelProto, rng: random.Random) -> ModelProto | None:
        """The mutated copy of ``model``, or None where the mutator does not apply."""
        return self.function(copy_model(model), rng)
