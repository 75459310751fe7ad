"""report.md as an issue tracker takes it: the short repro in it runs on its own in a fresh
interpreter and exits 1 while the bug is there (0 once fixed) for every kind of bundle the
fake target makes, no fence or code span breaks, titles are distinct across a folder, and
the tracker's fields (state, regression range, versions checked) are shown where meta.json
has them and skipped where it does not."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from fuzzer.report.expected_actual import Observation
from fuzzer.report.issue_draft import model_text, render_issue_draft
from fuzzer.report.markdown import split_sections
from fuzzer.report.refresh import refresh_report, refreshed_report
from fuzzer.report.snippet import MAX_LINES, standalone_repro
from fuzzer.report.title import issue_title
from fuzzer.store.meta import BundleMeta, read_meta
from fuzzer.store.npz import read_npz
from fuzzer.targets import TARGETS, target_class
from oracles.base import Finding
from tests.bundle_files import meta_dict
from tests.schema2_bundles import write_bundle
from tests.test_triage_status import optfuzz, unary_model

REPO = Path(__file__).resolve().parents[1]
#: fake pass -> the symptom of its bundle on x -> Exp -> Neg -> Cos -> y: each kind of
#: bundle the fake target makes with a standalone repro (``fold`` raises an assertion
#: message with backticks).
KINDS = {"raise": "optimizer-error", "fold": "optimizer-error", "abort": "optimizer-abort",
         "invalid": "invalid-model", "load-fail": "load-failure",
         "run-fail": "runtime-failure", "drop-node": "output-mismatch"}
#: a message as onnxoptimizer words an internal assertion: backticks, and a run of three.
ASSERTION = "Assertion `rank <= 4` failed in ```fuse_bn``` at fuse.cc:12: `x` `` y"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """pass -> its bundle folder, every one made by ``optfuzz check --save`` into one
    folder (the report.md the campaign writes when it creates a bundle)."""
    root = tmp_path_factory.mktemp("tracker")
    model = unary_model(root / "m.onnx", ["Exp", "Neg", "Cos"])
    out = root / "crashes"
    for name in KINDS:
        result = optfuzz("check", str(model), "--target", "fake", "--passes", name,
                         "--save", str(out))
        assert result.returncode == 1, result.stderr
    found = {read_meta(p / "meta.json").breaking_pass: p for p in out.iterdir()
             if (p / "meta.json").is_file()}
    assert {name: read_meta(found[name] / "meta.json").symptom for name in KINDS} == KINDS
    return found


def fences(text: str) -> list[Token]:
    """The fenced code blocks of ``text`` as a CommonMark parser reads it."""
    return [t for t in MarkdownIt("commonmark").parse(text) if t.type == "fence"]


def script_of(text: str) -> str:
    """The report's one Python block: the standalone repro."""
    (block,) = [t for t in fences(text) if t.info == "python"]
    return block.content


def code_lines(script: str) -> int:
    """Lines of ``script`` but the model's ONNX text inside ``MODEL = \"\"\"\\ ... \"\"\"``."""
    lines = script.rstrip("\n").split("\n")
    start = lines.index('MODEL = """\\')
    end = lines.index('"""', start)
    return len(lines) - (end - start - 1)


