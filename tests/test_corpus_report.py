"""The DiTOX-style corpus table, and ``optfuzz corpus`` end to end on a small folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.corpus.report import ModelRecord, build_table, to_markdown


def test_table_percentages_per_category() -> None:
    records = [
        ModelRecord("a", "classification", "dir", 3, [("default", "metric-drift", "m"),
                                                       ("p1", "output-mismatch", "m")]),
        ModelRecord("b", "classification", "dir", 3, [("p2", "optimizer-error", "boom")]),
        ModelRecord("c", "classification", "dir", 3),
        ModelRecord("d", "classification", "dir", 3),
        ModelRecord("e", "segmentation", "dir", 3, [("p1", "invalid-model", "bad")]),
        ModelRecord("f", "detection", "dir", 3),
        ModelRecord("g", None, "dir", 1, unusable="reference: RuntimeError: no kernel"),
    ]
    table = build_table(records)
    rows = {r["category"]: r for r in table["rows"]}
    assert list(rows) == ["classification", "detection/segmentation"]
    clf = rows["classification"]
    assert (clf["models"], clf["crash_or_invalid"], clf["output_discrepancy"],
            clf["metric_drift"]) == (4, 25.0, 25.0, 25.0)
    seg = rows["detection/segmentation"]
    assert (seg["models"], seg["crash_or_invalid"]) == (2, 50.0)
    assert table["total"]["models"] == 6
    assert table["total"]["crash_or_invalid"] == pytest.approx(33.3)
    assert table["unusable"] == [{"model": "g", "reason": "reference: RuntimeError: no kernel"}]
    markdown = to_markdown(table)
    assert "| classification | 4 | 25.0 | 25.0 | 25.0 |" in markdown
    assert "1 unusable model(s), skipped:" in markdown


def _save(path: Path, op: str) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"]), helper.make_node(op, ["t"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, path)


@pytest.mark.slow
def test_corpus_report_command_on_a_folder(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    _save(models / "relu.onnx", "Relu")
    _save(models / "sigmoid.onnx", "Sigmoid")
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzer", "corpus", "report", "--source", "dir", "--corpus",
         str(models), "--no-single", "--jobs", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| other | 2 | 0.0 | 0.0 | 0.0 |" in proc.stdout
    data = json.loads((out / "report.json").read_text())
    assert data["meta"]["cases"] == 2 and data["meta"]["configurations"] == ["default"]
    assert {m["model"] for m in data["models"]} == {"dir/models/relu", "dir/models/sigmoid"}


def test_corpus_list_bad_source_is_one_line_and_exit_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "fuzzer", "corpus", "list", "--source", "zoo"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: unknown corpus source 'zoo'; choose from bundled, pypi, hub, dir"]
