"""Coverage guidance reaches a planted deep branch that chance does not: the fake target's
``ladder`` pass fails only on a run of six Neg nodes, and reports each shorter run as an edge
of its own. With the same seed and the same number of cases, ``--guided`` climbs the runs by
mutating the pool seeds that reached the longest one; the unguided campaign never gets there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

#: the climb depends on which cases the coverage workers keep up with: at 700 cases it
#: stopped at 4 of the 6 run lengths in one run of four or five
CASES = "1500"


def _campaign(out: Path, *extra: str) -> dict:
    cmd = [sys.executable, "-m", "fuzzer", "fuzz", "--target", "fake", "--passes", "ladder",
           "--fixed-passes", "--source", "generated", "--max-cases", CASES, "--jobs", "2",
           "--seed", "3", "--reduce-seconds", "20", "--quiet", "--out", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((out / "campaign.json").read_text())


def _ladder_bundles(out: Path) -> list[str]:
    return [p.parent.name for p in out.glob("*/meta.json")
            if "ladder.cc:6" in json.loads(p.read_text()).get("root_cause", "")]


def test_guided_campaign_reaches_the_planted_branch_and_chance_does_not(
        tmp_path: Path) -> None:
    guided = _campaign(tmp_path / "guided", "--guided")
    assert guided["guided"]["edge_features"] >= 6  # one per run length, 1 to 6
    # a seed may bring several run lengths at once: the pool grew, and queue.jsonl holds it
    queue = (tmp_path / "guided" / "queue.jsonl").read_text().splitlines()
    assert len(queue) == guided["guided"]["seeds"] >= 2
    assert len(_ladder_bundles(tmp_path / "guided")) == 1
    plain = _campaign(tmp_path / "plain")
    assert plain["cases"] == guided["cases"]
    assert not _ladder_bundles(tmp_path / "plain")
    assert "optimizer-error" not in plain["findings"]
