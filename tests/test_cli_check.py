"""``optfuzz check``: verdicts and exit codes, and bad input refused in one line with exit 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def optfuzz(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def assert_one_line_error(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr


def test_clean_model_exits_0(chain_file):
    proc = optfuzz("check", str(chain_file))
    assert proc.returncode == 0, proc.stderr
    assert "clean" in proc.stdout


def test_finding_exits_1_and_saves_a_bundle_whose_repro_fails(chain_file, tmp_path):
    out = tmp_path / "crashes"
    proc = optfuzz("check", str(chain_file), "--target", "fake", "--passes", "drop-node",
                   "--save", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "output-mismatch" in proc.stdout
    (bundle,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    for name in ("meta.json", "model.onnx", "original.onnx", "inputs.npz", "repro.py",
                 "report.md", "expected.npz", "actual.npz"):
        assert (bundle / name).is_file(), name
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                           text=True, timeout=120)
    assert repro.returncode == 1, repro.stdout + repro.stderr


def test_truncated_file(tmp_path, chain_file):
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(chain_file.read_bytes()[:37])
    assert_one_line_error(optfuzz("check", str(bad)))


def test_not_onnx(tmp_path):
    bad = tmp_path / "notes.onnx"
    bad.write_text("these are my notes, not a model\n")
    assert_one_line_error(optfuzz("check", str(bad)))


def test_missing_file(tmp_path):
    assert_one_line_error(optfuzz("check", str(tmp_path / "absent.onnx")))


def test_external_data_outside_the_model_folder(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.ones(4, np.float32).tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "../secret.bin"), ("offset", "0"), ("length", "16")):
        weight.external_data.add(key=key, value=value)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    proc = optfuzz("check", str(path))
    assert_one_line_error(proc)
    assert "outside" in proc.stderr


def test_absurd_shape(tmp_path, chain_model):
    chain_model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1 << 40
    path = tmp_path / "huge.onnx"
    onnx.save(chain_model, path)
    assert_one_line_error(optfuzz("check", str(path)))


def test_unknown_pass_is_a_usage_error(chain_file):
    assert_one_line_error(optfuzz("check", str(chain_file), "--passes", "no_such_pass"))


def test_negative_declared_dim_is_dynamic_not_absurd(tmp_path, chain_model):
    for value in (chain_model.graph.input[0], chain_model.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = -1  # Paddle's "dynamic"
    path = tmp_path / "paddle_style.onnx"
    onnx.save(chain_model, path)
    proc = optfuzz("check", str(path))
    assert proc.returncode == 0, proc.stderr


def test_repro_that_cannot_run_exits_2_not_1(chain_file, tmp_path):
    out = tmp_path / "crashes"
    optfuzz("check", str(chain_file), "--target", "fake", "--passes", "drop-node",
            "--save", str(out))
    (bundle,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert optfuzz("report", str(bundle)).returncode == 0
    shutil.unpack_archive(bundle / f"{bundle.name}.zip", tmp_path / "attached")
    for folder in (bundle, tmp_path / "attached"):
        # -S: no site-packages, so onnx cannot be imported: neither the bug nor its fix
        proc = subprocess.run([sys.executable, "-S", "repro.py"], cwd=folder,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (folder, proc.stdout, proc.stderr)


def test_every_command_accepts_the_same_pass_names(chain_file, tmp_path):
    # the fake target's nop-* fillers are passes for check, fuzz, reduce and localize alike
    assert optfuzz("check", str(chain_file), "--target", "fake", "--passes", "nop-3,clean") \
        .returncode == 0
    assert_one_line_error(optfuzz("fuzz", "--target", "fake", "--passes", "nop-3,bogus",
                                  "--max-cases", "1", "--out", str(tmp_path / "c")))


def test_the_pass_that_first_damaged_the_model_is_the_breaking_pass(chain_file, tmp_path):
    """``twin`` leaves an invalid model, ``expose-twin`` then crashes on it: the crash needs
    both, and the bundle blames ``twin``, with ``expose-twin`` enabling (after it) and named
    as the pass that exposed the damage; the key is twin's rewrite, not expose-twin's crash
    site."""
    import json

    out = tmp_path / "crashes"
    proc = optfuzz("check", str(chain_file), "--target", "fake", "--passes",
                   "twin,expose-twin", "--save", str(out))
    assert proc.returncode == 1, proc.stderr
    (bundle,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["symptom"] == "optimizer-error"
    assert meta["responsible_passes"] == ["twin", "expose-twin"]
    assert (meta["breaking_pass"], meta["enabling_passes"]) == ("twin", ["expose-twin"])
    assert meta["root_cause"].startswith("fake|twin|rewrite|fp:")
    assert meta["exposed_by"] == "expose-twin" and "invalid-model" in meta["damage"]
    assert "run after it" in (bundle / "report.md").read_text()
