"""A reduction keeps the fault it was given, not only its symptom and message: a smaller model
that shows the same finding with the blamed pass left out is another fault (a slip onto it),
and does not count as reproducing. The fake target's ``bad-neg`` (every Neg becomes an
Identity) and ``bad-unary`` (every Sin becomes a Cos) both give wrong values: a finding of
``bad-neg`` on a model that also holds a Sin may slip onto ``bad-unary`` once the Neg is cut."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.minimize import minimize
from fuzzer.reduce import reduce_finding
from fuzzer.reduce.signature_check import without_culprit

PASSES = ["bad-unary", "bad-neg"]


def masked_sin_and_neg() -> onnx.ModelProto:
    """``y = Neg(x) + 0 * Sin(x)`` for x[2,3]: under ``bad-unary`` alone the Sin's change is
    multiplied by zero and shows nowhere, so the found model's fault is ``bad-neg``'s; a cut
    at the Sin's output shows ``bad-unary``'s instead, with the same symptom and message."""
    nodes = [helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("Sin", ["x"], ["s"]),
             helper.make_node("Mul", ["s", "zero"], ["z"]),
             helper.make_node("Add", ["n", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(jobs=1, timeout=20) as box:
        yield box


def _found(sandbox: Sandbox) -> tuple[TestCase, object, object]:
    model = masked_sin_and_neg()
    feeds = {"x": np.linspace(0.5, 1.5, 6, dtype=np.float32).reshape(2, 3)}
    case = TestCase("fake", {"passes": PASSES, "fixed_point": False},
                    {"kind": "file", "path": "test"}, model_bytes=model.SerializeToString(),
                    feeds=feeds)
    result = sandbox.run(case)
    assert result.findings and result.findings[0].symptom == "output-mismatch"
    return case, result, result.findings[0]


def _ops(model_bytes: bytes) -> list[str]:
    return [n.op_type for n in onnx.load_from_string(model_bytes).graph.node]


def test_without_culprit_leaves_the_blamed_pass_out() -> None:
    case = TestCase("fake", {"passes": PASSES, "fixed_point": False}, {"kind": "file"})
    assert without_culprit(case, "bad-neg") == {"passes": ["bad-unary"], "fixed_point": False}
    assert without_culprit(case, None) is None
    assert without_culprit(case, "(framework)") is None  # not one of its passes
    alone = TestCase("fake", {"passes": ["bad-neg"], "fixed_point": False}, {"kind": "file"})
    assert without_culprit(alone, "bad-neg") == {"passes": [], "fixed_point": False}


def test_onnxslim_control_runs_its_own_load_and_save() -> None:
    pytest.importorskip("onnxslim")
    from fuzzer.targets import get_target

    target = get_target("onnxslim")
    config = target.with_passes({}, ["subexpression_elimination"])
    case = TestCase("onnxslim", config, {"kind": "file"})
    control = without_culprit(case, "subexpression_elimination")
    assert control is not None and target.passes_of(control) == []


def test_a_reduction_keeps_the_blamed_pass_needed(sandbox: Sandbox) -> None:
    case, result, finding = _found(sandbox)
    slipped = reduce_finding(sandbox, case, result, finding, PASSES, 60.0)
    kept = reduce_finding(sandbox, case, result, finding, PASSES, 60.0, culprit="bad-neg")
    assert slipped is not None and kept is not None and kept.reduced
    # without the control the reducer takes the cut that shows the symptom first: the Sin
    assert "Neg" not in _ops(slipped.model)
    # with it, the Neg stays (bad-unary alone must not show the finding) and the Sin goes
    assert _ops(kept.model) == ["Neg"]
    rerun = sandbox.run(case.with_config({"passes": ["bad-unary"], "fixed_point": False})
                        .with_model(kept.model, feeds=kept.feeds))
    assert not rerun.findings


def test_minimize_keeps_the_culprit_in_its_pass_list(sandbox: Sandbox) -> None:
    case, result, finding = _found(sandbox)
    best = minimize(sandbox, case, result, finding, PASSES, 60.0, culprit="bad-neg")
    assert best.reduced and "bad-neg" in best.passes and "Neg" in _ops(best.case.model_bytes)


def test_a_wrong_blame_is_searched_again_before_the_reduction(sandbox: Sandbox) -> None:
    """Blamed on ``bad-neg`` (as a remembered localization may blame it), a model whose Sin
    shows the finding under ``bad-unary`` alone keeps no pass needed: its passes are
    searched again and it is reduced."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Sin", ["x"], ["s"]),
                               helper.make_node("Neg", ["s"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    case = TestCase("fake", {"passes": PASSES, "fixed_point": False},
                    {"kind": "file", "path": "test"}, model_bytes=model.SerializeToString(),
                    feeds={"x": np.linspace(0.5, 1.5, 6, dtype=np.float32).reshape(2, 3)})
    result = sandbox.run(case)
    best = minimize(sandbox, case, result, result.findings[0], PASSES, 60.0, culprit="bad-neg")
    assert best.culprit is None and best.reduced and len(best.passes) == 1
    assert len(_ops(best.case.model_bytes)) == 1
