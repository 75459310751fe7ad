"""Known-fault avoidance: a generator feature on which one known fault takes most cases is
left out of most later generated cases, and the generator honours what a case avoids."""

from __future__ import annotations

import json

import onnx
import pytest
from typer.testing import CliRunner

from fuzzer.campaign import avoidance
from fuzzer.campaign.avoidance import KnownFaultAvoidance, exploring, features
from fuzzer.campaign.stream import case_seed
from fuzzer.cli import app
from fuzzer.execution.case import CaseResult, TestCase
from generators.generate import generate
from generators.hints import GenerationHints
from oracles.base import Finding

CRASH = Finding("optimizer-error", "optimize", "UnboundLocalError: cannot access local "
                "variable 'onnx_tensor' where it is not associated with a value")


def _case(seed: int = 0, **source: object) -> TestCase:
    return TestCase("fake", {"passes": ["clean"]}, {"kind": "generated", "seed": seed, **source})


def _result(motifs: list[str], interfaces: list[str] = (), ir: int = 8,
            finding: Finding | None = None) -> CaseResult:
    return CaseResult([finding] if finding else [], None, "compare",
                      {"motifs": motifs, "interfaces": list(interfaces), "ir_version": ir})


def test_features_are_motifs_interface_forms_and_ir3():
    source = {"motifs": ["conv-bn", "conv-bn"], "interfaces": ["optional-output"],
              "ir_version": 3}
    assert features(source) == ["motif:conv-bn", "interface:optional-output", "ir:3"]
    assert features({"motifs": [], "ir_version": 8}) == []


def test_a_feature_one_fault_absorbs_is_avoided_and_drawn_again_once_it_does_not():
    av = KnownFaultAvoidance()
    changes = []
    for i in range(avoidance.MIN_CASES):
        # the interface form always ends in the crash; the motif only with it
        changes += av.observe(_case(i), _result(["conv-bn"], ["optional-output"],
                                                finding=CRASH))
        changes += av.observe(_case(i), _result(["conv-bn"]))
    assert changes == ["+interface:optional-output"]
    (avoided,) = av.avoided
    assert (avoided.feature, avoided.cases, avoided.share) == \
        ("interface:optional-output", avoidance.MIN_CASES, 1.0)
    assert avoided.ending.startswith("optimizer-error: UnboundLocalError")
    # the share falls under the bound: drawn again
    for i in range(avoidance.MIN_CASES):
        changes += av.observe(_case(i), _result(["conv-bn"], ["optional-output"]))
    assert changes[-1] == "-interface:optional-output" and av.avoided == []


def test_only_usable_freely_drawn_generated_cases_count():
    av = KnownFaultAvoidance()
    corpus = TestCase("fake", {}, {"kind": "corpus", "model": "m"})
    named = _case(with_motifs=["block-run"])
    for _ in range(2 * avoidance.MIN_CASES):
        av.observe(corpus, _result(["conv-bn"], finding=CRASH))
        av.observe(named, _result(["conv-bn"], finding=CRASH))
        av.observe(_case(), CaseResult([], "reference: no model", "reference",
                                       {"motifs": ["conv-bn"]}))
    assert av.avoided == []


def test_avoided_features_go_into_most_generated_sources():
    av = KnownFaultAvoidance()
    for i in range(avoidance.MIN_CASES):
        av.observe(_case(i), _result(["conv-bn"], ir=3, finding=CRASH))
    assert [a.feature for a in av.avoided] == ["ir:3", "motif:conv-bn"]
    cases = [av.apply(_case(case_seed(0, i))) for i in range(1000)]
    avoiding = [c for c in cases if c.source.get("avoid") == ["ir:3", "motif:conv-bn"]]
    explored = [c for c in cases if "avoid" not in c.source]
    assert 0 < len(explored) < 2 * len(cases) // avoidance.EXPLORE_ONE_IN
    assert len(avoiding) + len(explored) == len(cases)
    assert all(exploring(c.source) for c in explored)  # any process decides alike
    corpus = TestCase("fake", {}, {"kind": "corpus", "model": "m"})
    named = _case(with_motifs=["block-run"])
    assert av.apply(corpus) is corpus and av.apply(named) is named


