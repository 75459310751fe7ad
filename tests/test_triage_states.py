"""``optfuzz triage`` and the maintainer's states: regressed bundles first, then unreported
open ones, the state shown in its column; bundles marked duplicate or invalid hidden unless
``--all`` (and counted); the states survive ``triage --rebucket``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzer.triage.marks import mark_bundle
from fuzzer.triage.rows import TriageFilter, hide_dismissed, triage_rows
from tests.schema2_bundles import write_bundle
from tests.test_rebucket import EXECUTION, FIXED, GONE, IR, OTHER, build_folder
from tests.test_triage_status import optfuzz

URL = "https://github.com/onnx/optimizer/issues/9"
#: bundle id -> (hits, words of its mark, None: never marked)
BUNDLES = {
    "output-mismatch-00000001": (90, ["reported", URL]),
    "output-mismatch-00000002": (5, None),
    "optimizer-error-00000003": (1, ["fixed", "0.9"]),  # then hit: regressed
    "invalid-model-00000004": (40, ["open"]),
    "bloat-00000005": (70, ["duplicate-of", "output-mismatch-00000002"]),
    "hang-00000006": (60, ["invalid", "the model asks for it"]),
    "crash-00000007": (80, ["fixed", "0.9"]),
}
#: regressed, then open (new first: all are new here; severity class; hits), reported, fixed.
SHOWN = ["optimizer-error-00000003", "output-mismatch-00000002", "invalid-model-00000004",
         "output-mismatch-00000001", "crash-00000007"]
HIDDEN = ["bloat-00000005", "hang-00000006"]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.delenv("OPTFUZZ_FAKE_FIXED", raising=False)
    root = tmp_path / "crashes"
    for bid, (hits, _) in BUNDLES.items():
        write_bundle(root, bid, hits=hits)
    for bid, (_, words) in BUNDLES.items():
        if words:
            mark_bundle(root / bid, words, when="2026-02-01T00:00:00Z")
    from fuzzer.store.folder import BundleStore

    BundleStore(root).add_hit("optimizer-error-00000003", "2026-03-01T00:00:00Z")
    return root


def test_rows_put_regressions_then_unreported_bundles_first(folder: Path) -> None:
    rows, damaged = triage_rows(folder, {}, TriageFilter())
    assert not damaged
    shown, hidden = hide_dismissed(rows)
    assert [r.id for r in shown] == SHOWN and hidden == 2
    everything, none = hide_dismissed(rows, everything=True)
    assert [r.id for r in everything] == SHOWN + HIDDEN and none == 0
    by_id = {r.id: r for r in everything}
    assert by_id["optimizer-error-00000003"].state_text == "regressed in 1.0 (fixed in 0.9)"
    assert by_id["output-mismatch-00000001"].state_text == f"reported {URL}"
    assert by_id["bloat-00000005"].state == "duplicate"
    assert by_id["output-mismatch-00000002"].state == "open"  # never marked


def test_the_command_hides_dismissed_bundles_unless_all(folder: Path) -> None:
    proc = optfuzz("triage", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["id"] for r in rows] == SHOWN
    assert rows[0]["state"] == "regressed"
    assert "2 bundle(s) marked duplicate or invalid hidden; --all shows them" in proc.stderr

    proc = optfuzz("triage", str(folder), "--all")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    listed = [next(i for i, ln in enumerate(lines) if bid in ln) for bid in SHOWN + HIDDEN]
    assert listed == sorted(listed)
    assert "regressed in 1.0" in proc.stdout and "duplicate of" in proc.stdout
    assert "hidden" not in proc.stdout


def test_states_survive_a_rebucket(tmp_path: Path) -> None:
    """A bundle keyed in place, one moved to documented/, one fixed and one that cannot run:
    rebucketing merges none of them, and each keeps its state."""
    out = build_folder(tmp_path, (OTHER, IR, FIXED, GONE))
    marks = {OTHER: ["reported", URL], IR: ["invalid", "documented"], FIXED: ["fixed", "1.0"],
             GONE: ["duplicate-of", OTHER]}
    for bid, words in marks.items():
        mark_bundle(out / bid, words)
    before = {bid: json.loads((out / bid / "meta.json").read_text())["state"]
              for bid in marks}
    proc = optfuzz("triage", "--rebucket", str(out), *EXECUTION, fixed="raise", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"keyed {OTHER}" in proc.stdout and "0 merged" in proc.stdout
    for bid, state in before.items():
        folder = out / bid if bid != IR else out / "documented" / bid
        assert json.loads((folder / "meta.json").read_text())["state"] == state, bid


def test_a_merge_keeps_the_strongest_state_and_repoints_duplicates(tmp_path: Path) -> None:
    """Three bundles of one fault merge into the smallest (open); one merged away was
    reported upstream: the kept bundle carries the report, with every merged record in its
    history, and a bundle marked duplicate of a merged one now names the kept one."""
    from tests.test_rebucket import KEPT, SAME

    out = build_folder(tmp_path, (*SAME, OTHER))
    mark_bundle(out / SAME[1], ["reported", URL])
    mark_bundle(out / SAME[2], ["fixed", "0.9"])
    mark_bundle(out / OTHER, ["duplicate-of", SAME[2]])
    proc = optfuzz("triage", "--rebucket", str(out), *EXECUTION, timeout=300)
    assert proc.returncode == 0, proc.stderr
    kept = json.loads((out / KEPT / "meta.json").read_text())["state"]
    assert (kept["state"], kept["url"], kept["by"]) == \
        ("reported", URL, "optfuzz triage --rebucket")
    assert {entry["state"] for entry in kept["history"]} == {"reported", "fixed"}
    other = json.loads((out / OTHER / "meta.json").read_text())["state"]
    assert (other["state"], other["duplicate_of"]) == ("duplicate", KEPT)
    assert other["history"][-1]["duplicate_of"] == SAME[2]
