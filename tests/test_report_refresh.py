"""report.md follows meta.json: a refresh words the draft again from the hits, symptoms,
culprit and damage meta.json records now, without running the model (what a run worded is
kept), shows the optimized graph, fences every message so that its backticks cannot break
the Markdown, and never raises for a damaged folder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from fuzzer.report.expected_actual import Observation
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.markdown import code_span, fenced, split_sections
from fuzzer.report.refresh import refresh_report
from fuzzer.store.meta import BundleMeta, read_meta
from fuzzer.store.npz import npz_bytes
from oracles.base import Finding
from tests.bundle_files import meta_dict
from tests.conftest import unary_chain_model
from tests.schema2_bundles import write_bundle

#: a message as onnxoptimizer words an internal assertion: backticks, and a run of three.
ASSERTION = "Assertion `rank <= 4` failed in ```fuse_bn``` at fuse.cc:12: `x` `` y"
LOCALIZED = {"target": {"name": "fake", "version": "1.0",
                        "config": {"passes": ["nop-1", "drop-node", "nop-2"],
                                   "fixed_point": False}},
             "responsible_passes": ["nop-1", "drop-node", "nop-2"],
             "breaking_pass": "drop-node", "enabling_passes": ["nop-1", "nop-2"],
             "schema": 2}


def bundle(root: Path, bundle_id: str = "output-mismatch-0000abcd", **changes: Any) -> Path:
    """A localized bundle folder of the fake target's drop-node pass (model.onnx:
    x -> Exp -> Neg -> y) with ``changes`` to its meta.json, and no report.md yet."""
    write_bundle(root, bundle_id, **{**LOCALIZED, **changes})
    return root / bundle_id


def edit_meta(folder: Path, **changes: Any) -> None:
    """Change top-level fields of the folder's meta.json as a campaign's store does."""
    data = json.loads((folder / "meta.json").read_text())
    data.update(changes)
    (folder / "meta.json").write_text(json.dumps(data))


def report(folder: Path) -> str:
    """The folder's report.md."""
    return (folder / "report.md").read_text()


def section(text: str, heading: str) -> str:
    """The body of the section whose ``## `` heading starts with ``heading``."""
    _, sections = split_sections(text)
    (body,) = [b for h, b in sections if h.startswith(f"## {heading}")]
    return body


def opening(text: str) -> str:
    """The first paragraph below the title."""
    return text.split("\n\n")[1]


def code_blocks(text: str) -> list[Token]:
    """The fence and code_block tokens of ``text`` as a CommonMark parser reads it."""
    return [t for t in MarkdownIt("commonmark").parse(text) if t.type in ("fence", "code_block")]


def assert_one_block(text: str, message: str) -> None:
    """``message`` is, intact, the whole content of exactly one code block of ``text``, and
    no inline code span took a piece of it."""
    holding = [t for t in code_blocks(text) if t.content.rstrip("\n") == message]
    assert len(holding) == 1, code_blocks(text)
    inline = [child.content for t in MarkdownIt("commonmark").parse(text) if t.type == "inline"
              for child in t.children or [] if child.type == "code_inline"]
    assert not any("rank <= 4" in span for span in inline), inline


def test_refresh_shows_the_hits_and_symptoms_meta_json_has_now(tmp_path: Path) -> None:
    folder = bundle(tmp_path)
    assert refresh_report(folder)
    assert "; 1 hit between" in report(folder)
    edit_meta(folder, hits=1234, last_seen="2026-01-02T03:04:05Z",
              symptoms={"invalid-model": 3, "output-mismatch": 1231})
    assert refresh_report(folder)
    text = report(folder)
    assert "; 1 hit between" not in text
    (line,) = [ln for ln in text.splitlines() if "symptoms seen" in ln]  # one line
    assert "1234 hits between 2026-01-01T00:00:00Z and 2026-01-02T03:04:05Z" in line
    assert line.endswith("symptoms seen: `output-mismatch` (1231 hits), `invalid-model` "
                         "(3 hits)")
    assert "optfuzz also saw this fault as `invalid-model`" in split_sections(text)[0]
    before = (folder / "report.md").stat()
    assert refresh_report(folder) and report(folder) == text  # nothing new: same text
    assert (folder / "report.md").stat().st_ino == before.st_ino  # and no rewrite


