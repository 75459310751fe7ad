"""Localization end to end: real worker processes run the fake target's buggy passes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fuzzer.execution.sandbox import Sandbox
from fuzzer.localize.hints import mentioned, plausible
from fuzzer.localize.search import localize
from fuzzer.targets import get_target
from tests.localize_models import chain, fake_case, fillers


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(jobs=1, timeout=10.0) as box:
        yield box


def run_and_localize(sandbox, passes, fixed_point=False, model=None):
    case = fake_case(model or chain(["Sigmoid", "Neg", "Exp"]), passes, fixed_point)
    result = sandbox.run(case)
    assert result.findings, "the setup must produce a finding"
    return result.findings[0], localize(sandbox, case, result, result.findings[0])


@pytest.mark.parametrize(("bug", "position", "symptom"), [
    ("raise", 0, "optimizer-error"), ("raise", 38, "optimizer-error"),
    ("drop-node", 17, "output-mismatch"), ("invalid", 25, "invalid-model"),
    ("bloat", 9, "bloat"), ("segv", 30, "optimizer-abort"),
])
def test_single_pass_bug_among_fillers_is_found_cheaply(sandbox, bug, position, symptom):
    finding, where = run_and_localize(sandbox, fillers({position: bug}))
    assert finding.symptom == symptom
    assert where.passes == [bug]
    assert 1 <= where.runs <= 8  # one run per pass would be 39
    assert where.result is not None and where.result.findings[0].symptom == symptom


def test_bug_needing_two_passes_is_localized_to_both(sandbox):
    _, where = run_and_localize(sandbox, fillers({4: "pair-a", 29: "pair-b"}))
    assert where.passes == ["pair-a", "pair-b"]


def test_fixed_point_case_reports_whether_fixed_point_is_needed(sandbox):
    _, where = run_and_localize(sandbox, fillers({12: "raise"}), fixed_point=True)
    assert where.passes == ["raise"]
    assert where.fixed_point is False  # the fake target ignores fixed_point


def test_single_pass_list_costs_one_framework_run(sandbox):
    _, where = run_and_localize(sandbox, ["drop-node"])
    assert (where.passes, where.runs, where.method) == (["drop-node"], 1, "single")


def test_a_bug_of_the_optimizer_itself_is_blamed_on_no_pass(sandbox):
    """onnxoptimizer raises IR version 3 to 4 whatever the passes: one bug, not one per pass."""
    from onnx import TensorProto, helper

    from fuzzer.execution.case import TestCase
    from fuzzer.localize.search import localize

    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=3)
    for passes in (["eliminate_nop_dropout"], ["eliminate_identity", "fuse_bn_into_conv"]):
        case = TestCase("onnxoptimizer", {"passes": passes, "fixed_point": False},
                        {"kind": "bytes"}, model_bytes=model.SerializeToString())
        result = sandbox.run(case)
        assert result.findings[0].symptom == "metadata-change"
        where = localize(sandbox, case, result, result.findings[0])
        assert (where.passes, where.method) == ([], "framework")


def test_message_naming_a_source_file_points_at_its_pass():
    passes = ["eliminate_identity", "fuse_bn_into_conv", "eliminate_deadend"]
    message = ("RuntimeError: /project/onnxoptimizer/passes/fuse_bn_into_conv.h:87: "
               "modify_conv: Assertion `x` failed")
    assert mentioned(passes, message) == ["fuse_bn_into_conv"]
    assert mentioned(passes, "RuntimeError: boom", locations='File "x.py", line 3\n raise') \
        == []


def test_pruning_keeps_passes_that_can_act_and_unknown_ones():
    passes = ["nop", "fuse_bn_into_conv", "eliminate_identity", "eliminate_deadend",
              "brand_new_pass"]
    assert plausible(get_target("onnxoptimizer").anchors(), passes, {"Identity", "Relu"}) == \
        ["eliminate_identity", "eliminate_deadend", "brand_new_pass"]
    assert plausible(get_target("fake").anchors(), ["nop-1", "raise"], set()) == ["nop-1", "raise"]


def _optfuzz(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_cli_localize_on_a_bundle_updates_meta(sandbox, tmp_path):
    from fuzzer.findings.signature import make_signature
    from fuzzer.handling.bundle import record
    from fuzzer.store.folder import BundleStore

    passes = fillers({7: "drop-node"}, 12)
    case = fake_case(chain(["Sigmoid", "Neg", "Exp"]), passes)
    result = sandbox.run(case)
    finding = result.findings[0]
    # a bundle recorded without localization (responsible_passes null, whole list signed)
    signature = make_signature("fake", passes, finding.symptom, finding.message)
    out = tmp_path / "crashes"
    bid, _ = record(BundleStore(out), signature, finding, case, case.source,
                    result.artifacts, "1.0", None)
    assert json.loads((out / bid / "meta.json").read_text())["responsible_passes"] is None
    done = _optfuzz("localize", str(out / bid))
    assert done.returncode == 0, done.stderr
    meta = json.loads((out / bid / "meta.json").read_text())
    assert meta["responsible_passes"] == ["drop-node"]
    assert meta["localization"]["runs"] >= 1
    assert meta["id"] == bid and meta["signature"] != signature
    assert meta["aliases"] == [signature]


@pytest.mark.parametrize("args", [("localize", "/no/such/thing"),
                                  ("localize", "{model}", "--target", "fake", "--passes",
                                   "raise,bogus-pass"),
                                  ("localize", "{model}", "--target", "nope")])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, args):
    model = tmp_path / "m.onnx"
    model.write_bytes(chain(["Neg"]))
    done = _optfuzz(*(a.format(model=model) for a in args))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
