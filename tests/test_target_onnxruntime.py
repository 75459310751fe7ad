"""The onnxruntime target: levels and transformer names, disabled_optimizers as the pass
list, the optimized model onnxruntime saves, and a campaign through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.targets import get_target


@pytest.fixture(scope="module")
def target():
    return get_target("onnxruntime")


def identity_relu() -> onnx.ModelProto:
    """x -> Identity -> Relu -> y (IR 8, opset 17)."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_levels_grow_and_every_name_is_documented(target):
    levels = target.levels()
    assert levels[0] == "basic" and levels[-1] == "all"
    sizes = [len(target.names_up_to(level)) for level in levels]
    assert sizes == sorted(sizes) and sizes[0] > 0
    basic = set(target.names_up_to("basic"))
    assert basic <= set(target.names_up_to("all"))
    assert "EliminateIdentity" in basic
    assert target.describe("EliminateIdentity")


def test_the_pass_list_is_what_stays_enabled(target):
    config = {"level": "basic", "passes": None}
    assert target.disabled(config) == []
    only = target.with_passes(config, ["EliminateIdentity"])
    assert target.passes_of(only) == ["EliminateIdentity"]
    assert set(target.disabled(only)) == set(target.names_up_to("basic")) - {"EliminateIdentity"}


def test_optimize_returns_the_saved_model_and_honours_disabled_optimizers(target):
    model = identity_relu()
    everything = target.optimize(model, {"level": "basic", "passes": None})
    assert [n.op_type for n in everything.graph.node] == ["Relu"]
    names = [n for n in target.names_up_to("basic") if n != "EliminateIdentity"]
    kept = target.optimize(model, {"level": "basic", "passes": names})
    assert [n.op_type for n in kept.graph.node] == ["Identity", "Relu"]


def test_repro_snippet_runs_the_same_configuration(target):
    config = {"level": "basic", "passes": ["EliminateIdentity"]}
    scope = {"onnx": onnx, "model": identity_relu()}
    exec(target.repro_snippet(config), scope)  # noqa: S102 - the snippet repro.py runs
    assert [n.op_type for n in scope["optimized"].graph.node] == ["Relu"]


def test_node_growth_is_documented_not_a_bug(target):
    from oracles.base import Finding

    finding = Finding("bloat", "compare", "node count grew from 2 to 3", {})
    assert target.documented(finding, target.default_config()).name == \
        "optimizes-for-speed-not-size"


