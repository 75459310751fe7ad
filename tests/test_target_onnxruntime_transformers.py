"""The onnxruntime-transformers target: FusionOptions flags as the pass list, the model that
save_model_to_file writes, documented behaviour, the transformer-block motifs, and a campaign
through the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzzer.targets import get_target, target_names
from oracles.base import Finding

NAME = "onnxruntime-transformers"


@pytest.fixture(scope="module")
def target():
    return get_target(NAME)


def erf_gelu() -> onnx.ModelProto:
    """y = x * 0.5 * (1 + Erf(x / sqrt(2))) on a (2, 4) float input (opset 17)."""
    consts = {"root2": math.sqrt(2), "one": 1.0, "half": 0.5}
    nodes = [helper.make_node("Div", ["x", "root2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]),
             helper.make_node("Mul", ["x", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_target_is_registered_and_its_passes_are_fusion_options_flags(target):
    assert NAME in target_names()
    passes = target.available_passes()
    for flag in ("enable_gelu", "enable_layer_norm", "enable_attention",
                 "enable_skip_layer_norm", "enable_embed_layer_norm",
                 "enable_bias_skip_layer_norm", "enable_bias_gelu"):
        assert flag in passes and target.describe(flag)
    assert "enable_gelu_approximation" not in passes
    assert "enable_shape_inference" not in passes
    assert "enable_embed_layer_norm" not in target.passes_of({"model_type": "clip",
                                                              "passes": None})


def test_only_the_enabled_flag_fuses(target):
    model = erf_gelu()
    before = model.SerializeToString()
    fused = target.optimize(model, {"model_type": "bert", "passes": ["enable_gelu"]})
    assert model.SerializeToString() == before  # the input is left alone
    assert [(n.op_type, n.domain) for n in fused.graph.node] == [("Gelu", "com.microsoft")]
    assert any(o.domain == "com.microsoft" for o in fused.opset_import)
    onnx.checker.check_model(fused, full_check=True)
    untouched = target.optimize(model, {"model_type": "bert", "passes": []})
    assert untouched.graph == model.graph
    others = [f for f in target.available_passes() if f != "enable_gelu"]
    assert target.optimize(model, {"model_type": "bert", "passes": others}).graph == model.graph


def test_repro_snippet_runs_the_same_configuration(target):
    scope = {"onnx": onnx, "model": erf_gelu()}
    exec(target.repro_snippet({"model_type": "bert", "passes": ["enable_gelu"]}),  # noqa: S102
         scope)
    assert [n.op_type for n in scope["optimized"].graph.node] == ["Gelu"]


def test_configurations_draw_model_types_and_flag_subsets(target):
    import random

    rng = random.Random(0)
    configs = [target.configurations(rng, None) for _ in range(60)]
    assert {c["model_type"] for c in configs} <= set(target.model_types())
    assert len({c["model_type"] for c in configs}) > 2
    assert all("enable_gemm_fast_gelu" not in c["passes"] for c in configs)
    assert any(len(c["passes"]) < len(target.available_passes()) - 1 for c in configs)
    hints = target.motif_hints({"model_type": "bert", "passes": ["enable_gelu"]})
    assert hints[0] == "enable_gelu" and "GeluFusionL1" in hints


def test_pruned_inputs_and_node_growth_are_documented(target):
    config = target.default_config()
    pruned = Finding("metadata-change", "compare", "graph inputs changed",
                     {"before": [["x", 1], ["mask", 9]], "after": [["x", 1]]})
    assert target.documented(pruned, config).name == "unused-graph-inputs-pruned"
    retyped = Finding("metadata-change", "compare", "graph inputs changed",
                      {"before": [["x", 1], ["mask", 9]], "after": [["x", 1], ["mask", 6]]})
    assert target.documented(retyped, config) is None
    grown = Finding("bloat", "compare", "node count grew from 2 to 3", {})
    assert target.documented(grown, config).name == "optimizes-for-speed-not-size"
    rocm = Finding("load-failure", "load", "NotImplemented: [ONNXRuntimeError] : 9 : "
                   "NOT_IMPLEMENTED : Could not find an implementation for GemmFastGelu(1) "
                   "node with name 'GemmFastGelu_0'")
    assert target.documented(rocm, config).name == "fused-op-without-cpu-kernel"
    for op, opset, name in (("SimplifiedLayerNormalization", 21, "fused-op-in-onnx-domain"),
                            ("LayerNormalization", 15, "fused-op-in-onnx-domain"),
                            ("Attention", 15, None)):
        invalid = Finding("invalid-model", "validate", "ValidationError: No Op registered "
                          f"for {op} with domain_version of {opset}")
        assert getattr(target.documented(invalid, config), "name", None) == name


@pytest.mark.parametrize("motif", ["tb-embed-layer-norm", "tb-bert-attention",
                                   "tb-bias-skip-layer-norm", "tb-bias-gelu"])
def test_transformer_block_motifs_are_valid_and_run(motif):
    from fuzzer.execution.reference import make_session, run_session
    from generators import generate_model
    from generators.inputs import synthesize_inputs

    for seed in range(4):
        gm = generate_model(seed, motifs=[motif])
        assert motif in gm.motifs
        onnx.checker.check_model(gm.model, full_check=True)
        feeds = synthesize_inputs(gm.model, seed, gm.input_shapes)
        run_session(make_session(gm.model.SerializeToString()), feeds)


def test_the_attention_motif_is_fused_into_attention(target):
    from generators import generate_model

    config = {"model_type": "bert", "passes": ["enable_attention", "enable_layer_norm"]}
    fused = 0
    for seed in range(6):
        model = generate_model(seed, motifs=["tb-bert-attention"], opset=17).model
        optimized = target.optimize(model, config)
        fused += any(n.op_type == "Attention" for n in optimized.graph.node)
    assert fused >= 2


def test_a_campaign_on_the_transformer_fusions_runs(tmp_path: Path):
    out = tmp_path / "crashes"
    proc = subprocess.run([sys.executable, "-m", "fuzzer", "fuzz", "--target", NAME,
                           "--max-cases", "60", "--jobs", "1", "--source", "generated",
                           "--out", str(out), "--quiet", "--no-localize",
                           "--reduce-seconds", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    stats = json.loads((out / "campaign.json").read_text())
    assert stats["target"] == NAME and stats["cases"] == 60
    assert stats["usable"] > 40