def run_script(script: str, folder: Path, fixed: str = "") -> subprocess.CompletedProcess:
    """``script`` saved as ``folder``/repro.py and run there in a fresh interpreter (no
    bundle file beside it); the fake target is optfuzz's own package, hence PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "repro.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k != "OPTFUZZ_FAKE_FIXED"}
    env.update(PYTHONPATH=str(REPO), OPTFUZZ_FAKE_FIXED=fixed)
    return subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.parametrize("pass_name", list(KINDS))
def test_the_reports_repro_runs_alone_and_exits_1_while_the_bug_is_there(
        bundles: dict[str, Path], pass_name: str, tmp_path: Path) -> None:
    folder = bundles[pass_name]
    created = (folder / "report.md").read_text()  # as the finding's handling wrote it
    refreshed = refreshed_report(folder)  # inputs written out from inputs.npz
    for when, text in (("created", created), ("refreshed", refreshed)):
        script = script_of(text)
        assert code_lines(script) <= MAX_LINES, script
        assert "onnx.parser.parse_model(MODEL)" in script
        run = run_script(script, tmp_path / when)
        assert run.returncode == 1, (when, run.stdout, run.stderr)
        assert "reproduced: " in run.stderr and "not reproduced" not in run.stdout
    if KINDS[pass_name] in ("load-failure", "runtime-failure", "output-mismatch"):
        for text in (created, refreshed):  # the bundle's own inputs, inline, from the start
            assert "np.random" not in script_of(text) and "FEEDS = {" in script_of(text)
    fixed = run_script(script_of(refreshed), tmp_path / "fixed", fixed=pass_name)
    assert fixed.returncode == 0, (fixed.stdout, fixed.stderr)
    assert fixed.stdout.startswith("not reproduced")


def test_a_hang_is_a_call_that_does_not_finish_in_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fuzzer.report import snippet

    monkeypatch.setattr(snippet, "HANG_SECONDS", 2)  # the script waits 60 s
    meta = write_bundle(tmp_path, "hang-0000abcd", schema=2, symptom="hang", stage="optimize",
                        target={"name": "fake", "version": "1.0",
                                "config": {"passes": ["hang"], "fixed_point": False}},
                        responsible_passes=["hang"], breaking_pass="hang")
    repro = standalone_repro(meta, onnx.load(tmp_path / meta.id / "model.onnx"), None)
    assert "timeout=2)" in repro.text and repro.code_lines <= MAX_LINES
    run = run_script(repro.text, tmp_path / "hang")
    assert run.returncode == 1 and "did not finish within 2 s" in run.stderr, run.stderr
    assert run_script(repro.text, tmp_path / "fixed", fixed="hang").returncode == 0


def assert_nothing_breaks(text: str) -> None:
    """No backtick and no raw HTML outside code (a broken span or fence leaves one) but the
    collapsed block's own tags and the title's escaped characters (the title, checked on its
    own, says a crash site as it is), and no heading inside a fence ran past its section."""
    tokens = MarkdownIt("commonmark").parse(text)
    for index, token in enumerate(tokens):
        if token.type == "html_block":
            assert token.content.startswith(("<details><summary>", "</details>")), token
        title = index == 1
        for child in token.children or []:
            assert child.type != "html_inline", child.content
            if child.type == "text" and not title:
                assert "`" not in child.content, child.content
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[-1] == "Details"


def test_no_fence_or_code_span_breaks_in_the_folders_reports(bundles: dict[str, Path]) -> None:
    for folder in bundles.values():
        meta = read_meta(folder / "meta.json")
        text = refreshed_report(folder)
        assert_nothing_breaks(text)
        heading = MarkdownIt("commonmark").parse(text)[1]
        assert heading.content.replace("\\", "") == issue_title(meta).replace("\\", "")
        model = onnx.load(folder / "model.onnx")
        script = standalone_repro(meta, model, read_npz(folder / "inputs.npz")).text
        contents = [t.content for t in fences(text)]
        assert script in contents
        assert model_text(model) + "\n" in contents


def test_every_block_holds_its_source_text_whatever_backticks_it_has(tmp_path: Path) -> None:
    meta = write_bundle(tmp_path, "optimizer-error-0000abcd", schema=2,
                        symptom="optimizer-error", stage="optimize",
                        message="recorded " + ASSERTION,
                        target={"name": "fake", "version": "1.0",
                                "config": {"passes": ["fold"], "fixed_point": False}},
                        responsible_passes=["fold"], breaking_pass="fold",
                        root_cause=f"fake|fold|crash|RuntimeError: {ASSERTION} <name>")
    folder = tmp_path / meta.id
    model = onnx.load(folder / "model.onnx")
    run = Observation("fake 1.0", [Finding("optimizer-error", "optimize", ASSERTION)])
    text = render_issue_draft(meta, folder=folder, observed=run, model=model)
    assert_nothing_breaks(text)
    script = standalone_repro(meta, model, read_npz(folder / "inputs.npz")).text
    title = issue_title(meta)
    assert "fake names no upstream repository" in text  # so no gh line
    keys = f"signature: {meta.signature}\nroot cause: {meta.root_cause}"
    assert sorted(t.content for t in fences(text)) == sorted(
        f"{source}\n" for source in (script.rstrip("\n"), model_text(model), ASSERTION, keys))
    heading = MarkdownIt("commonmark").parse(text)[1]
    assert "".join(c.content for c in heading.children or []) == title  # <name>, backticks


def test_titles_are_distinct_across_a_folder(bundles: dict[str, Path]) -> None:
    titles = [issue_title(read_meta(p / "meta.json")) for p in bundles.values()]
    assert len(set(titles)) == len(titles), titles
    # keys that differ only in the crash site, or in a footprint, or in a kind, give
    # distinct titles; a long site is cut with a hash of the whole
    long = "RuntimeError: Unresolved value references: " + "<names>" * 40
    keys = ["fake|fold|crash|RuntimeError: a.cc:1: Assertion <name> failed.",
            "fake|fold|crash|RuntimeError: a.cc:2: Assertion <name> failed.",
            f"fake|fold|crash|{long}x", f"fake|fold|crash|{long}y",
            "fake|fold|rewrite|fp:-Neg", "fake|fold|rewrite|fp:-Neg+Identity",
            "fake|fold|rewrite|fp:-Neg (element type)", "fake|fold|rewrite|fp:",
            "fake|fold|rewrite|name clash", "fake|(framework)|slow|framework",
            "fake|fold|slow|passes"]
    titles = [issue_title(BundleMeta.from_json(meta_dict(
        "optimizer-error-0000abcd", schema=2, symptom="optimizer-error",
        responsible_passes=["fold"], breaking_pass="fold", root_cause=key)))
        for key in keys]
    assert len(set(titles)) == len(keys), titles
    assert all(len(t) < 256 for t in titles)  # GitHub's limit


def test_the_title_says_the_culprit_its_fault_and_what_a_user_sees() -> None:
    def title(**fields: Any) -> str:
        fields = {"symptom": "invalid-model", **fields}
        return issue_title(BundleMeta.from_json(meta_dict(
            "invalid-model-0000abcd", schema=2, responsible_passes=["fuse"],
            breaking_pass="fuse", **fields)))

    assert title(root_cause="fake|fuse|rewrite|fp:-Squeeze") == \
        "fake: fuse removes Squeeze wrongly (invalid model)"
    assert title(root_cause="fake|fuse|rewrite|fp:-Add+Constant+Tile",
                 trigger="needs opset 8 or lower", exposed_by="later") == \
        "fake: fuse with opset 8 or lower replaces Add with Constant and Tile wrongly, " \
        "exposed by later (invalid model)"
    assert title(root_cause="fake|fuse|rewrite|name clash",
                 trigger="needs a tensor named like the optimizer's own temporaries (a plain "
                         "number)") == \
        "fake: fuse clashes with a tensor named like its own temporaries (a plain number) " \
        "(invalid model)"
    assert title(root_cause="fake|fuse|rewrite|fp:-Neg", symptom="output-mismatch",
                 message="output 0 'y': shape (2, 3) became (3,)") == \
        "fake: fuse removes Neg wrongly (wrong output shape)"


def edit_meta(folder: Path, **changes: Any) -> None:
    data = json.loads((folder / "meta.json").read_text())
    data.update(changes)
    (folder / "meta.json").write_text(json.dumps(data))


def status(folder: Path) -> str:
    """The body of the folder's report.md "Status" section."""
    _, sections = split_sections((folder / "report.md").read_text())
    (body,) = [b for h, b in sections if h == "## Status"]
    return body


