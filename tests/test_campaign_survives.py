"""One campaign meets every kind of bug the fake target has and survives all of them."""

from __future__ import annotations

import json
import subprocess
import sys

from fuzzer.store.meta import SCHEMA
from tests.test_cli_check import optfuzz

BUGS = "raise,abort,segv,hang,drop-node,invalid,bloat"


def test_campaign_survives_every_bug(chain_file, tmp_path):
    out = tmp_path / "crashes"
    proc = optfuzz("fuzz", "--target", "fake", "--source", "dir", "--corpus",
                   str(chain_file.parent), "--passes", BUGS, "--timeout", "2", "--jobs", "2",
                   "--out", str(out), "--quiet", "--reduce-seconds", "30")
    assert proc.returncode == 0, proc.stderr[-2000:]
    metas = [json.loads(p.read_text()) for p in out.glob("*/meta.json")]
    symptoms = {m["symptom"] for m in metas}
    log = (out / "campaign.log").read_text()  # says why a finding was dropped
    stats = json.loads((out / "campaign.json").read_text())  # and how each was handled
    assert symptoms >= {"optimizer-error", "optimizer-abort", "hang", "output-mismatch",
                        "invalid-model", "bloat"}, (symptoms, log, stats)
    assert stats["cases"] == 8  # the whole list once, then each pass alone
    for meta in metas:
        assert meta["schema"] == SCHEMA and meta["hits"] >= 1
        repro = subprocess.run([sys.executable, "repro.py"], cwd=out / meta["id"],
                               capture_output=True, text=True, timeout=120)
        assert repro.returncode == 1, (meta["id"], repro.stdout, repro.stderr)


def test_resume_continues_after_the_last_case(chain_file, tmp_path):
    out = tmp_path / "crashes"
    args = ("fuzz", "--target", "fake", "--source", "dir", "--corpus", str(chain_file.parent),
            "--passes", "clean,bloat", "--out", str(out), "--quiet", "--jobs", "1")
    assert optfuzz(*args, "--max-cases", "2").returncode == 0
    first = json.loads((out / "campaign.json").read_text())
    assert first["cases"] == 2 and first["next_case"] == 2
    assert optfuzz(*args, "--resume").returncode == 0
    second = json.loads((out / "campaign.json").read_text())
    assert second["cases"] == 3  # 3 configurations in all: the list, then each pass alone


def test_fixed_passes_runs_exactly_the_given_list(chain_file, tmp_path):
    out = tmp_path / "crashes"
    proc = optfuzz("fuzz", "--target", "fake", "--source", "generated,dir", "--corpus",
                   str(chain_file.parent), "--passes", "clean,bloat", "--fixed-passes",
                   "--max-cases", "20", "--out", str(out), "--quiet", "--jobs", "1",
                   "--reduce-seconds", "0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    stats = json.loads((out / "campaign.json").read_text())
    assert stats["per_pass"] == {"clean": stats["usable"], "bloat": stats["usable"]}
    metas = [json.loads(p.read_text()) for p in out.glob("*/meta.json")]
    assert metas and all(m["target"]["config"]["passes"] == ["clean", "bloat"] for m in metas)


def test_the_campaign_log_says_why_a_finding_was_dropped(chain_file, tmp_path):
    out = tmp_path / "crashes"
    proc = optfuzz("fuzz", "--target", "fake", "--source", "dir", "--corpus",
                   str(chain_file.parent), "--passes", "bump-ir", "--fixed-passes",
                   "--max-cases", "1", "--out", str(out), "--quiet", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not list(out.glob("*/meta.json"))  # documented behaviour is never bundled
    assert "finding dropped (documented: " in (out / "campaign.log").read_text()
