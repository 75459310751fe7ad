"""The float64 reference: a rewrite that computes the more exact answer is no wrong output
(onnxoptimizer 0.4.2's fuse_consecutive_log_softmax on inputs where Softmax underflows), a
rewrite that computes a wrong one still is."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.execution.case import TestCase
from fuzzer.execution.float64 import as_double, double_outputs, more_exact
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.exactness import more_exact_than_original

#: the underflow: along axis 0 one value is 200 below the other (exp(-200) is 0 in float32,
#: not in float64)
FEEDS = {"x": np.array([[-200.0, 0.5, -200.0], [-1.0, -200.0, 0.25]], dtype=np.float32)}


def log_softmax_model() -> onnx.ModelProto:
    """x -> Softmax(axis 0) -> Log -> y, with a Constant scale in float form (converted too)."""
    nodes = [helper.make_node("Constant", [], ["one"], value_float=1.0),
             helper.make_node("Mul", ["x", "one"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=0),
             helper.make_node("Log", ["p"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_conversion_runs_in_float64_and_is_finite_where_float32_underflows() -> None:
    model = log_softmax_model()
    converted = as_double(model)
    onnx.checker.check_model(converted, full_check=True)
    assert converted.graph.input[0].type.tensor_type.elem_type == TensorProto.DOUBLE
    exact = double_outputs(model.SerializeToString(), FEEDS)
    assert exact is not None and exact["y"].dtype == np.float64
    assert np.isfinite(exact["y"]).all()
    assert exact["y"][0, 0] == pytest.approx(-199.0, abs=1e-6)


def test_the_better_answer_is_not_a_wrong_output_but_a_wrong_one_is() -> None:
    exact = {"y": np.array([[-9999.0, 0.0], [-0.5, -1.0]])}
    underflowed = {"y": np.array([[-np.inf, 0.0], [-0.5, -1.0]], dtype=np.float32)}
    exact32 = {"y": exact["y"].astype(np.float32)}
    assert more_exact(underflowed, exact32, exact)
    wrong = {"y": exact32["y"] + np.float32(1.0)}
    assert not more_exact(underflowed, wrong, exact)
    assert not more_exact(exact32, underflowed, exact)  # the optimizer lost precision
    assert not more_exact(underflowed, exact32, None)  # no float64 run: the finding stands


def test_a_model_that_names_a_dtype_has_no_float64_reference() -> None:
    node = helper.make_node("RandomNormal", [], ["y"], shape=[2], dtype=TensorProto.FLOAT)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, [2])])
    assert as_double(helper.make_model(graph)) is None


def test_onnxoptimizer_log_softmax_fusion_on_underflowing_inputs_is_more_exact() -> None:
    case = TestCase("onnxoptimizer", {"passes": ["fuse_consecutive_log_softmax"],
                                      "fixed_point": False}, {"kind": "bytes"},
                    model_bytes=log_softmax_model().SerializeToString(), feeds=FEEDS, keep=True)
    with Sandbox(jobs=1, timeout=60) as sandbox:
        result = sandbox.run(case)
        assert [f.symptom for f in result.findings] == ["output-mismatch"]
        assert more_exact_than_original(sandbox, case.model_bytes, result)


def test_underflow_beyond_float64_is_the_documented_log_softmax_equivalence() -> None:
    """Softmax underflows in float64 too when one value is 1e4 below the other: no float64
    answer, but the ONNX spec defines LogSoftmax as Log of Softmax, and the only difference
    is the input model's -inf: documented behaviour, counted, not bundled."""
    from fuzzer.targets import get_target

    feeds = {"x": np.array([[-1e4, 0.5, -1e4], [-1.0, -1e4, 0.25]], dtype=np.float32)}
    config = {"passes": ["fuse_consecutive_log_softmax"], "fixed_point": False}
    case = TestCase("onnxoptimizer", config, {"kind": "bytes"},
                    model_bytes=log_softmax_model().SerializeToString(), feeds=feeds, keep=True)
    with Sandbox(jobs=1, timeout=60) as sandbox:
        result = sandbox.run(case)
        assert not more_exact_than_original(sandbox, case.model_bytes, result)
    (finding,) = result.findings
    assert "input model's output is infinite in 3 places" in finding.message
    behaviour = get_target("onnxoptimizer").documented(finding, config)
    assert behaviour is not None and behaviour.name == "log-softmax-finite-where-softmax-underflows"
    other = {"passes": ["fuse_consecutive_squeezes"], "fixed_point": False}
    assert get_target("onnxoptimizer").documented(finding, other) is None


