"""Typed generator hints: a source's JSON round trip, a source recorded with the opset and
step bound among its pass names, and the same model from either."""

from __future__ import annotations

from generators.hints import GenerationHints
from generators.materialize import materialize

HINTS = GenerationHints(passes=("Upsample 9->10",), opset=9, steps=(0, 2))
LEGACY = {"kind": "generated", "seed": 3, "passes": ["opset=9", "steps=0..2", "Upsample 9->10"]}


def test_a_source_round_trips() -> None:
    source = HINTS.as_source()
    assert source == {"passes": ["Upsample 9->10"], "opset": 9, "steps": [0, 2]}
    assert GenerationHints.from_source(source) == HINTS
    assert GenerationHints.from_source({"passes": ["a"]}) == GenerationHints.of(["a"])
    assert GenerationHints.of(None) == GenerationHints()


def test_a_source_recorded_with_fake_pass_names_regenerates_the_same_model() -> None:
    assert GenerationHints.from_source(LEGACY) == HINTS
    assert HINTS.key() == tuple(LEGACY["passes"])  # the seed's key keeps its recorded form
    new = materialize({"kind": "generated", "seed": 3, **HINTS.as_source()}, 0, None)
    old = materialize(LEGACY, 0, None)
    assert new.model.SerializeToString() == old.model.SerializeToString()
    assert new.provenance["opset"] == 9
