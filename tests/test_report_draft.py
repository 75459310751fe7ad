"""``optfuzz report``: the issue draft names the pass and the symptom and shows the target
call, the attachment's repro.py runs on its own and fails while the bug is there, and the
picture shows the op types of both graphs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fuzzer.report.issue_draft import issue_title, render_issue_draft
from fuzzer.store.meta import read_meta
from tests.test_triage_status import optfuzz, save_bundle, unary_model


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output-mismatch bundle of the fake target's drop-node pass."""
    root = tmp_path_factory.mktemp("report")
    save_bundle(unary_model(root / "m.onnx", ["Exp", "Neg", "Cos"]), "drop-node",
                root / "crashes")
    (folder,) = (root / "crashes").glob("output-mismatch-*")
    return folder


def test_bundle_creation_writes_a_draft(bundle: Path) -> None:
    text = (bundle / "report.md").read_text()
    title = text.splitlines()[0]  # the culprit, the ops it removed, what a user sees
    assert re.fullmatch(r"# fake: drop-node removes \w+ wrongly \(wrong output values\)", title)


def test_report_repro_runs_alone_and_fails_while_the_bug_is_there(bundle: Path,
                                                                   tmp_path: Path) -> None:
    result = optfuzz("report", str(bundle), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Environment" in report and "| onnxruntime |" in report
    assert "**Expected:**" in report and "**Actual:** `output-mismatch`" in report
    (call,) = re.findall(r"```python\n(.*?)```", report, flags=re.S)
    assert "FakeTarget().optimize(model, " in call and "drop-node" in call


    # what a maintainer does: unzip the attachment, save the script, run it
    work = tmp_path / "maintainer"
    with zipfile.ZipFile(tmp_path / "out" / f"{bundle.name}.zip") as archive:
        assert {"model.onnx", "inputs.npz", "repro.py"} <= set(archive.namelist())
        archive.extractall(work)
    script = (work / "repro.py").read_text()
    assert script == (bundle / "repro.py").read_text()
    imports = set(re.findall(r"^ *(?:import|from) (\w+)", script, flags=re.M))
    third_party = imports - set(sys.stdlib_module_names)
    assert third_party <= {"numpy", "onnx", "onnxruntime", "fuzzer"}  # fuzzer: fake target
    env = {k: v for k, v in os.environ.items() if k != "OPTFUZZ_FAKE_FIXED"}
    failing = subprocess.run([sys.executable, "repro.py"], cwd=work, capture_output=True,
                             text=True, env=env, timeout=60)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "observed: output-mismatch: output 0" in failing.stdout
    fixed = subprocess.run([sys.executable, "repro.py"], cwd=work, capture_output=True,
                           text=True, env=dict(env, OPTFUZZ_FAKE_FIXED="drop-node"),
                           timeout=60)
    assert fixed.returncode == 0 and "not reproduced" in fixed.stdout


def test_picture_names_the_op_types_of_both_graphs(bundle: Path, tmp_path: Path) -> None:
    result = optfuzz("report", str(bundle), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    png = (tmp_path / "graph.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    svg = (tmp_path / "graph.svg").read_text()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    import onnx

    model = onnx.load(bundle / "model.onnx")
    optimized = onnx.load(bundle / "optimized.onnx")
    for node in [*model.graph.node, *optimized.graph.node]:
        assert node.op_type in texts
    assert "Identity" in texts  # the node drop-node put in place of the bypassed one
    assert any(re.fullmatch(r"f32\[[0-9,]+\]", t) for t in texts)  # dtype[shape]
    assert "![minimized model" in (tmp_path / "report.md").read_text()


def test_title_names_pass_list_when_not_localized(bundle: Path) -> None:
    meta = read_meta(bundle / "meta.json")
    meta.responsible_passes = None
    meta.target.config["passes"] = ["nop-1", "nop-2", "drop-node", "nop-3"]
    meta.root_cause = "fake|(unlocalized)|rewrite|fp:-Exp"  # the key of a bundle so made
    title = issue_title(meta)
    assert title == ("fake: pass list [nop-1, nop-2, drop-node (+1 more)] removes Exp wrongly "
                     "(wrong output values)")
    assert render_issue_draft(meta, "repro").startswith(f"# {title}\n")
    meta.root_cause = None  # written before root-cause keys: the symptom's own words
    assert issue_title(meta) == ("fake: pass list [nop-1, nop-2, drop-node (+1 more)] changes "
                                 "the model's outputs (output-mismatch)")


def test_report_of_a_folder_without_meta_is_exit_2(tmp_path: Path) -> None:
    result = optfuzz("report", str(tmp_path))
    assert result.returncode == 2 and result.stderr.startswith("error: ")


def test_first_sentence_names_the_level_and_the_ablation_in_the_targets_words() -> None:
    """onnxruntime's report says the level and the disabled_optimizers ablation that named
    the transformer; a pass-list optimizer's says the list without the pass."""
    from fuzzer.store.meta import BundleMeta
    from tests.bundle_files import meta_dict

    def draft(target: dict, responsible: list[str]) -> str:
        meta = BundleMeta.from_json(meta_dict(
            "runtime-failure-0000abcd", schema=2, symptom="runtime-failure",
            target=target, responsible_passes=responsible, breaking_pass=responsible[-1],
            enabling_passes=responsible[:-1], root_cause="k", variants=[]))
        return render_issue_draft(meta, "repro")

    ort = draft({"name": "onnxruntime", "version": "1.32.0",
                 "config": {"level": "extended", "passes": None}},
                ["EliminateIdentity", "DivMulFusion"])
    assert "of onnxruntime 1.32.0 at ORT_ENABLE_EXTENDED on the attached" in ort
    assert ("With `DivMulFusion` also in `disabled_optimizers` (same level ORT_ENABLE_EXTENDED,"
            " same session options) the model shows no runtime-failure.") in ort
    fake = draft({"name": "fake", "version": "1.0",
                  "config": {"passes": ["nop-a", "run-fail"], "fixed_point": False}},
                 ["run-fail"])
    assert "Without `run-fail` (the rest of the pass list kept) the model shows no " \
           "runtime-failure." in fake