def test_outputs_that_differ_where_both_float64_runs_agree_are_rounding_not_a_bug():
    """Greater(a + b, c) flips from True to False when a rewrite reassociates the sum, and
    Acos of a Tanh that rounds to 1 or just below it is 0 or 0.0005: float64 runs of both
    models agree, so no bug. Where the float64 runs disagree too, it stands."""
    from fuzzer.execution.float64 import rounding_only

    expected = {"flag": np.array([True, False]), "y": np.array([0.0, 2.0], np.float32)}
    flipped = {"flag": np.array([False, False]), "y": np.array([0.0, 2.0], np.float32)}
    amplified = {"flag": np.array([True, False]), "y": np.array([4.88e-4, 2.0], np.float32)}
    exact = {"flag": np.array([True, False]), "y": np.array([1e-9, 2.0])}
    assert rounding_only(expected, flipped, exact, dict(exact))
    assert rounding_only(expected, amplified, exact, dict(exact))
    wrong = {"flag": np.array([False, False]), "y": np.array([1e-9, 2.0])}
    assert not rounding_only(expected, flipped, exact, wrong)  # float64 disagrees as well
    assert not rounding_only(expected, expected, exact, dict(exact))  # nothing differs
    assert not rounding_only(expected, flipped, None, exact)


def test_a_valid_model_onnxruntime_has_no_kernel_for_is_a_portability_note():
    """int64 Gemm is valid ONNX; onnxruntime's CPU provider has no kernel for it
    (docs/OperatorKernels.md). Such a load failure is counted under its name, never
    bundled, whatever the target; another load failure stands."""
    from fuzzer.targets import get_target
    from oracles.base import Finding

    no_kernel = Finding("load-failure", "load", "NotImplemented: [ONNXRuntimeError] : 9 : "
                        "NOT_IMPLEMENTED : Could not find an implementation for Gemm(13) node "
                        "with name ''")
    pads = Finding("load-failure", "load", "Fail: [ONNXRuntimeError] : 1 : FAIL : Exception "
                   "during initialization: /onnxruntime_src/onnxruntime/core/providers/cpu/nn/"
                   "pool_attributes.h:88 onnxruntime::PoolAttributes::PoolAttributes(const "
                   "KernelInfoTyp")  # fused pads larger than the kernel, cut at 300 characters
    other = Finding("load-failure", "load", "Fail: [ONNXRuntimeError] : 1 : FAIL : Load "
                    "model failed: duplicate definition of t3")
    for name in ("fake", "onnxoptimizer"):
        target = get_target(name)
        for finding in (no_kernel, pads):
            behaviour = target.documented(finding, target.default_config())
            assert behaviour is not None and behaviour.name == "onnxruntime-lacks-a-kernel"
        assert target.documented(other, target.default_config()) is None


def test_an_op_onnxruntime_has_no_float64_kernel_for_runs_in_the_reference_evaluator():
    """onnxruntime's CPU Acos is float32 only; the float64 answer comes from the ONNX
    reference evaluator instead, so a one-ulp Tanh that Acos amplifies is judged as
    rounding."""
    nodes = [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Acos", ["t"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.array([0.5, 9.0, -0.25], np.float32)
    out = double_outputs(model.SerializeToString(), {"x": x})
    assert out is not None and out["y"].dtype == np.float64
    np.testing.assert_allclose(out["y"], np.arccos(np.tanh(x.astype(np.float64))))