@pytest.mark.parametrize("seed", range(12))
def test_the_generator_leaves_out_what_a_case_avoids(seed):
    """A motif, an interface form and IR 3, each drawn without ``avoid``, are left out with
    it, and the model still passes the full check."""
    plain = generate(seed, opset=7)
    assert plain.ir_version == 3
    avoid = tuple(f"motif:{m}" for m in plain.motifs) + \
        tuple(f"interface:{f}" for f in plain.interfaces) + ("ir:3",)
    hints = GenerationHints(avoid=avoid)
    gm = generate(seed, passes=hints, opset=7)
    assert gm.ir_version == gm.model.ir_version == 4
    assert not set(gm.motifs) & set(plain.motifs) or not plain.motifs
    assert not set(gm.interfaces) & set(plain.interfaces)
    onnx.checker.check_model(gm.model, full_check=True)
    # a recorded source regenerates the same model
    again = GenerationHints.from_source(hints.as_source())
    assert again.avoid == avoid
    assert generate(seed, passes=again, opset=7).model == gm.model


def test_a_broken_rule_absorbs_whatever_tensor_its_message_names():
    """The IR 3 fault names another initializer in every case: its rule is the ending; an
    inference error's category alone is too coarse, its message stands."""
    av = KnownFaultAvoidance()
    for i in range(avoidance.MIN_CASES):
        rule = Finding("invalid-model", "validate", f"ValidationError: w{i}_SHAPE in "
                       "initializer but not in graph input",
                       {"error_class": "ValidationError: <name> in initializer but not in "
                        "graph input"})
        op = ("Neg", "Split", "Concat", "Slice", "Cast")[i % 5]  # five faults, one class
        inference = Finding("invalid-model", "validate", "InferenceError: [ShapeInference"
                            f"Error] (op_type:{op}, node name: n{i}): a different rank",
                            {"error_class": "InferenceError: ShapeInferenceError"})
        av.observe(_case(i), _result([], ir=3, finding=rule))
        av.observe(_case(i), _result(["nop-split"], finding=inference))
    assert [a.feature for a in av.avoided] == ["ir:3"]


@pytest.mark.parametrize("avoid", [True, False])
def test_a_campaign_leaves_out_what_its_known_fault_absorbs(monkeypatch, tmp_path, avoid):
    """Every case of the fake ``raise`` pass ends in its crash: the campaign says which
    features it avoids, records them in campaign.json, and the bundle's hits keep counting;
    ``--no-avoid-known`` avoids nothing."""
    monkeypatch.setattr(avoidance, "MIN_CASES", 4)
    out = tmp_path / "crashes"
    result = CliRunner().invoke(app, [
        "fuzz", "--target", "fake", "--source", "generated", "--passes", "raise",
        "--fixed-passes", "--max-cases", "40", "--jobs", "1", "--quiet", "--reduce-seconds",
        "0", "--out", str(out), *([] if avoid else ["--no-avoid-known"])])
    assert result.exit_code == 0, result.output
    campaign = json.loads((out / "campaign.json").read_text())
    log = (out / "campaign.log").read_text()
    assert campaign["settings"]["avoid_known"] is avoid
    if not avoid:
        assert "avoided" not in campaign and "avoiding" not in log
        return
    avoided = {a["feature"]: a for a in campaign["avoided"]}
    assert avoided and all(a["share"] == 1.0 and a["cases"] >= 4 and
                           a["ending"].startswith("optimizer-error: ")
                           for a in avoided.values())
    assert all(f"avoiding {feature} in generated cases" in log for feature in avoided)
