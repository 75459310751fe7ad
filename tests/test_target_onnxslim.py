"""The onnxslim target: its registered fusion patterns and optimization steps as the
configuration, ``skip_fusion_patterns`` / ``skip_optimizations`` / ``no_shape_infer`` as what
localization switches off, its documented behaviour, and models that onnxslim 0.1.98
mis-slims, one per symptom it showed (tests/data/onnxslim/*/case.json says which campaign
bundle each came from: optimizer-error, invalid-model, runtime-failure, output-mismatch,
bloat). Its load failure was FusionGemm's valid int64 Gemm, which onnxruntime has no kernel
for: a portability note, never bundled (portability-int64-gemm/). It showed no
optimizer-abort or hang, and no metadata-change beyond the unused graph inputs it documents
removing."""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzzer.execution.sandbox import Sandbox
from fuzzer.targets import get_target
from oracles.base import Finding
from tests import planted_cases
from tests import rewriter_checks as checks

onnxslim = pytest.importorskip("onnxslim")
sandbox = checks.sandbox  # the planted cases' worker pool (a module fixture)
DATA = Path(__file__).parent / "data" / "onnxslim"
CASES = planted_cases.cases(DATA)


@pytest.fixture(scope="module")
def target():
    return get_target("onnxslim")


def conv_bn_identity(ir_version: int = 8) -> onnx.ModelProto:
    """x -> Conv -> BatchNormalization -> Identity -> y (opset 13; IR 3 lists the
    initializers among the graph inputs)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
        ("w", rng.standard_normal((2, 1, 1, 1))), ("s", np.ones(2)), ("b", np.zeros(2)),
        ("m", np.zeros(2)), ("v", np.ones(2))]]
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"]),
             helper.make_node("BatchNormalization", ["t", "s", "b", "m", "v"], ["u"]),
             helper.make_node("Identity", ["u"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])]
    if ir_version < 4:
        inputs += [helper.make_tensor_value_info(i.name, TensorProto.FLOAT, list(i.dims))
                   for i in inits]
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [1, 2, 3, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7 if ir_version < 4
                                                                       else 13)],
                             ir_version=ir_version)


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_passes_are_its_patterns_and_steps_enablers_first(target):
    from onnxslim.core.optimization import OptimizationSettings
    from onnxslim.core.pattern.registry import DEFAULT_FUSION_PATTERNS

    passes = target.available_passes()
    assert passes[:2] == ["shape_infer", "constant_folding"]
    assert set(DEFAULT_FUSION_PATTERNS) <= set(passes)
    steps = set(OptimizationSettings.keys()) - {"graph_fusion"}
    assert set(passes) == set(DEFAULT_FUSION_PATTERNS) | steps | {"shape_infer"}


def test_a_configuration_is_slims_own_options(target):
    nothing = target.slim_options(target.with_passes({}, []))
    assert set(nothing["skip_fusion_patterns"]) == set(target.fusion_patterns())
    assert "graph_fusion" not in nothing["skip_optimizations"]  # the round trip stays
    assert set(nothing["skip_optimizations"]) == {"constant_folding", "dead_node_elimination",
                                                  "subexpression_elimination", "weight_tying"}
    assert nothing["no_shape_infer"] is True
    one = target.slim_options(target.with_passes({}, ["FusionConvBN", "shape_infer"]))
    assert "FusionConvBN" not in one["skip_fusion_patterns"] and not one["no_shape_infer"]
    everything = target.slim_options(target.default_config())
    assert everything == {"skip_fusion_patterns": [], "skip_optimizations": [],
                          "no_shape_infer": False, "size_threshold": 1 << 20}


def test_optimize_honours_the_skip_options_and_keeps_its_input(target):
    model = conv_bn_identity()
    before = model.SerializeToString()
    fused = target.optimize(model, target.with_passes({}, ["FusionConvBN"]))
    assert ops(fused) == ["Conv", "Identity"]
    cleaned = target.optimize(model, target.with_passes({}, ["FusionConvBN",
                                                            "dead_node_elimination"]))
    assert ops(cleaned) == ["Conv"]
    assert ops(target.optimize(model, target.with_passes({}, []))) == ops(model)
    assert model.SerializeToString() == before  # slim's freeze ran on a copy


def test_repro_snippet_runs_the_same_configuration(target):
    config = target.with_passes({}, ["FusionConvBN"])
    scope = {"onnx": onnx, "model": conv_bn_identity()}
    exec(target.repro_snippet(config), scope)  # noqa: S102 - the snippet repro.py runs
    assert ops(scope["optimized"]) == ["Conv", "Identity"]


def test_the_ablation_names_slims_own_option(target):
    config = target.default_config()
    assert "`no_shape_infer=True`" in target.ablation_line(config, "shape_infer", "x")
    assert "`FusionGemm` also in `skip_fusion_patterns`" in \
        target.ablation_line(config, "FusionGemm", "x")
    assert "`weight_tying` also in `skip_optimizations`" in \
        target.ablation_line(config, "weight_tying", "x")


def test_configurations_draw_slims_names(target):
    checks.check_configurations(target, ["FusionGemm"])


def test_documented_behaviour(target):
    pruned = Finding("metadata-change", "compare", "graph inputs changed",
                     {"before": [["x", 1], ["unused", 1]], "after": [["x", 1]]})
    assert target.documented(pruned, target.default_config()).name == \
        "unused-graph-inputs-removed"
    renamed = Finding("metadata-change", "compare", "graph inputs changed",
                      {"before": [["x", 1]], "after": [["x2", 1]]})
    assert target.documented(renamed, target.default_config()) is None
    scaffold = Finding("bloat", "compare", "node count grew from 2 to 3",
                       {"ops_added": {"Reshape": 2, "Gemm": 1}, "ops_removed": {"MatMul": 1,
                                                                                "Add": 1}})
    assert target.documented(scaffold, target.with_passes({}, ["FusionGemm"])).name == \
        "gemm-reshape-scaffolding"
    assert target.documented(scaffold, target.with_passes({}, ["FusionGemmMul"])) is None


def test_an_ir3_model_leaves_invalid_whatever_runs(target):
    model = conv_bn_identity(ir_version=3)
    onnx.checker.check_model(model, full_check=True)
    slimmed = target.optimize(model, target.with_passes({}, []))
    with pytest.raises(onnx.checker.ValidationError, match="not in graph input") as info:
        onnx.checker.check_model(slimmed)
    finding = Finding("invalid-model", "validate", f"ValidationError: {info.value}", {})
    assert target.shared_cause(finding) == "freeze-ir3-initializers"


def _string_constant(folded: bool) -> onnx.ModelProto:
    """A string constant that onnxslim's exporter must write: folded by constant_folding
    from a Cast to string of an int64 initializer, or a string initializer that
    dead_node_elimination keeps beside a Concat."""
    if folded:
        nodes = [helper.make_node("Cast", ["w"], ["s"], to=TensorProto.STRING),
                 helper.make_node("Shape", ["s"], ["y"])]
        inits = [numpy_helper.from_array(np.full((1, 4), 2, np.int64), "w")]
        io = ([], [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    else:
        nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.STRING),
                 helper.make_node("Concat", ["c", "w"], ["y"], axis=0)]
        inits = [helper.make_tensor("w", TensorProto.STRING, [1, 2], [b"a", b"b"])]
        io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
              [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 2])])
    graph = helper.make_graph(nodes, "g", *io, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("folded", [True, False])
def test_a_crash_in_the_exporter_is_one_cause_whatever_pass_made_its_input(target, folded):
    """Both passes hand the exporter a string constant, which it stores in raw_data: the
    same exporter function raises, so both findings share one cause."""
    model = _string_constant(folded)
    onnx.checker.check_model(model, full_check=True)
    passes = ["constant_folding"] if folded else ["dead_node_elimination"]
    with pytest.raises(TypeError, match="raw_data") as info:
        target.optimize(model, target.with_passes({}, passes))
    text = "".join(traceback.format_exception(info.value))
    finding = Finding("optimizer-error", "optimize", f"TypeError: {info.value}",
                      {"traceback": text})
    assert target.shared_cause(finding) == "exporter stores a string tensor in raw_data"
    elsewhere = text.replace("exporters/onnx_exporter.py", "core/pattern/fusion/gemm.py")
    # the exporter's own refusal, through its logger: the pass that made the graph is at fault
    refused = text.replace('onnx/helper.py", line', 'onnxslim/third_party/onnx_graphsurgeon/'
                           'logger/logger.py", line')
    for other in (elsewhere, refused):
        assert target.shared_cause(Finding("optimizer-error", "optimize", finding.message,
                                           {"traceback": other})) is None
    # an empty ints attribute: the exporter cannot write it, but a pass may have written it
    # wrongly (an empty perm), so the pass stays at fault
    empty = Finding("optimizer-error", "optimize", "ValueError: Could not infer attribute "
                    "`perm` type from empty iterator", {"traceback": text})
    assert target.shared_cause(empty) is None
    assert target.shared_cause(Finding("optimizer-error", "optimize", "TypeError: x",
                                       {})) is None


@pytest.mark.parametrize("name", CASES)
def test_found_localized_to_its_rewrite_and_reproduced(name: str, sandbox: Sandbox) -> None:
    """Detected through the real target, localized to the recorded rewrites, keyed by the
    breaking one; the bundle's repro.py (minimal rewrites enabled) exits 1."""
    planted_cases.check_detected_and_localized(DATA / name, sandbox)
    planted_cases.check_repro_exits_1(DATA / name, sandbox)


@pytest.mark.slow
def test_coverage_names_slims_rewrites(tmp_path: Path) -> None:
    report = checks.coverage_report("onnxslim", ["FusionConvBN", "EliminationTranspose"], 4,
                                    tmp_path)
    assert report["FusionConvBN"]["reached"] and report["FusionConvBN"]["motifs"]
    assert report["EliminationTranspose"]["motifs"]


def test_a_valid_int64_gemm_onnxruntime_cannot_load_is_a_portability_note(sandbox):
    """FusionGemm fuses an int64 MatMul + Add into a Gemm, which Gemm-13 allows; onnxruntime
    has no int64 Gemm kernel (docs/OperatorKernels.md), so the model fails to load."""
    planted_cases.check_portability_note(DATA / "portability-int64-gemm", sandbox)
