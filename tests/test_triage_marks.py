"""What ``optfuzz triage`` marks: a message or crash-site column cut to fit, ``unreduced`` with
the command that reduces the bundle, ``not replayed`` until a replay ran with the installed
versions."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
from rich.console import Console

from fuzzer.store.meta import BundleMeta
from fuzzer.triage.rows import TriageRow, bundle_status, crash_site, make_row
from fuzzer.triage.table import (
    FULL_WIDTH,
    MAX_MESSAGE_SHOWN,
    message_label,
    reduce_lines,
    status_counts,
    triage_table,
)
from tests.bundle_files import meta_dict
from tests.schema2_bundles import write_bundle
from tests.test_triage_status import optfuzz, unary_model

INSTALLED = {"target": "fake 1.0", "onnx": "1.23.2", "onnxruntime": "1.31.1"}
ORT_MESSAGE = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while "
               "running Reshape node. Name:'' Status Message: /onnxruntime_src/onnxruntime/"
               "core/providers/cpu/tensor/reshape_helper.h:91 onnxruntime::ReshapeHelper "
               "gsl::narrow_cast<int64_t>(input_shape.Size()) == size was false.")


def row(**changes: object) -> TriageRow:
    """A triage row of an open fake-target output-mismatch bundle, with ``changes``."""
    base = TriageRow(id="output-mismatch-00000001", target="fake", passes=["drop-node"],
                     localized=True, symptom="output-mismatch", message="values differ",
                     hits=1, new_hits=1, first_seen="", last_seen="", nodes_original=5,
                     nodes_minimized=1, status="fails", new=False)
    return replace(base, **changes)


def rendered(rows: list[TriageRow], width: int) -> str:
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(triage_table(rows, "crashes", width))
    return console.export_text()


def test_a_crash_shows_the_site_it_is_keyed_by_and_others_their_message_without_noise():
    key = "fake|fold|crash|RuntimeError: fold.cc:41: Assertion <name> failed for node <name>"
    assert crash_site(key) == "RuntimeError: fold.cc:41: Assertion <name> failed for node <name>"
    assert crash_site("fake|bad-neg|rewrite|fp:-Neg") is None and crash_site(None) is None
    assert message_label(row(site="RuntimeError: fold.cc:41", message="raw text")) == \
        "RuntimeError: fold.cc:41"
    label = message_label(row(symptom="runtime-failure", message=ORT_MESSAGE))
    assert label.startswith("Reshape node. Name:'' Status Message: reshape_helper.h:91")
    assert len(label) <= MAX_MESSAGE_SHOWN and label.endswith("...")
    assert message_label(row(message="")) == "-"


@pytest.mark.parametrize("width", [130, 200])
def test_the_message_column_is_cut_to_fit_the_width(width: int):
    rows = [row(message=ORT_MESSAGE, symptom="runtime-failure"),
            row(id="optimizer-error-00000002", symptom="optimizer-error", message="x",
                site="RuntimeError: fake/fold.cc:41: Assertion `rank <= 4` failed " * 3)]
    text = rendered(rows, width)
    assert max(map(len, text.splitlines())) <= width
    assert "message / crash" in text and "RuntimeError: fak" in text and "Reshape node" in text
    assert "output-mismatch-00000001" in text and "optimizer-error-00000002" in text
    assert "drop-node" in text and "still fails" in text  # other columns keep their text
    assert "…" in text or "..." in text  # the message is cut (to fit, or to its limit)
    assert ("trigger" in text) == (width >= FULL_WIDTH)  # left out on a narrow terminal


def _bundle(root: Path, bundle_id: str, found_nodes: tuple[str, ...] | None) -> tuple[
        BundleMeta, Path]:
    """A bundle whose original.onnx is ``found_nodes`` long (default: model.onnx itself,
    i.e. never reduced)."""
    meta = write_bundle(root, bundle_id, nodes={"original": 3, "minimized": 3})
    folder = root / bundle_id
    if found_nodes is None:
        shutil.copy(folder / "model.onnx", folder / "original.onnx")
    else:
        unary_model(folder / "original.onnx", list(found_nodes))
    return meta, folder


def test_an_unreduced_bundle_is_marked_with_the_command_that_reduces_it(tmp_path: Path):
    hang, hang_folder = _bundle(tmp_path, "hang-00000001", None)
    wrong, wrong_folder = _bundle(tmp_path, "output-mismatch-00000002", None)
    slow, slow_folder = _bundle(tmp_path, "slow-00000003", None)
    reduced, reduced_folder = _bundle(tmp_path, "output-mismatch-00000004",
                                      ("Exp", "Neg", "Cos", "Sin"))
    rows = {meta.symptom + str(i): make_row(meta, INSTALLED, {}, folder) for i, (meta, folder)
            in enumerate([(hang, hang_folder), (wrong, wrong_folder), (slow, slow_folder),
                          (reduced, reduced_folder)])}
    hang_row, wrong_row = rows["hang0"], rows["output-mismatch1"]
    assert (hang_row.nodes_original, hang_row.nodes_minimized) == (2, 2)
    assert hang_row.unreduced and wrong_row.unreduced and rows["slow2"].unreduced
    assert hang_row.reduce_command == f"optfuzz reduce {shlex.quote(str(hang_folder))} " \
        "--timeout 5"  # a hanging candidate costs the whole timeout: a short one
    assert wrong_row.reduce_command == f"optfuzz reduce {shlex.quote(str(wrong_folder))}"
    assert rows["slow2"].reduce_command is None  # optfuzz reduce cannot time a model
    assert not rows["output-mismatch3"].unreduced  # 4 -> 2 nodes
    assert rows["output-mismatch3"].reduce_command is None
    text = rendered(list(rows.values()), 220)
    assert "2 -> 2 unreduced" in text and "4 -> 2 unreduced" not in text
    lines = reduce_lines(list(rows.values()))
    assert lines[0].startswith("3 bundle(s) unreduced")
    assert lines[1:] == [f"  {hang_row.reduce_command}", f"  {wrong_row.reduce_command}"]
    assert json.loads(json.dumps(hang_row.to_json()))["unreduced"] is True


def test_a_one_node_model_is_not_unreduced(tmp_path: Path):
    meta = write_bundle(tmp_path, "output-mismatch-00000001",
                        model=onnx.load(unary_model(tmp_path / "one.onnx", ["Neg"])))
    shutil.copy(tmp_path / "one.onnx", tmp_path / meta.id / "original.onnx")
    assert not make_row(meta, INSTALLED, {}, tmp_path / meta.id).unreduced
    assert reduce_lines([make_row(meta, INSTALLED, {}, tmp_path / meta.id)]) == []


def test_a_bundle_a_reduction_showed_already_minimal_is_not_unreduced(tmp_path: Path):
    """``nodes.minimal`` (a reduction ran to its end and no edit kept the finding) takes the
    mark and the reduce command away from a model as large as the one found, and survives
    a round trip through meta.json."""
    _, folder = _bundle(tmp_path, "output-mismatch-00000002", None)
    meta = BundleMeta.from_json(json.loads((folder / "meta.json").read_text()))
    assert make_row(meta, INSTALLED, {}, folder).unreduced
    meta.nodes.minimal = True
    again = BundleMeta.from_json(json.loads(json.dumps(meta.to_json())))
    assert again.nodes.minimal and again.to_json()["nodes"]["minimal"] is True
    assert not make_row(again, INSTALLED, {}, folder).unreduced
    assert "minimal" not in BundleMeta.from_json(meta_dict("x-1")).to_json()["nodes"]


def test_not_replayed_until_a_replay_ran_with_the_installed_versions():
    meta = BundleMeta.from_json(meta_dict("output-mismatch-00000001"))
    assert bundle_status(meta, INSTALLED) == "not-replayed"
    replayed = replace(meta, replay={"status": "fails", "versions": INSTALLED})
    assert bundle_status(replayed, INSTALLED) == "fails"
    rows = [row(status="not-replayed"), row(id="output-mismatch-00000002", status="fails")]
    text = rendered(rows, 220)
    assert "not replayed" in text and "still fails" in text
    assert status_counts(rows).endswith("1 still fails, 1 not replayed") or \
        status_counts(rows).endswith("1 not replayed, 1 still fails")


@pytest.mark.slow
def test_the_command_triage_prints_reduces_a_hang_bundle(tmp_path: Path):
    model = unary_model(tmp_path / "m.onnx", ["Exp", "Neg", "Cos", "Sin"])
    saved = optfuzz("check", str(model), "--target", "fake", "--passes", "hang", "--timeout",
                    "2", "--save", str(tmp_path / "crashes"))
    assert saved.returncode == 1, saved.stdout + saved.stderr

    def triage_row() -> dict:
        proc = optfuzz("triage", str(tmp_path / "crashes"), "--json")
        assert proc.returncode == 0, proc.stderr
        [found] = json.loads(proc.stdout)
        return found

    found = triage_row()
    assert found["unreduced"] and found["status"] == "not-replayed"
    command = shlex.split(found["reduce_command"])
    assert command[:2] == ["optfuzz", "reduce"]
    proc = subprocess.run([sys.executable, "-m", "fuzzer", *command[1:]], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and re.search(r"4 -> 1 nodes", proc.stdout), proc.stdout
    after = triage_row()
    assert not after["unreduced"] and after["nodes_minimized"] == 1
    assert after["reduce_command"] is None
