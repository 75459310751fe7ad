"""``optfuzz check`` judges as a campaign does: documented behaviour is named and exits 0;
``--load-inputs`` feeds the model; ``--atol``/``--rtol`` set the output comparison's
tolerance; ``--json`` prints the verdict alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.test_cli_check import assert_one_line_error, optfuzz


@pytest.fixture
def ir3_file(tmp_path: Path) -> Path:
    """An IR 3 model (opset 8) whose initializer ``w`` is listed among the graph inputs, as
    IR 3 requires: y = x + w."""
    weight = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "ir3",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=3)
    onnx.checker.check_model(model)
    path = tmp_path / "ir3.onnx"
    onnx.save(model, path)
    return path


def test_documented_behaviour_is_named_and_exits_0(ir3_file):
    proc = optfuzz("check", str(ir3_file), "--target", "fake", "--passes", "bump-ir")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "documented" in proc.stdout and "fake-ir-upgrade" in proc.stdout


def test_onnxoptimizer_ir3_to_ir4_upgrade_is_documented(ir3_file):
    proc = optfuzz("check", str(ir3_file))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ir-version-upgrade" in proc.stdout


def test_json_verdict_is_all_of_stdout(ir3_file, chain_file):
    proc = optfuzz("check", str(ir3_file), "--target", "fake", "--passes", "bump-ir", "--json")
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "documented" and verdict["documented"] == "fake-ir-upgrade"
    assert verdict["symptoms"] == ["metadata-change"]
    assert verdict["message"] == "IR version 3 became 4"
    assert verdict["timings"]["total"] > 0
    assert {"optfuzz", "target", "onnx", "onnxruntime", "numpy", "python"} <= \
        set(verdict["versions"])
    proc = optfuzz("check", str(chain_file), "--target", "fake", "--passes", "drop-node",
                   "--json")
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)
    assert (verdict["verdict"], verdict["symptoms"]) == ("finding", ["output-mismatch"])
    assert verdict["documented"] is None and verdict["exit_code"] == 1


def test_load_inputs_feeds_the_model(chain_file, tmp_path):
    """bad-neg turns Neg into Identity: wrong for random inputs, right for zeros."""
    zeros = tmp_path / "zeros.npz"
    np.savez(zeros, x=np.zeros((2, 3), np.float32))
    args = ["check", str(chain_file), "--target", "fake", "--passes", "bad-neg"]
    assert optfuzz(*args).returncode == 1
    proc = optfuzz(*args, "--load-inputs", str(zeros))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "clean" in proc.stdout


@pytest.mark.parametrize("arrays, message", [
    (None, "No such file"),
    (b"not an archive", "not an npz archive"),
    ({"z": np.zeros((2, 3), np.float32)}, "no array for input(s) x"),
    ({"x": np.zeros((2, 3), np.float64)}, "float64"),
    ({"x": np.zeros((3, 2), np.float32)}, "shape"),
])
def test_a_bad_inputs_file_is_one_line_and_exit_2(chain_file, tmp_path, arrays, message):
    path = tmp_path / "inputs.npz"
    if isinstance(arrays, bytes):
        path.write_bytes(arrays)
    elif arrays is not None:
        np.savez(path, **arrays)
    proc = optfuzz("check", str(chain_file), "--load-inputs", str(path))
    assert_one_line_error(proc)
    assert message in proc.stderr


def test_tolerance_options_override_the_output_comparison(chain_file, tmp_path):
    """drop-node leaves Neg where Neg -> Exp was: a gap far past float32's tolerance, and
    within an absolute tolerance of 100 (scaled by the largest expected value)."""
    args = ["check", str(chain_file), "--target", "fake", "--passes", "drop-node", "--json"]
    assert json.loads(optfuzz(*args).stdout)["verdict"] == "finding"
    proc = optfuzz(*args, "--atol", "100")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "clean"
    assert_one_line_error(optfuzz(*args, "--rtol", "1", "--save", str(tmp_path / "c")))


@pytest.mark.parametrize("target", ["onnxoptimizer", "version-converter", "onnxscript"])
def test_a_refused_sparse_constant_is_documented(tmp_path: Path, target: str) -> None:
    """A Constant holding ``sparse_value``: the IR these targets load into refuses it on
    purpose (``sparse-attributes-refused``); onnxslim, which loads it, drops it (a finding)."""
    from generators.builder import sparse_tensor

    array = np.array([[0, 1.5, 0], [2, 0, 0]], np.float32)
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], sparse_value=sparse_tensor(array, "c")),
         helper.make_node("Add", ["x", "c"], ["y"])], "sparse",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "sparse.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    proc = optfuzz("check", str(path), "--target", target)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "documented: sparse-attributes-refused" in proc.stdout
    if target == "onnxoptimizer":
        slim = optfuzz("check", str(path), "--target", "onnxslim")
        assert slim.returncode == 1 and "sparse_value" in slim.stdout, slim.stdout