@pytest.mark.slow
def test_a_campaign_on_onnxruntime_runs_and_keeps_its_folder(tmp_path: Path):
    out = tmp_path / "crashes"
    proc = subprocess.run([sys.executable, "-m", "fuzzer", "fuzz", "--target", "onnxruntime",
                           "--max-cases", "300", "--jobs", "2", "--source", "generated",
                           "--out", str(out), "--quiet", "--reduce-seconds", "20"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    stats = json.loads((out / "campaign.json").read_text())
    assert stats["target"] == "onnxruntime" and stats["cases"] == 300
    assert stats["usable"] > 150
    for meta_path in out.glob("*/meta.json"):  # any finding is a localized, verified bundle
        meta = json.loads(meta_path.read_text())
        assert meta["target"]["name"] == "onnxruntime" and meta["verified"]


def test_the_installed_build_is_asked_which_transformers_run_at_each_level():
    """The verbose log of a session start names every transformer under its level; rule
    names come from the data file and stay only where a rule-based transformer runs."""
    from fuzzer.targets.onnxruntime.check_names import (
        accepted_names,
        parse_log,
        registered_transformers,
    )

    log = ("[V:onnxruntime:, graph_transformer_mgr.cc:35 ApplyTransformers] Applying 2 graph "
           "transformer(s) for level 1 for up to 10 step(s).\n"
           "... Applying graph transformer Level1_RuleBasedTransformer on step 1.\n"
           "... Applying graph transformer ConstantFolding on step 1.\n"
           "... Applying graph transformer ConstantFolding on step 2.\n"
           "... Applying 1 graph transformer(s) for level 3 for up to 10 step(s).\n"
           "... Applying graph transformer NchwcTransformer on step 1.\n")
    assert parse_log(log) == {"basic": ["Level1_RuleBasedTransformer", "ConstantFolding"],
                              "layout": ["NchwcTransformer"]}
    levels = registered_transformers()
    assert "ConstantFolding" in levels["basic"] and "Level1_RuleBasedTransformer" in \
        levels["basic"]
    accepted, rejected = accepted_names(["ConstantFolding", "EliminateIdentity", "NoSuch"],
                                        {"basic": ["EliminateIdentity"]})
    assert (accepted, rejected) == (["ConstantFolding", "EliminateIdentity"], ["NoSuch"])


def test_coverage_counts_a_transformers_work_not_onnxruntimes_own_save():
    """BiasDropoutFusion acts only on nodes of the CUDA and ROCm EPs: on the CPU EP it never
    changes a graph, although the model onnxruntime saves differs from the input (it drops
    what it does not need) whatever runs."""
    from fuzzer.commands.coverage import pass_coverage

    report = pass_coverage(["BiasDropoutFusion", "EliminateIdentity"], 6,
                           target="onnxruntime", jobs=2)
    assert report["BiasDropoutFusion"]["changed"] == 0
    assert "CUDA and ROCm" in report["BiasDropoutFusion"]["reason"]  # the target's reason
    assert report["EliminateIdentity"]["changed"] >= 1


def test_pattern_donors_steer_the_generator_to_what_a_transformer_rewrites(target):
    """ConvBNFusion's hints are its own name (the onnxruntime motifs) and then onnxoptimizer's
    fuse_bn_into_conv, whose Conv -> BatchNormalization motif it also rewrites."""
    from fuzzer.commands.coverage import pass_coverage

    config = target.with_passes(target.default_config(), ["ConvBNFusion"])
    assert target.motif_hints(config) == ["ConvBNFusion", "fuse_bn_into_conv"]
    report = pass_coverage(["ConvBNFusion"], 6, target="onnxruntime", jobs=2)
    assert report["ConvBNFusion"]["changed"] >= 1
    assert "conv-bn" in report["ConvBNFusion"]["motifs"]


def test_the_saved_ir3_initializer_rule_is_one_cause_whatever_transformer_shows_it(target):
    from fuzzer.findings.rootcause import root_cause_key, shared_cause_key
    from oracles.base import Finding
    from oracles.validity import error_class

    message = "ValidationError: t12 in initializer but not in graph input"
    finding = Finding("invalid-model", "validate", message, {"error_class": error_class(message)})
    assert target.shared_cause(finding) == "saved-ir3-initializers"
    assert error_class("ValidationError: reorder_token_1 in initializer but not in graph "
                       "input") == finding.detail["error_class"]
    other = Finding("invalid-model", "validate", "ValidationError: Graph must be in single "
                    "static assignment (SSA) form, however 't' has been used twice")
    assert target.shared_cause(other) is None
    key = shared_cause_key("onnxruntime", "saved-ir3-initializers", finding)
    assert key == "onnxruntime|(saved-ir3-initializers)|rewrite|saved-ir3-initializers"
    assert key != root_cause_key("onnxruntime", "(saved-ir3-initializers)", finding)


def test_onnxruntime_own_onnx_domain_ops_are_documented_not_bundled(target):
    """The layer-norm fusions save onnxruntime's own ONNX-domain LayerNormalization (before
    opset 17) and SimplifiedLayerNormalization: acknowledged in onnxruntime's sources."""
    from oracles.base import Finding

    config = target.default_config()
    for op in ("LayerNormalization", "SimplifiedLayerNormalization"):
        found = Finding("invalid-model", "validate",
                        f"ValidationError: No Op registered for {op} with domain_version of 13"
                        f"\n\n==> Context: Bad node spec for node. Name:  OpType: {op}")
        assert target.documented(found, config).name == "fused-op-in-onnx-domain"
    other = Finding("invalid-model", "validate",
                    "ValidationError: No Op registered for Gelu with domain_version of 13")
    assert target.documented(other, config) is None


def test_one_rounding_step_of_a_quantizing_transformer_is_documented(target):
    """QDQSelectorActionTransformer's QLinear kernels round once where the QDQ form rounds
    twice: an 8-bit output one step off is counted, two steps or a float output is not."""
    from oracles.base import Finding

    def mismatch(dtype: str, gap: float) -> Finding:
        return Finding("output-mismatch", "compare", "output 0 't6': 1 of 90 values differ",
                       {"kind": "values", "class": "values", "dtype": dtype,
                        "max_abs_error": gap})

    config = target.with_passes(target.default_config(), ["QDQSelectorActionTransformer"])
    assert target.documented(mismatch("uint8", 1.0), config).name == "quantized-rounding"
    assert target.documented(mismatch("uint8", 2.0), config) is None
    assert target.documented(mismatch("float32", 0.5), config) is None
    other = target.with_passes(target.default_config(), ["DivMulFusion"])
    assert target.documented(mismatch("int8", 1.0), other) is None