def test_a_bundle_without_state_regression_or_upstream_still_renders(tmp_path: Path) -> None:
    meta = write_bundle(tmp_path, "output-mismatch-0000abcd", schema=2,
                        responsible_passes=["drop-node"], breaking_pass="drop-node")
    folder = tmp_path / meta.id
    assert refresh_report(folder)
    body = status(folder)
    assert "- Bundle: `output-mismatch-0000abcd`" in body
    assert "- State: open (no state recorded)" in body
    assert "- Regression range: not bisected" in body
    assert "- Versions checked: fake `1.0` (the installed one the bug was found with)" in body
    assert "fake names no upstream repository" in body
    edit_meta(folder, state={"state": "reported", "url": "https://example.org/issues/7",
                             "time": "2026-01-02T00:00:00Z", "by": "optfuzz mark",
                             "history": []},
              regression={"last_good": "0.9", "first_bad": "1.0", "first_fixed": None,
                          "newest_checked": "1.0", "checked": ["0.9", "1.0"], "skipped": {},
                          "time": "2026-01-03T00:00:00Z"},
              upstream=[{"spec": "fake==0.9", "version": "0.9", "status": "fixed",
                         "time": "2026-01-03T00:00:00Z", "message": None, "observed": None},
                        {"spec": "fake==1.0", "version": "1.0", "status": "fails",
                         "time": "2026-01-03T00:00:00Z", "message": "x", "observed": None}])
    assert refresh_report(folder)
    body = status(folder)
    assert "- State: reported at `https://example.org/issues/7` (set 2026-01-02T00:00:00Z " \
           "by optfuzz mark)" in body
    assert "- Regression range: last good `0.9`, first bad `1.0`" in body
    assert "| `0.9` | `fixed` |" in body and "| `1.0` | `fails` |" in body
    edit_meta(folder, regression=None, upstream=None, state=None)  # as a bundle never checked
    assert refresh_report(folder)
    assert "- Regression range: not bisected" in status(folder)
    assert "Versions checked: fake `1.0`" in status(folder)


