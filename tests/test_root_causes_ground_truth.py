"""Ground truth for root-cause bucketing: a campaign of 1,000 cases on the fake target, whose
planted bugs are each reachable through many graphs and tensor names, leaves exactly one
bundle per planted bug and none for the behaviours the fake target documents.

Two planted bugs sit in one pass with different crash sites (``fold``), and two give the
same message from different passes (``fuse-x``, ``fuse-y``): merging distinct bugs fails this
test as surely as splitting one."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.test_triage_status import optfuzz

PASSES = "fold,fuse-x,fuse-y,bad-neg,invalid,abort,leave-dead,bump-ir,clean"
#: (breaking pass, symptom, what tells the bug apart) of every planted bug.
PLANTED = {
    ("fold", "optimizer-error", "fold.cc:41"),
    ("fold", "optimizer-error", "fold.cc:97"),
    ("fuse-x", "optimizer-error", "shape mismatch"),
    ("fuse-y", "optimizer-error", "shape mismatch"),
    ("bad-neg", "output-mismatch", "fp:-Neg"),
    ("invalid", "invalid-model", "|rewrite|fp:"),
    ("abort", "optimizer-abort", "SIGABRT"),
}


def _planted(meta: dict) -> tuple[str, str, str] | None:
    for breaking, symptom, mark in PLANTED:
        if (meta["breaking_pass"], meta["symptom"]) == (breaking, symptom) and \
                mark in meta["root_cause"]:
            return breaking, symptom, mark
    return None


@pytest.mark.slow
def test_one_bundle_per_planted_bug_and_none_for_documented_behaviour(tmp_path):
    out = tmp_path / "crashes"
    proc = optfuzz("fuzz", "--target", "fake", "--passes", PASSES, "--source", "generated",
                   "--max-cases", "1000", "--jobs", "2", "--reduce-seconds", "10",
                   "--seed", "7", "--out", str(out), "--quiet", timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    metas = [json.loads(p.read_text()) for p in out.glob("*/meta.json")]
    found = [_planted(m) for m in metas]
    assert None not in found, [m["root_cause"] for m in metas]
    assert sorted(found) == sorted(PLANTED)  # each planted bug once, nothing else
    stats = json.loads((out / "campaign.json").read_text())
    assert stats["cases"] == 1000
    assert stats["documented"]["fake-dead-ends"] > 0
    assert stats["documented"]["fake-ir-upgrade"] > 0
    for meta in metas:
        assert meta["hits"] >= 2, meta["id"]  # reached more than once
        assert meta["nodes"]["minimized"] <= 3, (meta["id"], meta["nodes"])
        assert meta["verified"]["repro"].startswith("reproduces")
        assert sum(meta["symptoms"].values()) == meta["hits"]
        report = (out / meta["id"] / "report.md").read_text()
        assert f"{meta['hits']} hit" in report, meta["id"]  # worded again as hits came
        repro = subprocess.run([sys.executable, "repro.py"], cwd=out / meta["id"],
                               capture_output=True, text=True, timeout=120)
        assert repro.returncode == 1, (meta["id"], repro.stdout, repro.stderr)
        passes = re.findall(r"'passes': \[([^\]]*)\]", (out / meta["id"] / "repro.py")
                            .read_text())
        assert passes and all(p.count("'") == 2 for p in passes), passes  # one pass alone
