"""A campaign records where, when and with what it ran (campaign.json and summary.html),
and leaves a README.md that says how to read its folder, written once."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import onnx
import onnxruntime

from fuzzer import __version__
from fuzzer.campaign.readme import write_readme


def fuzz(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fuzzer", "fuzz", "--target", "fake", "--passes", "clean",
         "--fixed-passes", "--source", "generated", "--jobs", "1", "--quiet",
         "--out", str(out), *extra],
        capture_output=True, text=True, timeout=300, env=dict(os.environ))


def test_a_campaign_records_its_provenance_and_writes_its_readme(tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    proc = fuzz(out, "--max-cases", "20")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    campaign = json.loads((out / "campaign.json").read_text())
    (run,) = campaign["provenance"]
    assert run["versions"]["optfuzz"] == __version__
    assert run["versions"]["onnx"] == onnx.__version__
    assert run["versions"]["onnxruntime"] == onnxruntime.__version__
    assert {"target", "numpy", "python"} <= set(run["versions"])
    assert run["target"] == "fake" and run["host"] == socket.gethostname()
    assert run["command"][-4:] == ["--out", str(out), "--max-cases", "20"]
    assert run["os"] and run["machine"] and run["started"].endswith("Z")
    summary = (out / "summary.html").read_text()
    assert "Provenance" in summary and run["started"] in summary
    readme = (out / "README.md").read_text()
    for text in (f"optfuzz triage {out}", "report.md", "repro.py", "model.onnx", "meta.json",
                 "pending/", "To report a bug"):
        assert text in readme, text

    (out / "README.md").write_text("my notes\n")
    proc = fuzz(out, "--max-cases", "3", "--resume")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "README.md").read_text() == "my notes\n"  # never overwritten
    runs = json.loads((out / "campaign.json").read_text())["provenance"]
    assert len(runs) == 2 and runs[0] == run and "--resume" in runs[1]["command"]


def test_the_readme_is_written_once(tmp_path: Path) -> None:
    assert write_readme(tmp_path, "crashes")
    assert not write_readme(tmp_path, "elsewhere")
    assert "optfuzz triage crashes" in (tmp_path / "README.md").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # no temporary file left
