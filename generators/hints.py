"""What a target tells the generator about the models it wants: :class:`GenerationHints`.

A target's configuration becomes hints (``Target.generation_hints``): pass names that bias the
motif choice, an opset the models declare (the version converter's ``from`` opset), and a
bound on the random ops around the motifs (for one rewrite at a time). A campaign adds the
features its frequent known faults absorb (``avoid``, :mod:`fuzzer.campaign.avoidance`). A
case's source records them as JSON (:meth:`GenerationHints.as_source`,
:meth:`GenerationHints.from_source`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: How a source recorded before the hints were typed spells an opset and a step bound among
#: its pass names (``"opset=9"``, ``"steps=0..2"``); :meth:`GenerationHints.key` keeps that
#: form, so that a recorded seed regenerates the same model.
_OPSET, _STEPS = "opset=", "steps="
#: kinds of generator features a case may leave out (:attr:`GenerationHints.avoid`).
FEATURE_KINDS = ("motif", "interface", "ir")


@dataclass(frozen=True)
class GenerationHints:
    """Hints for one generated model.

    Attributes:
        passes: pass names (in the target's naming) whose motifs the generator draws.
        opset: the default-domain opset the model declares (only motifs that exist at it
            are drawn); None: drawn.
        steps: ``(low, high)`` random ops around the motifs; None: the recipe's.
        avoid: generator features left out of the draws (:data:`FEATURE_KINDS`):
            ``"motif:<name>"`` (a motif of the pool), ``"interface:<name>"`` (an interface
            form of :mod:`generators.interfaces`), ``"ir:3"`` (opsets 7 and 8 declare IR 4,
            so initializers are not listed as graph inputs). Not part of :meth:`key`: the
            model's random source stays that of its seed.
        sparse: Constants may hold ``sparse_value`` (:data:`generators.builder.SPARSE_EVERY`):
            the target loads such models (``Target.takes_sparse_constants``). Not part of
            :meth:`key` either.
    """

    passes: tuple[str, ...] = ()
    opset: int | None = None
    steps: tuple[int, int] | None = None
    avoid: tuple[str, ...] = ()
    sparse: bool = False

    def avoids(self, kind: str, name: object) -> bool:
        """Whether feature ``kind:name`` is left out (``kind`` one of :data:`FEATURE_KINDS`)."""
        return f"{kind}:{name}" in self.avoid

    @classmethod
    def of(cls, hints: GenerationHints | Sequence[str] | None) -> GenerationHints:
        """``hints`` as is, or a pass list (or None) as hints of those passes alone."""
        if isinstance(hints, GenerationHints):
            return hints
        return cls(passes=tuple(hints or ()))

    def key(self) -> tuple[str, ...]:
        """The words that seed the model's random source with the generator's name: the
        opset and the step bound in their recorded form, then the pass names."""
        head = [f"{_OPSET}{self.opset}"] if self.opset is not None else []
        if self.steps is not None:
            head.append(f"{_STEPS}{self.steps[0]}..{self.steps[1]}")
        return (*head, *self.passes)

    def as_source(self) -> dict[str, Any]:
        """The JSON fields of a generated case's source: ``passes``, and ``opset``,
        ``steps``, ``avoid`` and ``sparse`` where set."""
        out: dict[str, Any] = {"passes": list(self.passes)}
        if self.opset is not None:
            out["opset"] = self.opset
        if self.steps is not None:
            out["steps"] = list(self.steps)
        if self.avoid:
            out["avoid"] = list(self.avoid)
        if self.sparse:
            out["sparse"] = True
        return out

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> GenerationHints:
        """The hints a source records (:meth:`as_source`); a source recorded before the
        hints were typed holds the opset and the step bound among its ``passes``."""
        passes: list[str] = []
        opset, steps = source.get("opset"), source.get("steps")
        for name in source.get("passes") or ():
            low, sep, high = name.removeprefix(_STEPS).partition("..")
            if name.startswith(_OPSET) and name[len(_OPSET):].isdigit():
                opset = int(name[len(_OPSET):]) if opset is None else opset
            elif name.startswith(_STEPS) and sep and low.isdigit() and high.isdigit():
                steps = (int(low), int(high)) if steps is None else steps
            else:
                passes.append(name)
        return cls(passes=tuple(passes), opset=opset,
                   steps=tuple(steps) if steps is not None else None,
                   avoid=tuple(source.get("avoid") or ()),
                   sparse=bool(source.get("sparse")))