def test_an_old_bundle_counts_its_one_symptom(tmp_path: Path) -> None:
    folder = bundle(tmp_path)
    data = json.loads((folder / "meta.json").read_text())
    data.pop("symptoms", None)  # a meta.json written before symptoms were counted
    (folder / "meta.json").write_text(json.dumps(dict(data, hits=7)))
    assert refresh_report(folder)
    assert "7 hits between" in report(folder)
    assert "symptoms seen: `output-mismatch` (7 hits)" in report(folder)
    assert "also saw" not in report(folder)


def test_refresh_keeps_what_a_run_worded_and_runs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = bundle(tmp_path)
    meta = read_meta(folder / "meta.json")
    run = Observation("fake 2.0", [Finding("runtime-failure", "execute", "run failed `here`")],
                      optimized=unary_chain_model(("Exp",)).SerializeToString())
    (folder / "graph.png").write_bytes(b"png")
    (folder / f"{meta.id}.zip").write_bytes(b"zip")
    first = render_issue_draft(meta, folder=folder, observed=run, picture="graph.png",
                               attachment=f"{meta.id}.zip", nodes=(9, 2),
                               model=onnx.load(folder / "model.onnx"))
    (folder / "report.md").write_text(first)

    from fuzzer.execution.sandbox import Sandbox

    def no_run(*_: object, **__: object) -> None:
        raise AssertionError("a refresh runs nothing")

    monkeypatch.setattr(Sandbox, "run", no_run)  # a refresh that ran the model returns False
    edit_meta(folder, hits=40)
    assert refresh_report(folder)
    text = report(folder)
    assert "40 hits" in text
    for heading in ("Expected and actual", "The optimized model"):
        assert section(text, heading) == section(first, heading)
    assert "**Actual:** the attached model now shows `runtime-failure`" in text
    assert "> **Note:** the attached model does not show `output-mismatch` with fake 2.0" \
        in text
    assert f"Attach `{meta.id}.zip`" in text and "](graph.png)" in text
    assert "reduced from 9 to 2 nodes" in text  # the count of the report, not meta.json's 5
    (folder / "graph.png").unlink()
    assert refresh_report(folder) and "## Graph before and after" not in report(folder)


def test_an_actual_worded_from_meta_json_follows_it(tmp_path: Path) -> None:
    folder = bundle(tmp_path, message="old message")
    (folder / "expected.npz").write_bytes(npz_bytes({"y": np.array([1.0], np.float32)}))
    (folder / "actual.npz").write_bytes(npz_bytes({"y": np.array([1.5], np.float32)}))
    assert refresh_report(folder)
    edit_meta(folder, message="new message")
    assert refresh_report(folder)
    actual = section(report(folder), "Expected and actual")
    assert "new message" in actual and "old message" not in actual
    assert "| `y` | `float32[1]` [1] | `float32[1]` [1.5] | 0.5 |" in actual


def test_the_opening_names_the_culprit_its_damage_and_the_exposing_pass(tmp_path: Path) -> None:
    damage = "writes a wrong shape: declared shape of `t3` is [] (rank 0); onnxruntime " \
        "computes [2, 3]"
    folder = bundle(tmp_path, "invalid-model-0000abcd", symptom="invalid-model",
                    stage="validate", exposed_by="nop-2", damage=damage)
    assert refresh_report(folder)
    first = opening(report(folder))
    assert first == (f"`drop-node` {damage}. `nop-2` then produces an invalid model "
                     "(`invalid-model`), tripping over that damage.")
    meta = BundleMeta.from_json(meta_dict("invalid-model-0000abcd", **LOCALIZED,
                                          symptom="invalid-model", exposed_by="nop-2"))
    assert opening(render_issue_draft(meta)) == (
        "`drop-node` leaves the model wrong. `nop-2` then produces an invalid model "
        "(`invalid-model`), tripping over that damage.")
    plain = BundleMeta.from_json(meta_dict("invalid-model-0000abcd", **LOCALIZED,
                                           symptom="invalid-model"))
    assert opening(render_issue_draft(plain)).startswith("Running ")


