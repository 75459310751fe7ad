"""report.md of a schema-2 bundle: the title names the breaking pass, "Actual" comes from a
run of the attached model (not from meta.json), the model and its optimized form are shown
inline as ONNX text, and repro.py runs only the responsible passes."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest

from fuzzer.report.expected_actual import expected_line
from fuzzer.report.issue_draft import issue_title, render_issue_draft
from fuzzer.report.repro import repro_context
from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import npz_bytes
from tests.bundle_files import meta_dict
from tests.schema2_bundles import FEEDS, write_bundle
from tests.test_triage_status import optfuzz

#: what meta.json (and the bundle's expected.npz / actual.npz) record: not what model.onnx
#: shows today.
STALE_MESSAGE = "output 0 'stale': 1 of 1 values differ, max abs error 0.5 (tolerance 0.0001)"
RECORDED = {"passes": ["nop-1", "raise", "drop-node", "nop-2"], "fixed_point": False}
RESPONSIBLE = ["nop-1", "drop-node", "nop-2"]


def schema2(bundle_id: str = "output-mismatch-0123abcd", **changes: object) -> BundleMeta:
    """A localized schema-2 meta of the fake target's drop-node bug."""
    fields = {"target": {"name": "fake", "version": "1.0", "config": RECORDED},
              "responsible_passes": RESPONSIBLE, "breaking_pass": "drop-node",
              "enabling_passes": ["nop-1", "nop-2"], "message": STALE_MESSAGE,
              "localization": {"runs": 4, "method": "ddmin"}, **changes}
    return BundleMeta.from_json(meta_dict(bundle_id, **fields))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle whose meta.json, expected.npz and actual.npz are stale: model.onnx
    (x -> Exp -> Neg -> y) shows another message and other values."""
    root = tmp_path_factory.mktemp("schema2")
    meta = schema2()
    write_bundle(root, meta.id, **meta.to_json())
    stale = {"stale": np.array([42.0], dtype=np.float32)}
    (root / meta.id / "expected.npz").write_bytes(npz_bytes(stale))
    (root / meta.id / "actual.npz").write_bytes(npz_bytes({"stale": np.array([41.5])}))
    return root / meta.id


@pytest.fixture(scope="module")
def report(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``optfuzz report`` of the bundle into its own folder."""
    out = tmp_path_factory.mktemp("report-out")
    result = optfuzz("report", str(bundle), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "output-mismatch reproduces with fake 1.0" in result.stdout
    return out


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a markdown text."""
    match = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section {heading!r}"
    return match.group(1)


def test_title_names_the_breaking_pass_and_the_body_its_enabling_passes() -> None:
    meta = schema2()
    assert issue_title(meta) == "fake: drop-node changes the model's outputs (output-mismatch)"
    draft = render_issue_draft(meta)
    assert draft.startswith(f"# {issue_title(meta)}\n")
    assert "It needs `nop-1` to run before it and `nop-2` to run after it." in draft


def test_a_trigger_joins_the_title_only_where_it_reads_as_a_condition() -> None:
    clause = schema2(trigger="When the last node is unary.")
    assert issue_title(clause) == ("fake: drop-node changes the model's outputs when the last "
                                   "node is unary (output-mismatch)")
    sentence = schema2(trigger="A unary node feeds the graph output.")
    assert "unary" not in issue_title(sentence)
    lines = render_issue_draft(sentence).splitlines()
    assert lines[2] == "A unary node feeds the graph output."  # the body's first line
    probes = {"needs its value_info and exactly opset 13":
              "The model needs its value_info and exactly opset 13 to show the bug.",
              "survives neutral names and other opsets":
              "The bug still shows with neutral names and other opsets."}
    for trigger, first_line in probes.items():
        meta = schema2(trigger=trigger)
        assert issue_title(meta) == issue_title(schema2())
        assert render_issue_draft(meta).splitlines()[2] == first_line


def test_expected_claims_a_promise_only_where_verified_says_undocumented() -> None:
    promised = schema2("bloat-0123abcd", verified={"documented": False})
    assert "(as fake promises for this configuration)" in expected_line(promised)
    for verified in ({"documented": None}, None, "reproduces"):
        assert "promises" not in expected_line(schema2("bloat-0123abcd", verified=verified))
    assert "promises" not in expected_line(schema2(verified={"documented": False}))


def test_repro_context_runs_the_responsible_passes_where_localized() -> None:
    assert repro_context(schema2())["config"] == {"passes": RESPONSIBLE, "fixed_point": False}
    unlocalized = schema2(responsible_passes=None, breaking_pass=None, enabling_passes=None)
    assert repro_context(unlocalized)["config"] == RECORDED
    fixed_point = schema2(target={"name": "fake", "version": "1.0",
                                  "config": dict(RECORDED, fixed_point=True)},
                          localization={"runs": 3, "method": "bisect",
                                        "fixed_point_needed": False})
    assert repro_context(fixed_point)["config"] == {"passes": RESPONSIBLE,
                                                    "fixed_point": False}
    assert repro_context(fixed_point.to_json())["config"]["passes"] == RESPONSIBLE


def test_actual_comes_from_running_the_attached_model(report: Path) -> None:
    text = (report / "report.md").read_text()
    actual = section(text, "Expected and actual")
    assert "stale" not in actual and "[42]" not in actual  # not meta.json, not the npz files
    line = next(ln for ln in actual.splitlines() if ln.startswith("**Actual:**"))
    assert line.startswith("**Actual:** `output-mismatch` at stage `compare` (")
    assert "under fake 1.0" in line
    message = re.search(r"^```\n(.*?)\n```$", actual, flags=re.M | re.S)
    assert message and message.group(1).startswith("output 0 'y': 6 of 6 values differ")
    assert actual.index(line) < message.start()  # the run's message, fenced, right below
    expected = -np.exp(FEEDS["x"]).ravel()  # Neg(Exp(x)); drop-node leaves Exp(x)
    assert f"| `y` | `float32[2, 3]` [{expected[0]:.5g}, {expected[1]:.5g}" in actual
    assert f"`float32[2, 3]` [{-expected[0]:.5g}, {-expected[1]:.5g}" in actual
    assert "attached 2-node model" in text  # counted in model.onnx, not meta.json's 1


def test_report_shows_the_model_as_onnx_text(report: Path, bundle: Path) -> None:
    text = (report / "report.md").read_text()
    inline = section(text, "The minimized model")
    (block,) = re.findall(r"```\n(.*?)\n```", inline, flags=re.S)
    assert block == onnx.printer.to_text(onnx.load(bundle / "model.onnx")).rstrip("\n")
    # right after it, what the run's target made of it: drop-node put Identity for Neg
    optimized = text.split("## The optimized model (", 1)[1].split("\n## ", 1)[0]
    assert text.index("## The minimized model") < text.index("## The optimized model")
    (block,) = re.findall(r"```\n(.*?)\n```", optimized, flags=re.S)
    assert "= Identity (" in block and "= Exp (" in block and "Neg" not in block


def test_repro_runs_only_the_responsible_passes(report: Path, tmp_path: Path) -> None:
    text = (report / "report.md").read_text()
    assert f"Pass list: `{RESPONSIBLE}`" in text
    (call,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert "'drop-node'" in call and "'raise'" not in call
    with zipfile.ZipFile(report / "output-mismatch-0123abcd.zip") as archive:
        archive.extractall(tmp_path)
    assert (tmp_path / "repro.py").read_text() == (report / "repro.py").read_text()
    # the recorded configuration would raise (optimizer-error); the responsible passes alone
    # show the output mismatch
    run = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "observed: output-mismatch" in run.stdout and "optimizer-error" not in run.stdout


def test_a_model_that_no_longer_reproduces_is_said_plainly(bundle: Path,
                                                           tmp_path: Path) -> None:
    result = optfuzz("report", str(bundle), "--out", str(tmp_path), fixed="drop-node")
    assert result.returncode == 0, result.stderr
    assert "does not reproduce" in result.stdout
    text = (tmp_path / "report.md").read_text()
    assert "> **Note:** the attached model does not show `output-mismatch` with " \
           "fake 1.0+fixed.drop-node" in text
    actual = section(text, "Expected and actual")
    assert "**Actual:** the attached model no longer reproduces the bug" in actual
    assert "| output |" not in actual