def test_the_gh_line_files_the_report_in_the_targets_repository() -> None:
    meta = BundleMeta.from_json(meta_dict(
        "invalid-model-0000abcd", schema=2, symptom="invalid-model",
        target={"name": "onnxoptimizer", "version": "0.4.2",
                "config": {"passes": ["fuse_consecutive_squeezes"], "fixed_point": False}},
        responsible_passes=["fuse_consecutive_squeezes"],
        breaking_pass="fuse_consecutive_squeezes",
        root_cause="onnxoptimizer|fuse_consecutive_squeezes|rewrite|fp:-Squeeze"))
    text = render_issue_draft(meta)
    (block,) = [t for t in fences(text) if t.info == "sh"]
    words = shlex.split(block.content)
    assert words[:5] == ["gh", "issue", "create", "--repo", "onnx/optimizer"]
    assert words[5:] == ["--title", issue_title(meta), "--body-file", "report.md"]
    assert {name: bool(target_class(name).repository) for name in TARGETS} == \
        {name: name != "fake" for name in TARGETS}


def test_output_differences_give_their_max_and_mean(tmp_path: Path) -> None:
    meta = write_bundle(tmp_path, "output-mismatch-0000abcd", schema=2,
                        message="output 0 'y': 2 of 2 values differ, max abs error 0.5 "
                                "(tolerance 0.0001)")
    folder = tmp_path / meta.id
    assert refresh_report(folder)
    assert "Difference of `y`: max abs 0.5 (as recorded; the mean was not)." in \
        (folder / "report.md").read_text()
    from fuzzer.store.npz import npz_bytes

    (folder / "expected.npz").write_bytes(npz_bytes({"y": np.array([1.0, 2.0], np.float32)}))
    (folder / "actual.npz").write_bytes(npz_bytes({"y": np.array([1.5, 2.0], np.float32)}))
    assert refresh_report(folder)
    assert "| output | expected | actual | max abs error | mean abs error |" in \
        (folder / "report.md").read_text()
    assert "| 0.5 | 0.25 |" in (folder / "report.md").read_text()
