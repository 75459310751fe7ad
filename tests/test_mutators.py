"""Graph-aware mutators and the ``mutated`` case source: every mutator keeps models valid or
the driver discards the result, mutations are deterministic and leave their argument alone,
no mutator is dead, and a campaign runs mutated cases and records their mutators."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzer.execution.case import materializer
from fuzzer.execution.mutated import fitting_shapes
from fuzzer.execution.reference import make_session, run_session
from fuzzer.execution.stage_driver import validate
from generators import generate_model
from generators.inputs import synthesize_inputs
from generators.mutate import MUTATORS, Mutator, mutate, mutated_models
from generators.mutate.check import problem
from generators.mutate.feeds import POLICIES, apply_policies
from generators.strategies import generated_models

ROOT = Path(__file__).resolve().parents[1]
#: Small bundled corpus models that onnxruntime runs (opsets 6 to 12).
CORPUS_IDS = ("bundled/pytorch-converted/test_Conv2d", "bundled/pytorch-operator/test_operator_pad",
              "bundled/pytorch-converted/test_PixelShuffle", "bundled/simple/test_sequence_model1",
              "bundled/pytorch-operator/test_operator_repeat")


def runs(model: onnx.ModelProto, shapes: dict | None = None) -> str | None:
    """None when ``model`` passes checker full_check, strict shape inference and an
    onnxruntime run on synthesized feeds, else the problem (the campaign's own checks)."""
    found = validate(model)
    if found is not None:
        return found
    try:
        feeds = synthesize_inputs(model, 1, fitting_shapes(model, shapes or {}))
        run_session(make_session(model.SerializeToString()), feeds)
    except Exception as exc:
        return f"onnxruntime: {exc}"
    return None


def _corpus() -> list:
    from fuzzer.corpus import iter_models

    models = {m.id: m for m in iter_models(["bundled"])}
    return [models[i] for i in CORPUS_IDS if i in models]


CORPUS = _corpus()


@pytest.mark.parametrize("name", sorted(MUTATORS))
@settings(max_examples=6, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(gm=generated_models(max_nodes=8), seed=st.integers(0, 2**16))
def test_a_mutated_generated_model_is_valid_or_discarded(name, gm, seed) -> None:
    out = MUTATORS[name](gm.model, random.Random(seed))
    if out is None:
        return
    found = runs(out, gm.input_shapes)
    if found is not None:  # the driver must refuse what the campaign could not run, given
        # the parent's feeds as the campaign gives them (mutated.materialize)
        feeds = synthesize_inputs(gm.model, 1, fitting_shapes(gm.model, gm.input_shapes or {}))
        assert problem(out, feeds=feeds) is not None, (name, found)


@pytest.mark.parametrize("corpus_model", CORPUS, ids=lambda m: m.id.rsplit("/", 1)[-1])
def test_mutated_corpus_models_are_valid_or_discarded(corpus_model) -> None:
    model = onnx.load(corpus_model.path)
    applied = 0
    for name, mutator in MUTATORS.items():
        for seed in range(2):
            out = mutator(model, random.Random(seed))
            if out is None:
                continue
            applied += 1
            found = runs(out)
            if found is not None:
                assert problem(out) is not None, (name, found)
    assert applied >= len(MUTATORS) // 2


@settings(max_examples=12, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(gm=generated_models(max_nodes=8), seed=st.integers(0, 2**16))
def test_the_driver_returns_only_models_the_campaign_can_run(gm, seed) -> None:
    # the parent's feeds, as the campaign gives them (mutated.materialize): a mutant that
    # runs at dims of 1 may not at the sizes of the model's input shapes
    feeds = synthesize_inputs(gm.model, 1, fitting_shapes(gm.model, gm.input_shapes or {}))
    result = mutate(gm.model, random.Random(seed), counts=Counter(), feeds=feeds)
    if result.model is None:
        assert result.reason and not result.mutators
        return
    assert 1 <= len(result.mutators) <= 3
    assert runs(result.model, gm.input_shapes) is None, result.mutators


def test_the_driver_counts_discards_and_reports_them() -> None:
    counts: Counter = Counter()
    model = generate_model(7).model
    broken = {"always-broken": Mutator("always-broken", "name",
                                       lambda m, rng: _drop_first_node_input(m))}
    result = mutate(model, random.Random(0), registry=broken, counts=counts)
    assert result.model is None and "nothing kept" in result.reason
    assert counts[("always-broken", "discarded")] == counts[("always-broken", "applied")] > 0
    assert counts[("always-broken", "kept")] == 0
    assert all(name == "always-broken" for name, _ in result.discarded)


def _drop_first_node_input(model: onnx.ModelProto) -> onnx.ModelProto:
    model.graph.node[0].input[0] = "no_such_tensor"
    return model


def test_every_mutator_applies_to_some_generated_models() -> None:
    kept: Counter = Counter()
    for seed in range(40):
        gm = generate_model(seed)
        for name, mutator in MUTATORS.items():
            if kept[name] >= 2:
                continue
            out = mutator(gm.model, random.Random(seed))
            if out is not None and problem(out) is None:
                kept[name] += 1
    assert sorted(n for n in MUTATORS if kept[n] < 2) == []


@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_a_mutator_leaves_its_argument_untouched(name) -> None:
    for seed in (3, 11):
        model = generate_model(seed).model
        before = model.SerializeToString()
        MUTATORS[name](model, random.Random(seed))
        assert model.SerializeToString() == before


def test_mutations_are_deterministic() -> None:
    model = generate_model(5).model
    a = mutate(model, random.Random(42), counts=Counter())
    b = mutate(model, random.Random(42), counts=Counter())
    assert a.mutators == b.mutators and a.feeds == b.feeds
    assert a.model.SerializeToString() == b.model.SerializeToString()
    first = [(m.mutators, m.model.SerializeToString()) for m in mutated_models(9, 6)]
    again = [(m.mutators, m.model.SerializeToString()) for m in mutated_models(9, 6)]
    assert first == again and len(first) == 6


def test_mutated_models_are_the_same_in_another_interpreter() -> None:
    """String hashing differs between processes; a worker must rebuild the same model."""
    code = ("import hashlib; from generators.mutate import mutated_models; "
            "print([hashlib.sha256(m.model.SerializeToString()).hexdigest()[:12] "
            "for m in mutated_models(4, 5)])")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=ROOT, timeout=120,
                           env=dict(os.environ, PYTHONHASHSEED=str(h))).stdout
            for h in (1, 2)}
    assert len(outs) == 1 and "[" in outs.pop()


def test_input_value_policies_rewrite_float_feeds_only() -> None:
    feeds = {"x": np.ones((64,), np.float32), "i": np.arange(4, dtype=np.int64)}
    special = apply_policies(["special-floats"], feeds, 0)["x"]
    assert (~np.isfinite(special)).any() and np.isfinite(feeds["x"]).all()
    zero = apply_policies(["negative-zero"], feeds, 0)["x"]
    assert (np.signbit(zero) & (zero == 0)).any()
    tiny = apply_policies(["denormals"], feeds, 0)["x"]
    assert ((tiny != 0) & (np.abs(tiny) < np.finfo(np.float32).tiny)).any()
    assert (apply_policies(["negatives"], feeds, 0)["x"] < 0).all()
    assert np.isin(apply_policies(["ties"], feeds, 0)["x"] % 1, [0.5]).all()
    assert all((apply_policies([p], feeds, 0)["i"] == feeds["i"]).all() for p in POLICIES)


def test_the_mutated_source_materializes_the_same_model_twice() -> None:
    source = {"kind": "mutated", "seed": 123,
              "parent": {"kind": "generated", "seed": 77, "generator": "v2"}}
    build = materializer("mutated")
    a, b = build(source, 5, None), build(source, 5, None)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert a.provenance["mutators"] and set(a.provenance["mutators"]) <= set(MUTATORS)
    assert a.provenance["parent"]["kind"] == "generated" and "motifs" in a.provenance
    assert set(a.feeds) == {i.name for i in a.model.graph.input
                            if i.name not in {t.name for t in a.model.graph.initializer}}
    for key in a.feeds:
        np.testing.assert_array_equal(a.feeds[key], b.feeds[key])


def test_a_corpus_parent_is_mutated_with_its_task() -> None:
    parent = CORPUS[0]
    mat = materializer("mutated")({"kind": "mutated", "seed": 3, "parent": parent.source()},
                                  0, None)
    assert mat.provenance["parent"]["model"] == parent.id
    assert mat.model.SerializeToString() != onnx.load(parent.path).SerializeToString()


def test_a_mutated_source_without_parent_is_refused() -> None:
    from fuzzer.errors import InputError

    with pytest.raises(InputError):
        materializer("mutated")({"kind": "mutated", "seed": 1}, 0, None)


def test_the_stream_draws_mutated_cases_deterministically() -> None:
    from fuzzer.campaign.stream import CaseStream, StreamConfig
    from fuzzer.targets import get_target

    target = get_target("fake")

    def sources(generated: bool) -> list[dict]:
        stream = CaseStream(StreamConfig("fake", 3, generated=generated, mutated=True,
                                         parents=CORPUS), target)
        return [stream.draw(corpus_ok=True).source for _ in range(40)]

    only = sources(False)
    assert all(s["kind"] == "mutated" for s in only) and only == sources(False)
    assert {s["parent"]["kind"] for s in only} == {"generated", "corpus"}
    assert {s["kind"] for s in sources(True)} == {"generated", "mutated"}


@pytest.mark.slow
def test_a_campaign_of_mutated_cases_records_its_mutators(tmp_path) -> None:
    out = tmp_path / "crashes"
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzer", "fuzz", "--source", "mutated", "--max-cases", "40",
         "--target", "fake", "--passes", "raise", "--fixed-passes", "--no-localize",
         "--reduce-seconds", "0", "--jobs", "2", "--quiet", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    campaign = json.loads((out / "campaign.json").read_text())
    assert campaign["settings"]["mutated"] is True and campaign["settings"]["generated"] is False
    metas = [json.loads(p.read_text()) for p in out.glob("*/meta.json")]
    assert metas
    source = metas[0]["source"]
    assert source["kind"] == "mutated" and source["parent"]["kind"] in ("generated", "corpus")
    assert set(source["mutators"]) <= set(MUTATORS)
    assert (out / metas[0]["id"] / "model.onnx").is_file()
