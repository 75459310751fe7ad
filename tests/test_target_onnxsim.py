"""The onnxsim target: onnx-simplifier's own pass list and stages as the configuration,
``skipped_optimizers`` / ``skip_*`` as what localization switches off, its documented
behaviour, and models that onnxsim 0.8.1 mis-simplifies, one per symptom it showed
(tests/data/onnxsim/*/case.json says which campaign bundle each came from: optimizer-error,
invalid-model, runtime-failure, output-mismatch, bloat; its load failure, pads fused past
the kernel, is a portability note: portability-pads-over-kernel/). It showed no
optimizer-abort, and no metadata-change beyond its documented IR 3 -> 4 upgrade; its only
hangs came from folding the corpus's "light" models' weights at its default 1.5GB tensor
threshold, which the target lowers to 1MB."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzzer.execution.sandbox import Sandbox
from fuzzer.targets import get_target
from fuzzer.targets.onnxsim.passes import ALWAYS_DISABLED, OPTED_IN, OWN_STAGES
from oracles.base import Finding
from tests import planted_cases
from tests import rewriter_checks as checks

onnxsim = pytest.importorskip("onnxsim")
sandbox = checks.sandbox  # the planted cases' worker pool (a module fixture)
DATA = Path(__file__).parent / "data" / "onnxsim"
CASES = planted_cases.cases(DATA)


@pytest.fixture(scope="module")
def target():
    return get_target("onnxsim")


def conv_bn_plus_constants() -> onnx.ModelProto:
    """x -> Conv -> BatchNormalization -> Add(c1 + c2) -> y, where c1 + c2 is constant-only
    work (IR 8, opset 13)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
        ("w", rng.standard_normal((2, 1, 1, 1))), ("s", np.ones(2)), ("b", np.zeros(2)),
        ("m", np.zeros(2)), ("v", np.ones(2)), ("c1", np.ones(1)), ("c2", np.ones(1))]]
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"]),
             helper.make_node("BatchNormalization", ["t", "s", "b", "m", "v"], ["u"]),
             helper.make_node("Add", ["c1", "c2"], ["c"]),
             helper.make_node("Add", ["u", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_passes_are_onnxsims_default_list_and_its_stages(target):
    from onnxsim import onnxsim_cpp2py_export as core

    core._list_other_optimizers()
    listed = list(core._list_optimizers())
    passes = target.available_passes()
    assert passes[:2] == list(OWN_STAGES)
    assert set(passes[2:]) == (set(listed) - set(ALWAYS_DISABLED)) | set(OPTED_IN)
    assert "fuse_bn_into_conv" in passes and "fuse_mul_into_conv" in passes
    assert not set(ALWAYS_DISABLED) & set(passes)


def test_a_configuration_is_simplifys_own_switches(target):
    nothing = target.simplify_options(target.with_passes({}, []))
    assert nothing["perform_optimization"] is False
    assert nothing["skip_constant_folding"] and nothing["skip_shape_inference"]
    assert nothing["check_n"] == 0 and nothing["tensor_size_threshold"] == "1MB"
    one = target.simplify_options(target.with_passes({}, ["fuse_bn_into_conv",
                                                         "constant_folding"]))
    assert "fuse_bn_into_conv" not in one["skipped_optimizers"]
    assert set(one["skipped_optimizers"]) == set(target.optimizer_passes()) - \
        {"fuse_bn_into_conv"}
    assert not one["skip_constant_folding"] and one["skip_shape_inference"]
    without_bn = [p for p in target.available_passes() if p != "fuse_bn_into_conv"]
    options = target.simplify_options(target.with_passes({}, without_bn))
    assert options["skip_fuse_bn"] is True and options["skipped_optimizers"] == []
    everything = target.simplify_options(target.default_config())
    assert everything["skipped_optimizers"] == [] and "skip_fuse_bn" not in everything


def test_optimize_honours_skipped_optimizers_and_stages(target):
    model = conv_bn_plus_constants()
    fused = target.optimize(model, target.with_passes({}, ["fuse_bn_into_conv",
                                                          "constant_folding"]))
    assert "BatchNormalization" not in ops(fused) and ops(fused).count("Add") == 1
    kept = target.optimize(model, target.with_passes({}, ["constant_folding"]))
    assert "BatchNormalization" in ops(kept) and ops(kept).count("Add") == 1
    untouched = target.optimize(model, target.with_passes({}, []))
    assert ops(untouched) == ops(model)


def test_repro_snippet_runs_the_same_configuration(target):
    config = target.with_passes({}, ["fuse_bn_into_conv"])
    scope = {"onnx": onnx, "model": conv_bn_plus_constants()}
    exec(target.repro_snippet(config), scope)  # noqa: S102 - the snippet repro.py runs
    assert ops(scope["optimized"]) == ops(target.optimize(conv_bn_plus_constants(), config))
    assert "skip_fuse_bn" not in target.repro_snippet(config)
    assert "SKIPPED = [" in target.repro_snippet(config)


def test_the_ablation_names_onnxsims_own_switch(target):
    config = target.default_config()
    assert "`skip_constant_folding=True`" in target.ablation_line(config, "constant_folding",
                                                                  "output-mismatch")
    assert "`skip_fuse_bn=True`" in target.ablation_line(config, "fuse_bn_into_conv", "x")
    assert "`fuse_gelu` also in `skipped_optimizers`" in \
        target.ablation_line(config, "fuse_gelu", "x")


def test_configurations_draw_onnxsims_names(target):
    checks.check_configurations(target, ["fuse_gelu", "shape_inference"])


def test_documented_behaviour(target):
    named = target.with_passes({}, ["fuse_matmul_add_bias_into_gemm_batched"])
    upgrade = Finding("metadata-change", "compare", "IR version 3 became 4", {})
    assert target.documented(upgrade, named).name == "initializers-immutable"
    growth = Finding("bloat", "compare", "node count grew from 2 to 3",
                     {"ops_added": {"Reshape": 2, "Gemm": 1}, "ops_removed": {"MatMul": 1},
                      "survives_cleanup": True})
    assert target.documented(growth, named).name == "documented-expansion"
    assert target.documented(growth, target.default_config()) is None  # names no pass
    other = Finding("bloat", "compare", "grew", {"ops_added": {"Tile": 1}, "ops_removed": {},
                                                 "survives_cleanup": True})
    assert target.documented(other, named) is None
    folded = Finding("bloat", "compare", "node count grew from 2 to 3",
                     {"ops_added": {"Constant": 2}, "ops_removed": {"Split": 1},
                      "survives_cleanup": True})  # a Split folded into one Constant per output
    folding = target.with_passes({}, ["constant_folding"])
    assert target.documented(folded, folding).name == "documented-expansion"
    assert target.documented(other, folding) is None
    left = Finding("bloat", "compare", "grew", {"ops_added": {"Mul": 1},
                                                "survives_cleanup": False})
    assert target.documented(left, named).name == "work-left-for-its-own-stages"
    nan = Finding("output-mismatch", "compare", "NaN", {"kind": "nan"})
    assert target.documented(nan, target.with_passes({}, ["eliminate_nop_softmax"])).name == \
        "softmax-of-one-element-is-constant"
    assert target.documented(nan, named) is None


def test_ir3_initializer_errors_share_one_cause(target):
    crash = Finding("optimizer-error", "optimize",
                    "RuntimeError: t in initializer but not in graph input", {})
    assert target.shared_cause(crash) == "ir3-initializers-not-inputs"
    assert target.shared_cause(Finding("optimizer-error", "optimize", "RuntimeError: x", {})) \
        is None


@pytest.mark.parametrize("name", CASES)
def test_found_localized_to_its_rewrite_and_reproduced(name: str, sandbox: Sandbox) -> None:
    """Detected through the real target, localized to the recorded rewrites, keyed by the
    breaking one; the bundle's repro.py (minimal rewrites enabled) exits 1."""
    planted_cases.check_detected_and_localized(DATA / name, sandbox)
    planted_cases.check_repro_exits_1(DATA / name, sandbox)


@pytest.mark.slow
def test_coverage_names_onnxsims_rewrites(tmp_path: Path) -> None:
    report = checks.coverage_report("onnxsim", ["fuse_bn_into_conv", "fuse_rms_norm"], 3, tmp_path)
    assert report["fuse_bn_into_conv"]["motifs"]
    assert not report["fuse_rms_norm"]["reached"]
    assert "opset >= 23" in report["fuse_rms_norm"]["reason"]


def test_fused_pads_over_the_kernel_are_a_portability_note(sandbox):
    """fuse_pad_into_pool adds a Pad's pads to a pool's, which the ONNX spec allows;
    onnxruntime refuses pads as large as the kernel (pool_attributes.h:88), a rule of its
    own: counted as a portability note, not bundled."""
    planted_cases.check_portability_note(DATA / "portability-pads-over-kernel", sandbox)
