"""The whole tool works for a target that is not onnxoptimizer: a campaign, localization,
reduction, replay, triage and report on the fake target, with ``import onnxoptimizer``
made to fail in every process of that path (a module of that name that raises on import
comes first on the path), so any code that still reaches for onnxoptimizer breaks here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _optfuzz(blocker: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "fuzzer", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert "onnxoptimizer is blocked" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    if check:
        assert proc.returncode in (0, 1), (args, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc


@pytest.mark.slow
def test_campaign_to_report_without_onnxoptimizer(tmp_path, chain_file):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "onnxoptimizer.py").write_text(
        'raise ImportError("onnxoptimizer is blocked in this test")\n')
    out = tmp_path / "crashes"
    _optfuzz(blocker, "fuzz", "--target", "fake", "--passes",
             "nop-1,drop-node,nop-2,raise,nop-3", "--fixed-passes", "--source", "generated",
             "--max-cases", "30", "--jobs", "2", "--reduce-seconds", "20", "--out", str(out),
             "--quiet", "--timeout", "5")
    metas = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/meta.json")}
    assert metas, "the campaign made no bundle"
    responsible = {tuple(m["responsible_passes"] or ()) for m in metas.values()}
    assert ("raise",) in responsible or ("drop-node",) in responsible, responsible
    bundle = out / sorted(metas)[0]
    assert _optfuzz(blocker, "localize", str(bundle)).returncode == 0
    _optfuzz(blocker, "reduce", str(bundle), "--time-limit", "20")
    replay = _optfuzz(blocker, "replay", str(out))
    assert replay.returncode == 1 and "still fails" in replay.stdout, replay.stdout
    triage = _optfuzz(blocker, "triage", str(out), "--json")
    assert {row["id"] for row in json.loads(triage.stdout)} == set(metas)
    _optfuzz(blocker, "report", str(bundle))
    assert (bundle / "report.md").read_text().startswith("# fake: ")
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                           text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=f"{blocker}{os.pathsep}{ROOT}"))
    assert repro.returncode == 1, repro.stdout + repro.stderr
