"""``optfuzz replay DIR --target T``: each bundle's model runs on another target; meta.json's
``cross_targets`` and the report say which other targets it breaks too. Ground truth:
onnxoptimizer 0.4.2's eliminate_nop_with_unit drops an empty Concat input that still adds
columns, and onnx-simplifier, which runs that pass in its default configuration, breaks on
the same model; the fake target's default configuration runs no planted pass."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fuzzer.execution.case import CaseResult
from fuzzer.report.tracker import other_targets_line
from fuzzer.store.meta import read_meta
from fuzzer.triage.cross_target import BREAKS, CLEAN, DOCUMENTED, UNUSABLE, judge
from oracles.base import Finding
from tests.test_triage_status import optfuzz


def _empty_concat(path: Path) -> Path:
    empty = numpy_helper.from_array(np.zeros((0, 2), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "w"], ["y"], axis=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 5])], [empty])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_a_bundle_that_breaks_another_target_says_so(tmp_path: Path) -> None:
    out = tmp_path / "crashes"
    np.savez(tmp_path / "x.npz", x=np.zeros((0, 3), np.float32))
    found = optfuzz("check", str(_empty_concat(tmp_path / "m.onnx")), "--target",
                    "onnxoptimizer", "--passes", "eliminate_nop_with_unit",
                    "--load-inputs", str(tmp_path / "x.npz"), "--save", str(out))
    assert found.returncode == 1, found.stderr
    (bundle,) = [p for p in out.iterdir() if (p / "meta.json").is_file()]
    for other, status in (("onnxsim", BREAKS), ("fake", CLEAN)):
        run = optfuzz("replay", str(out), "--target", other, timeout=300)
        assert run.returncode == 0, run.stderr
        assert f"{other} {status}" in run.stdout
    verdicts = json.loads((bundle / "meta.json").read_text())["cross_targets"]
    assert {name: v["status"] for name, v in verdicts.items()} == \
        {"onnxsim": BREAKS, "fake": CLEAN}
    assert verdicts["onnxsim"]["observed"] == "invalid-model"
    line = other_targets_line(read_meta(bundle / "meta.json"))
    assert line is not None and line.startswith("Also breaks: onnxsim") and "not: fake" in line


def test_the_command_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    out = tmp_path / "crashes"
    out.mkdir()
    unknown = optfuzz("replay", str(out), "--target", "no-such-target")
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    both = optfuzz("replay", str(out), "--target", "fake", "--against", "onnxslim==0.1.80")
    assert both.returncode == 2 and "--target" in both.stderr
    assert len(both.stderr.strip().splitlines()) == 1


def test_each_verdict_from_a_run() -> None:
    finding = Finding("invalid-model", "check", "bad")
    assert judge("b", "t", CaseResult([], "cannot load", "load", {})).status == UNUSABLE
    assert judge("b", "t", CaseResult([], None, "compare", {})).status == CLEAN
    broken = judge("b", "t", CaseResult([finding], None, "check", {}))
    assert (broken.status, broken.observed, broken.message) == (BREAKS, "invalid-model", "bad")
    documented = CaseResult([finding], None, "check", {}, documented="ir-upgrade")
    assert judge("b", "t", documented).status == DOCUMENTED
