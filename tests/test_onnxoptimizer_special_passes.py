"""onnxoptimizer's passes outside its fuse-and-elimination family (``rename_input_output``,
``rewrite_input_dtype``, ``split_init``, ``split_predict``, ``lift_lexical_references``, ...):
drawn into campaigns, and judged by what each promises, so that their by-design changes of
the graph interface are no findings while their bugs still are."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzzer.execution.case import TestCase
from fuzzer.execution.pipeline import run_case
from fuzzer.execution.stage_driver import interface_feeds
from fuzzer.report.repro import render_repro
from fuzzer.store.npz import npz_bytes
from fuzzer.targets import get_target
from fuzzer.targets.onnxoptimizer.target import LAST_PASSES, SPECIAL_PASSES


def model() -> onnx.ModelProto:
    """y = x + w (float), z = -i (int64): one float and one int64 graph input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    z = helper.make_tensor_value_info("z", TensorProto.INT64, [2])
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"]),
                               helper.make_node("Neg", ["i"], ["z"])], "g", [x, i], [y, z], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def symptoms(passes: list[str]) -> tuple[str, set[str]]:
    result = run_case(TestCase("onnxoptimizer", {"passes": passes}, {"kind": "test"},
                               model().SerializeToString()))
    assert result.unusable is None
    target = get_target("onnxoptimizer")
    kept = {f.symptom for f in result.findings
            if target.documented(f, {"passes": passes}) is None}
    return result.stage, kept


@pytest.mark.parametrize("passes, stage", [
    (["rename_input_output"], "compare"),  # renamed inputs get their feeds by position
    (["rewrite_input_dtype"], "compare"),  # int32 inputs get their feeds cast
    (["split_init"], "load"),  # a cut graph: its outputs are not the model's
    (["split_predict"], "load"),
    (["adjust_add"], "compare"),
    (["set_unique_name_for_nodes"], "compare"),
])
def test_by_design_changes_are_no_findings(passes, stage):
    assert symptoms(passes) == (stage, set())


def test_a_non_conforming_pass_is_judged_by_its_own_run_only():
    # lift_lexical_references documents a non-conforming output; its error on a model whose
    # initializer is not a graph input (IR >= 4) is still a finding
    assert symptoms(["lift_lexical_references"]) == ("optimize", {"optimizer-error"})


def test_interface_feeds_match_by_position_and_cast():
    original = model()
    renamed = onnx.ModelProto()
    renamed.CopyFrom(original)
    renamed.graph.input[0].name, renamed.graph.input[1].name = "input_0", "input_1"
    renamed.graph.input[1].type.tensor_type.elem_type = TensorProto.INT32
    feeds = {"x": np.zeros((2, 3), np.float32), "i": np.arange(2, dtype=np.int64)}
    adapted = interface_feeds(original, renamed, feeds)
    assert list(adapted) == ["input_0", "input_1"] and adapted["input_1"].dtype == np.int32
    renamed.graph.input.pop()  # another input count: nothing to match
    assert interface_feeds(original, renamed, feeds) is feeds


def test_a_retyping_pass_keeps_the_originals_feeds_in_the_artifacts():
    # rewrite_input_dtype makes the int64 input int32: the optimized model runs on cast
    # feeds, while the artifacts (inputs.npz, the determinism rerun) keep the original's,
    # on which the original runs again alike
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.handling.determinism import deterministic

    case = TestCase("onnxoptimizer", {"passes": ["rewrite_input_dtype"]}, {"kind": "test"},
                    model().SerializeToString(), keep=True)
    result = run_case(case)
    assert result.stage == "compare" and result.artifacts is not None
    assert result.artifacts.feeds["i"].dtype == np.int64
    with Sandbox(jobs=1, timeout=60.0) as sandbox:
        assert deterministic(sandbox, case, result)


def test_campaign_draws_carry_special_passes_and_split_passes_end_the_list():
    target = get_target("onnxoptimizer")
    rng = random.Random(4)
    drawn = [target.configurations(rng, None)["passes"] for _ in range(2000)]
    special = [p for p in drawn if SPECIAL_PASSES.intersection(p)]
    assert 0.05 < len(special) / len(drawn) < 0.2
    assert SPECIAL_PASSES == {s for p in special for s in SPECIAL_PASSES.intersection(p)}
    assert all(p[-1] in LAST_PASSES for p in special if LAST_PASSES.intersection(p))
    named = [target.configurations(rng, ["eliminate_identity"])["passes"] for _ in range(200)]
    assert all(p == ["eliminate_identity"] for p in named)  # the user's list is the pool


def test_repro_judges_a_renaming_pass_as_the_campaign_does(tmp_path):
    passes = ["rename_input_output", "rewrite_input_dtype"]
    onnx.save(model(), tmp_path / "model.onnx")
    feeds = {"x": np.ones((2, 3), np.float32), "i": np.arange(2, dtype=np.int64)}
    (tmp_path / "inputs.npz").write_bytes(npz_bytes(feeds))
    (tmp_path / "repro.py").write_text(render_repro(
        "test", "runtime-failure", "onnxoptimizer", {"passes": passes}, "x", timeout=60.0))
    proc = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no failure: feeds matched
    assert "observed: none" in proc.stdout


def test_a_graph_cutting_pass_keys_its_root_causes_without_a_footprint():
    from fuzzer.handling.key import cuts_the_graph

    target = get_target("onnxoptimizer")
    config = {"passes": ["eliminate_identity", "split_init"]}
    assert cuts_the_graph(target, config, "split_init")
    assert not cuts_the_graph(target, config, "lift_lexical_references")  # not in the list
    assert not cuts_the_graph(target, config, "eliminate_identity")
    assert cuts_the_graph(target, {"passes": ["lift_lexical_references"]},
                          "lift_lexical_references")
