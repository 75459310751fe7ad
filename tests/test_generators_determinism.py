"""A generated model is a pure function of (seed, generator, pass hint)."""

from __future__ import annotations

import pytest

from fuzzer.execution.case import materializer
from generators import GENERATORS, generate_model


@pytest.mark.parametrize("generator", GENERATORS)
def test_same_seed_same_bytes(generator: str) -> None:
    for seed in range(30):
        a = generate_model(seed, generator=generator).model.SerializeToString()
        b = generate_model(seed, generator=generator).model.SerializeToString()
        assert a == b


def test_pass_hint_is_part_of_the_key() -> None:
    a = generate_model(7, passes=["fuse_bn_into_conv"]).model.SerializeToString()
    b = generate_model(7, passes=["fuse_bn_into_conv"]).model.SerializeToString()
    c = generate_model(7, passes=["eliminate_identity"]).model.SerializeToString()
    assert a == b
    assert a != c


def test_seeds_differ() -> None:
    models = {generate_model(s).model.SerializeToString() for s in range(50)}
    assert len(models) == 50


def test_materializer_reports_provenance() -> None:
    mat = materializer("generated")(
        {"kind": "generated", "seed": 3, "generator": "v2", "passes": ["fuse_bn_into_conv"]},
        0, None)
    gm = generate_model(3, generator="v2", passes=["fuse_bn_into_conv"])
    assert mat.model.SerializeToString() == gm.model.SerializeToString()
    assert mat.provenance["motifs"] == gm.motifs
    assert "conv-bn" in mat.provenance["motifs"] or mat.provenance["motifs"] == []
    assert mat.provenance["opset"] == gm.opset
    assert mat.provenance["generator"] == "v2"


def test_materializer_user_shapes_win() -> None:
    for seed in range(200):
        gm = generate_model(seed)
        if gm.input_shapes:
            name = next(iter(gm.input_shapes))
            mat = materializer("generated")({"kind": "generated", "seed": seed}, 0,
                                            {name: [1, 2, 3]})
            assert mat.input_shapes[name] == [1, 2, 3]
            return
    pytest.fail("no generated model with a symbolic dim in 200 seeds")
