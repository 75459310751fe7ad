"""Output comparison: magnitude-scaled tolerance, NaN-aware, exact for integers."""

import numpy as np

from oracles.tolerance import compare_arrays


def test_equal_and_within_tolerance():
    e = np.array([1000.0, 1.0, -3.0], dtype=np.float32)
    assert compare_arrays(e, e.copy()) is None
    assert compare_arrays(e, e + np.float32(0.05)) is None  # scale 1000 -> atol 0.1


def test_beyond_tolerance_reports_max_error():
    e = np.zeros(4, dtype=np.float32)
    diff = compare_arrays(e, e + np.array([0, 0, 0.5, 0], dtype=np.float32))
    assert diff is not None and diff.kind == "values" and diff.mismatched == 1
    assert abs(diff.max_abs_error - 0.5) < 1e-6


def test_a_tolerance_of_the_callers_own_replaces_the_dtypes():
    e = np.zeros(4, dtype=np.float32)
    a = e + np.array([0, 0, 0.5, 0], dtype=np.float32)
    assert compare_arrays(e, a, tolerance={"atol": 0.6}) is None
    assert compare_arrays(e, e + np.float32(1e-5), tolerance={"atol": 1e-6}) is not None
    assert compare_arrays(e + 1, a + 1, tolerance={"rtol": 0.5}) is None  # 0.5 <= 0.5 * 1


def test_nan_same_place_is_equal_other_place_is_not():
    e = np.array([np.nan, 1.0], dtype=np.float32)
    assert compare_arrays(e, e.copy()) is None
    diff = compare_arrays(e, np.array([0.0, 1.0], dtype=np.float32))
    assert diff is not None and diff.kind == "nan"


def test_nan_against_an_infinity_is_an_overflow_on_both_sides_not_a_difference():
    # a BatchNormalization scale of FLT_MAX: inf unfused, inf * 0 = NaN once folded
    e = np.array([np.inf, -np.inf, 2.0, np.nan], dtype=np.float32)
    a = np.array([np.nan, np.nan, 2.0, np.inf], dtype=np.float32)
    assert compare_arrays(e, a) is None
    # NaN against a number is still one
    diff = compare_arrays(e, np.array([np.nan, np.nan, np.nan, np.inf], dtype=np.float32))
    assert diff is not None and diff.kind == "nan" and diff.mismatched == 1
    # and the other places are still compared
    diff = compare_arrays(e, np.array([np.nan, np.nan, 3.0, np.inf], dtype=np.float32))
    assert diff is not None and diff.kind == "values"


def test_shape_dtype_and_integer_differences():
    assert compare_arrays(np.zeros((2, 3)), np.zeros((3, 2))).kind == "shape"
    assert compare_arrays(np.zeros(3, np.float32), np.zeros(3, np.float64)).kind == "dtype"
    assert compare_arrays(np.array([1, 2]), np.array([1, 3])).kind == "values"
    assert compare_arrays(np.array([np.inf]), np.array([-np.inf])) is not None


def test_leftover_initializers_are_bloat_only_after_the_last_cleanup():
    from fuzzer.targets.onnxoptimizer.target import cleanup_ran_last

    assert not cleanup_ran_last(["eliminate_nop_pad"])
    assert cleanup_ran_last(["eliminate_nop_pad", "eliminate_unused_initializer"])
    assert cleanup_ran_last(["fuse_bn_into_conv", "eliminate_unused_initializer",
                             "eliminate_duplicate_initializer", "rewrite_where"])
    assert not cleanup_ran_last(["eliminate_unused_initializer", "eliminate_nop_pad"])


def test_a_double_output_of_a_float32_graph_gets_float32_tolerance():
    """onnxruntime's ConvBNFusion on ConvTranspose -> BatchNormalization -> Cast(double):
    one float32 ulp apart in the double output is no wrong output; a real error still is."""
    from onnx import TensorProto, helper

    from oracles.tolerance import computed_in

    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Cast", ["r"], ["y"],
                                                                      to=TensorProto.DOUBLE)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])])
    precision = computed_in(helper.make_model(graph))
    assert precision == np.dtype(np.float32)
    want = np.array([0.5, -0.25], dtype=np.float64)
    ulp = want + 1.19e-7
    assert compare_arrays(want, ulp) is not None  # float64's own tolerance
    assert compare_arrays(want, ulp, precision) is None
    assert compare_arrays(want, want + 0.01, precision) is not None
    double = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                               [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])],
                               [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])])
    assert computed_in(helper.make_model(double)) == np.dtype(np.float64)
