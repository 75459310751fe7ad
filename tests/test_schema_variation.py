"""Schema-complete variation: feature spaces read from onnx.defs, pairwise plans that cover
every feasible pair, varied draws that stay valid, and ``coverage --schema``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType

import onnx
import pytest
from typer.testing import CliRunner

from fuzzer.cli import app
from generators import recipe
from generators.generate import generate
from generators.inputs import synthesize_inputs
from generators.motifs import families
from generators.schema.kernels import cast_reason
from generators.schema.measure import schema_coverage
from generators.schema.plan import build_plan, motif_plan, op_pairs_with_opset
from generators.schema.space import op_space
from tests.conftest import cpu_session

#: the motif folders (generators/motifs/<folder>/) of the targets other than onnxoptimizer
#: whose motifs declare anchor ops.
TARGET_FOLDERS = ("onnxslim", "onnxscript", "onnxruntime_transformers", "onnxruntime",
                  "onnxsim", "version_converter")
#: varied draws per anchored motif of a target folder.
TARGET_DRAWS = 3


def _anchored(modules: list[ModuleType]) -> list[str]:
    """Names of the anchored motifs (with an emitter) of family ``modules``."""
    return sorted(m.name for mod in modules for m in mod.MOTIFS
                  if m.anchors and m.emit is not None)


def _in_folder(mod: ModuleType, folder: str) -> bool:
    """Whether family ``mod`` is one of ``generators/motifs/<folder>/``."""
    return mod.__name__.startswith(f"generators.motifs.{folder}.")


#: anchored motifs of the shared families (onnxoptimizer's among them).
ANCHORED = _anchored([mod for mod in families()
                      if not any(_in_folder(mod, f) for f in TARGET_FOLDERS)])


@pytest.fixture(scope="module")
def always() -> str:
    """A generator like v2 whose every anchored motif draw takes a plan row."""
    recipe.RECIPES["v2-always"] = dataclasses.replace(recipe.RECIPES["v2"], name="v2-always",
                                                      schema_share=1.0)
    yield "v2-always"
    recipe.RECIPES.pop("v2-always", None)


def test_space_is_read_from_the_schema() -> None:
    conv = op_space("Conv", 7, 21)
    assert conv is not None
    names = {f.name: f.levels for f in conv.factors}
    assert names["opset"] == ("1", "11")
    assert set(names["dtype:T"]) == {"float16", "float", "double"}
    assert names["attr:group"] == ("absent", "default", "nondefault", "edge")
    assert names["in:B"] == ("absent", "empty", "present")
    bn = op_space("BatchNormalization", 15, 21)
    assert bn is not None and "dtype:T1" in {f.name for f in bn.factors}
    assert "out:running_mean" in {f.name for f in bn.factors}
    assert op_space("NoSuchOp", 7, 21) is None


def test_pairwise_plan_covers_every_pair_of_a_small_schema() -> None:
    # LeakyRelu at opsets 7..21: two versions, one float attribute, one type constraint
    plan = build_plan("leaky", ("LeakyRelu",), 7, 21)
    want = plan.pairs["LeakyRelu"]
    assert want  # e.g. (opset 16, dtype:T bfloat16) needs onnxruntime's kernel: infeasible
    have = set()
    for row in plan.rows:
        have |= {p for op, p in op_pairs_with_opset(row, plan.spaces)}
    assert want <= have
    space = plan.spaces["LeakyRelu"]
    assert set(space.pairs()) == set(want) | set(plan.infeasible["LeakyRelu"])
    assert all("onnxruntime" in why for why in plan.infeasible["LeakyRelu"].values())
    # far fewer rows than the product of the levels
    levels = [len(f.levels) for f in space.factors]
    product = 1
    for n in levels:
        product *= n
    assert len(plan.rows) < product


def test_an_anchor_absent_at_some_opsets_leaves_the_others_their_pairs() -> None:
    # LayerNormalization exists from opset 17: rows of opsets 14-16 hold none of its levels
    plan = build_plan("relu-ln", ("Relu", "LayerNormalization"), 14, 18)
    assert any(("opset", "14") in p for p in plan.pairs["Relu"])
    assert not any("does not exist" in why for why in plan.infeasible["Relu"].values())
    assert plan.pairs["LayerNormalization"]
    early = [r for r in plan.rows if int(r["opset"]) < 17]
    assert early and all(plan.op_row(r, "LayerNormalization") == {} for r in early)


def test_a_cast_its_opset_does_not_have_carries_its_reason() -> None:
    assert cast_reason("float", "string", 8) == "Cast-6 does not take string for T2"
    assert cast_reason("float", "string", 13) is None
    assert "does not take float8e4m3fn" in cast_reason("float", "float8e4m3fn", 18)


def test_ties_follow_the_node_a_draw_retypes() -> None:
    # the first Gather of tb-embed-layer-norm reads its float table; a later Gather reads the
    # int64 Shape of the ids: the two are not tied (a plan with them tied had no row)
    plan = motif_plan("tb-embed-layer-norm")
    assert plan is not None and plan.rows and plan.pairs["Gather"]


def test_infeasible_pairs_carry_their_reason() -> None:
    plan = motif_plan("conv-bn")
    assert plan is not None
    reasons = set(plan.infeasible["Conv"].values()) | set(
        plan.infeasible["BatchNormalization"].values())
    assert any("no CPU kernel for Conv" in r for r in reasons)
    assert any("training mode" in r for r in reasons)  # a rule of generators.schema.rules
    assert any("ties BatchNormalization.T to Conv.T" in r for r in reasons)


def _checked_draw(seed: int, generator: str, name: str) -> bool:
    """Generate one model of motif ``name``, check it (full check) and run it in onnxruntime;
    whether its draw took a plan row."""
    gm = generate(seed, generator, motifs=[name])
    onnx.checker.check_model(gm.model, full_check=True)
    cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    return bool(gm.varied)


def test_every_varied_draw_passes_the_checker_and_runs(always: str) -> None:
    varied = sum(_checked_draw(seed, always, ANCHORED[seed % len(ANCHORED)])
                 for seed in range(360))
    assert varied >= 300


@pytest.mark.parametrize("folder", TARGET_FOLDERS)
def test_every_targets_varied_draws_pass_the_checker_and_run(always: str, folder: str) -> None:
    names = _anchored([mod for mod in families() if _in_folder(mod, folder)])
    assert names, folder
    varied = sum(_checked_draw(seed, always, name) for i, name in enumerate(names)
                 for seed in range(i * TARGET_DRAWS, (i + 1) * TARGET_DRAWS))
    assert varied >= len(names) * TARGET_DRAWS // 2, (folder, varied)


def test_varied_draws_exercise_more_pairs(always: str) -> None:
    plain = dataclasses.replace(recipe.RECIPES["v2"], name="v2-never", schema_share=0.0)
    recipe.RECIPES["v2-never"] = plain
    try:
        for name in ("conv-bn", "squeeze-chain"):
            before = schema_coverage(
                [generate(s, "v2-never", motifs=[name]) for s in range(60)], [name])[name]
            after = schema_coverage(
                [generate(s, always, motifs=[name]) for s in range(60)], [name])[name]
            assert after.hit > 1.5 * before.hit, (name, before.hit, after.hit)
            assert after.varied == after.draws > 40
    finally:
        recipe.RECIPES.pop("v2-never", None)


def test_varied_draws_are_deterministic(always: str) -> None:
    for seed in range(12):
        name = ANCHORED[seed % len(ANCHORED)]
        a = generate(seed, always, motifs=[name])
        b = generate(seed, always, motifs=[name])
        assert a.model.SerializeToString() == b.model.SerializeToString()
        assert a.varied == b.varied


def test_coverage_schema_prints_the_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    result = CliRunner().invoke(app, ["coverage", "--schema", "--target", "onnxoptimizer",
                                      "--passes", "fuse_bn_into_conv,eliminate_deadend",
                                      "--cases", "12", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "conv-bn" in result.output and "fuse_bn_into_conv" in result.output
    doc = json.loads(out.read_text())
    row = doc["passes"]["fuse_bn_into_conv"]["motifs"]["conv-bn"]
    assert row["pairs"] > 0 and 0 < row["covered"] <= row["pairs"]
    assert set(row["per_op"]) == {"Conv", "BatchNormalization"}
    assert row["infeasible"]  # reasons, counted
    walk = row["walked"]
    assert walk["covered"] + sum(walk["limits"].values()) + walk["gaps"] == walk["pairs"]
    assert "more where the walk covers all but pairs the anchor ops cannot take" in \
        " ".join(result.output.split())
    assert doc["passes"]["eliminate_deadend"]["motifs"] == {}


def test_a_row_with_no_feasible_pair_says_why_instead_of_a_share(tmp_path: Path) -> None:
    # the version converter's Resize 10->11 pins opset 10, where oc-resize's Resize (from
    # opset 11) does not exist: every pair is infeasible, and the row says so
    out = tmp_path / "schema.json"
    result = CliRunner().invoke(app, ["coverage", "--schema", "--target", "version-converter",
                                      "--passes", "Resize 10->11", "--cases", "4",
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())["passes"]["Resize 10->11"]["motifs"]["oc-resize"]
    assert row["pairs"] == 0 and row["infeasible"]
    text = " ".join(result.output.split())
    assert "no feasible pair" in text and "1 with no feasible pair" in text


def test_plans_are_built_once_and_kept_on_disk(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from generators.schema import store

    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path))
    store.plans_folder.cache_clear()
    motif_plan.cache_clear()
    try:
        name = "conv-bn"
        built = motif_plan(name)
        kept = store.plans_folder() / f"{name}.pickle"
        assert kept.is_file() and kept.parent.parent == tmp_path / "schema-plans"
        motif_plan.cache_clear()
        with monkeypatch.context() as patch:
            patch.setattr("generators.schema.plan.build_plan", None)  # read back, not built
            assert motif_plan(name) == built
        kept.write_bytes(b"not a pickle")
        motif_plan.cache_clear()
        assert motif_plan(name) == built and kept.read_bytes() != b"not a pickle"
    finally:
        store.plans_folder.cache_clear()
        motif_plan.cache_clear()


def test_coverage_schema_counts_a_draw_the_generator_raises_on_and_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A generator bug on one seed (a motif raised ValueError at onnxsim's shape_inference)
    ended the whole table with a traceback; it is counted and named, the rest measured."""
    import generators.generate as generate_module

    real = generate_module.generate

    def raises_on_seed_3(seed: int, *args, **kwargs):
        if seed == 3:
            raise ValueError("planted")
        return real(seed, *args, **kwargs)

    monkeypatch.setattr(generate_module, "generate", raises_on_seed_3)
    out = tmp_path / "schema.json"
    result = CliRunner().invoke(app, ["coverage", "--schema", "--target", "onnxoptimizer",
                                      "--passes", "fuse_bn_into_conv", "--cases", "6",
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "draw(s) of pass fuse_bn_into_conv failed to generate" in result.output
    entry = json.loads(out.read_text())["passes"]["fuse_bn_into_conv"]
    assert entry["failed"]["first"][0] == "seed 3: ValueError: planted"
    assert entry["motifs"]["conv-bn"]["pairs"] > 0


def test_uncovered_pairs_the_anchors_cannot_take_are_told_from_the_generators_gaps() -> None:
    from generators.schema.limits import limit_of
    from generators.schema.measure import MotifCoverage

    assert limit_of("Cast-6 does not take uint16 for T2") == "schema"
    assert limit_of("a later input is listed") == "schema"
    assert limit_of("onnxruntime's Gather requires axis within the input's rank") == \
        "onnxruntime"
    assert limit_of("the motif's pattern reads the output") == "pattern"
    for gap in ("no draw took this pair", "no candidate value of this level",
                "onnxruntime refuses the varied draw, draw undone (…)"):
        assert limit_of(gap) is None
    pairs = frozenset((("opset", "1"), ("attr:a", str(i))) for i in range(100))
    cov = MotifCoverage("m", ("Op",), feasible={"Op": pairs},
                        covered={"Op": set(list(pairs)[:88])})
    cov.uncovered.update({"a later input is listed": 9, "no draw took this pair": 3})
    row = cov.as_json()
    assert row["share"] == 0.88 and row["limits"] == {"schema": 9} and row["gaps"] == 3
    assert row["accounted"] == 0.97


def test_the_strict_check_of_a_draw_reads_the_value_info_the_motifs_declared() -> None:
    import random

    import numpy as np
    from onnx import TensorProto, helper

    from generators.builder import GraphBuilder
    from generators.names import Namer
    from generators.schema.apply import _strict_error

    b = GraphBuilder(random.Random(0), np.random.default_rng(0), 17,
                     Namer("plain", random.Random(0)))
    x = b.graph_input(TensorProto.FLOAT, (2, 3))
    y = b.op("Neg", [x], TensorProto.FLOAT, (2, 3))
    b.op("Relu", [y], TensorProto.FLOAT, (2, 3))
    assert _strict_error(b) is None
    b.value_infos.append(helper.make_tensor_value_info(y.name, TensorProto.BOOL, [2, 3]))
    assert _strict_error(b) is not None


def test_onnxruntimes_bfloat16_layer_norm_statistics_are_infeasible() -> None:
    from generators.schema.rules import refusal

    assert "ReduceMean has no bfloat16 kernel" in refusal(
        "LayerNormalization", 17, {"attr:stash_type": "nondefault", "out:Mean": "consumed"})
    assert refusal("LayerNormalization", 17, {"attr:stash_type": "nondefault",
                                              "out:Mean": "absent"}) is None


def test_a_quantize_without_zero_point_or_output_dtype_makes_uint8_only() -> None:
    from generators.schema.rules import refusal

    no_zero = {"in:y_zero_point": "empty", "dtype:T2": "int8"}
    assert "makes uint8" in refusal("QuantizeLinear", 19, no_zero)
    assert refusal("QuantizeLinear", 19, {**no_zero, "dtype:T2": "uint8"}) is None
    assert refusal("QuantizeLinear", 21, {**no_zero, "attr:output_dtype": "nondefault"}) \
        is None
    assert refusal("QuantizeLinear", 19, {**no_zero, "in:y_zero_point": "present"}) is None


def test_a_constant_takes_exactly_one_value_attribute_of_its_type() -> None:
    """Two value attributes, none where all are given, or a value_float on an int32 node are
    refused, and onnx's checker refuses such a Constant indeed; one value attribute of its
    own type is not."""
    from onnx import helper

    from generators.schema.levels import ABSENT
    from generators.schema.rules import refusal

    assert refusal("Constant", 21, {"attr:value": "nondefault", "attr:value_ints": "edge"})
    assert refusal("Constant", 21, {"attr:value_float": "nondefault", "dtype:T": "int32"})
    assert refusal("Constant", 11, {"attr:value": ABSENT, "attr:sparse_value": ABSENT})
    assert refusal("Constant", 21, {"attr:value_float": "nondefault", "dtype:T": "float"}) \
        is None
    assert refusal("Constant", 21, {"attr:value": ABSENT, "attr:value_int": ABSENT}) is None
    node = helper.make_node("Constant", [], ["y"], value_float=1.0, value_int=2)
    model = helper.make_model(helper.make_graph([node], "g", [], [
        helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [])]),
        opset_imports=[helper.make_opsetid("", 21)])
    with pytest.raises(onnx.shape_inference.InferenceError, match="One and only one"):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
