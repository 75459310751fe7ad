"""The onnxscript target: its steps and rules by onnxscript's own names, a full step list that
is ``onnxscript.optimizer.optimize`` itself, sublists that repro.py replays exactly, the
generator's model-local functions and rule motifs, and the models in tests/data/onnxscript
that onnxscript 0.7.2 mis-optimizes (one per symptom, from ``optfuzz fuzz --target
onnxscript --minutes 10``): detected, localized to the rule or pass, repro.py exits 1."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import numpy as np
import onnx
import pytest

pytest.importorskip("onnxscript")

import onnxruntime as ort  # noqa: E402
import onnxscript.optimizer  # noqa: E402

from fuzzer.execution.sandbox import Sandbox  # noqa: E402
from fuzzer.targets import get_target  # noqa: E402
from fuzzer.targets.onnxscript.rules import rule_name, rule_set  # noqa: E402
from generators.generate import generate  # noqa: E402
from generators.inputs import synthesize_inputs  # noqa: E402
from tests.planted_cases import (  # noqa: E402
    cases,
    check_detected_and_localized,
    check_repro_exits_1,
)

DATA = Path(__file__).parent / "data" / "onnxscript"
FUNCTION_MOTIFS = ("fn-scaled-activation", "fn-permute-softmax", "fn-called-twice",
                   "fn-nested", "fn-two-outputs", "fn-constant-body")


@pytest.fixture(scope="module")
def target():
    return get_target("onnxscript")


def test_rules_go_by_onnxscripts_own_names(target) -> None:
    from onnxscript import rewriter

    default = rule_set("default")
    names = [r.name for r in default]
    assert len(names) == len(set(names))
    assert {"FuseBatchNormIntoConv", "CastCast", "mul_by_1_rule", "collapse_slice_rule",
            "FuseSuccessiveClip"} <= set(names)
    covered = {id(rule) for named in default for rule in named.rules}
    assert covered == {id(rule) for rule in rewriter._DEFAULT_REWRITE_RULES}
    assert all(rule_name(rule) for rule in rewriter._DEFAULT_REWRITE_RULES)
    steps = target.default_passes()
    assert steps[:2] == ["InlinePass", "FoldConstantsPass"]
    assert steps[-1] == "NameFixPass" and "CommonSubexpressionEliminationPass" in steps
    assert set(target.available_passes()) > set(steps)  # common adds the opt-in rules
    assert "HardSwishFusion" in target.available_passes()


def test_every_step_named_is_optimize_itself(target) -> None:
    """The full default step list, built step by step, gives optimize()'s bytes."""
    config = target.with_passes(target.default_config(), target.default_passes())
    assert target.runs_optimize(config)
    from fuzzer.targets.onnxscript.target import build_pipeline

    for seed in range(12):
        model = generate(seed, passes=["InlinePass"], interfaces=[]).model
        expected = onnxscript.optimizer.optimize(onnx.ModelProto.FromString(
            model.SerializeToString()))
        import onnx_ir as ir

        built = ir.serde.deserialize_model(model)
        rules = [r for named in rule_set("default") for r in named.rules]
        build_pipeline(set(target.default_passes()), rules)(built)
        assert ir.serde.serialize_model(built).SerializeToString() == \
            expected.SerializeToString()


def test_optimize_leaves_its_input_alone(target) -> None:
    """optimize() renames tensors of the ModelProto it is given; the target passes a copy,
    also to a run that raises (onnxscript's fuse_pad_into_conv reads the pads input of a
    Pad-2, which holds them in an attribute: IndexError on seed 0)."""
    for seed in range(15):
        model = generate(seed).model
        before = model.SerializeToString()
        with contextlib.suppress(Exception):
            target.optimize(model, target.default_config())
        assert model.SerializeToString() == before


def test_repro_snippet_replays_a_sublist(target) -> None:
    rng = random.Random(3)
    names = target.steps_of("common")
    for seed in range(6):
        model = generate(seed, passes=["FuseSuccessiveClip", "InlinePass"]).model
        config = {"rule_set": rng.choice(["default", "common"]),
                  "passes": sorted(rng.sample(names, 25), key=names.index)}
        namespace = {"model": onnx.ModelProto.FromString(model.SerializeToString()),
                     "onnx": onnx}
        exec(target.repro_snippet(config), namespace)
        assert namespace["optimized"].SerializeToString() == \
            target.optimize(model, config).SerializeToString()


def test_no_step_leaves_the_graph(target) -> None:
    model = generate(4, passes=["FuseSuccessiveClip"]).model
    out = target.optimize(model, {"rule_set": "default", "passes": []})
    assert [n.op_type for n in out.graph.node] == [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("motif", FUNCTION_MOTIFS)
def test_function_motifs_are_valid_and_run(motif: str) -> None:
    ort.set_default_logger_severity(3)
    made = [gm for gm in (generate(seed, motifs=[motif], opset=15 + seed % 7)
                          for seed in range(12)) if motif in gm.motifs][:4]
    assert len(made) >= 3, motif
    for seed, gm in enumerate(made):
        assert gm.model.functions, motif
        calls = {(f.domain, f.name) for f in gm.model.functions}
        assert any((n.domain, n.op_type) in calls for n in gm.model.graph.node)
        onnx.checker.check_model(gm.model, full_check=True)
        feeds = synthesize_inputs(gm.model, seed, gm.input_shapes or {})
        session = ort.InferenceSession(gm.model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        assert all(np.isfinite(o).all() for o in session.run(None, feeds)
                   if o.dtype.kind == "f")


def test_attribute_references_and_defaults() -> None:
    """Some generated functions read attributes by reference and declare defaults."""
    refs = defaults = 0
    for seed in range(20):
        model = generate(seed, motifs=["fn-scaled-activation", "fn-permute-softmax"],
                         opset=19).model
        for f in model.functions:
            defaults += len(f.attribute_proto)
            refs += sum(1 for n in f.node for a in n.attribute if a.ref_attr_name)
    assert refs > 0 and defaults > 0


def test_inlining_is_documented_growth(target) -> None:
    from oracles.base import Finding

    grew = Finding("bloat", "compare", "node count grew from 1 to 6",
                   {"ops_removed": {"ScaledAct_0": 1}, "ops_added": {"Mul": 1}})
    assert target.documented(grew, target.default_config()).name == "functions-inlined"
    assert target.documented(grew, {"rule_set": "default", "passes": ["FoldConstantsPass"]}) \
        is None


def test_motif_hints_name_rules_and_donors(target) -> None:
    hints = target.motif_hints({"rule_set": "default", "passes": ["FuseBatchNormIntoConv",
                                                                  "InlinePass"]})
    assert hints[:2] == ["FuseBatchNormIntoConv", "InlinePass"]
    assert "fuse_bn_into_conv" in hints  # the onnxoptimizer family that builds Conv + BN
    gm = generate(0, passes=["FuseSuccessiveClip"])
    assert any(m.startswith("os-") for m in gm.motifs)


@pytest.mark.parametrize("name", cases(DATA))
def test_planted_detected_and_localized(name: str, sandbox: Sandbox) -> None:
    check_detected_and_localized(DATA / name, sandbox)


@pytest.mark.parametrize("name", cases(DATA))
def test_planted_repro_py_exits_1(name: str, sandbox: Sandbox) -> None:
    check_repro_exits_1(DATA / name, sandbox)