def test_the_optimized_graph_follows_the_minimized_one(tmp_path: Path) -> None:
    folder = bundle(tmp_path)
    optimized = unary_chain_model(("Exp",))
    onnx.save(optimized, folder / "optimized.onnx")
    assert refresh_report(folder)
    text = report(folder)
    headings = [h for h, _ in split_sections(text)[1]]
    at = headings.index("## The minimized model (model.onnx, 2 nodes)")
    assert headings[at + 1] == "## The optimized model (1 node)"
    (block,) = code_blocks(section(text, "The optimized model"))
    assert block.content.rstrip("\n") == onnx.printer.to_text(optimized).rstrip("\n")


def test_no_optimized_model_is_said_in_one_line(tmp_path: Path) -> None:
    folder = bundle(tmp_path, "optimizer-error-0000abcd", symptom="optimizer-error",
                    stage="optimize", message=ASSERTION)
    assert refresh_report(folder)
    body = section(report(folder), "The optimized model").strip("\n")
    assert body == "No optimized model: the target raised an exception (`optimizer-error`)."


@pytest.mark.parametrize("where", ["recorded", "run", "problem"])
def test_a_message_with_backticks_is_one_fenced_block(tmp_path: Path, where: str) -> None:
    folder = bundle(tmp_path, "optimizer-error-0000abcd", symptom="optimizer-error",
                    stage="optimize", message="recorded " + ASSERTION,
                    root_cause=f"fake|drop-node|{ASSERTION}")
    meta = read_meta(folder / "meta.json")
    observed = {"recorded": None,
                "run": Observation("fake 1.0", [Finding("optimizer-error", "optimize",
                                                        ASSERTION)]),
                "problem": Observation("fake 1.0", problem=ASSERTION)}[where]
    text = render_issue_draft(meta, folder=folder, observed=observed,
                              model=onnx.load(folder / "model.onnx"))
    (folder / "report.md").write_text(text)
    edit_meta(folder, hits=3)
    assert refresh_report(folder)
    text = report(folder)
    assert_one_block(text, ASSERTION if where != "recorded" else "recorded " + ASSERTION)
    assert_one_block(text, f"signature: {meta.signature}\nroot cause: fake|drop-node|{ASSERTION}")
    tokens = MarkdownIt("commonmark").parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[-1] == "Details"  # no fence ran past its section


def test_fences_and_code_spans_outlast_any_backtick_run() -> None:
    for text in ("plain", "a `b` c", "```", "x ```` y", "`edge`", ""):
        (token,) = code_blocks(fenced(text))
        assert token.content.rstrip("\n") == text
        if text:
            (inline,) = MarkdownIt("commonmark").parse(code_span(text))[1].children or []
            assert inline.type == "code_inline" and inline.content == text


def test_a_damaged_folder_is_false_and_keeps_its_report(tmp_path: Path) -> None:
    folder = bundle(tmp_path)
    (folder / "report.md").write_text("as it was")
    for damage in ({"meta.json": b"{"}, {"meta.json": b""}, {"model.onnx": b"\x00garbage"},
                   {"meta.json": json.dumps(meta_dict(folder.name, **{
                       **LOCALIZED, "target": {"name": "no-such", "version": "1",
                                               "config": {}}})).encode()}):
        saved = {name: (folder / name).read_bytes() for name in damage}
        for name, data in damage.items():
            (folder / name).write_bytes(data)
        assert refresh_report(folder) is False, damage
        assert report(folder) == "as it was"
        for name, data in saved.items():
            (folder / name).write_bytes(data)
    (folder / "model.onnx").unlink()
    assert refresh_report(folder) is False
    assert refresh_report(tmp_path / "no-such-bundle") is False
    assert not re.search(r"\.report\.md\.", " ".join(p.name for p in folder.iterdir()))


def test_a_target_that_cannot_stage_its_configuration_says_so(tmp_path):
    """onnxruntime applies its transformers in its own order: the culprit search cannot
    judge the model between two of them, and the report says that the breaking pass is only
    the last of the minimal list."""
    from fuzzer.report.issue_draft import culprit_sentence
    from fuzzer.store.meta import BundleMeta
    from tests.bundle_files import meta_dict

    meta = BundleMeta.from_json(meta_dict(
        "output-mismatch-00000001", breaking_pass="DivMulFusion",
        enabling_passes=["ConstantFolding"], culprit_staging="not staged"))
    sentence = culprit_sentence(meta)
    assert "cannot run a prefix" in sentence and "`DivMulFusion`" in sentence
    meta.extra["culprit_staging"] = "plain"
    assert culprit_sentence(meta) == ""
