"""``optfuzz coverage`` runs pass-biased cases in sandboxed workers and reports reach."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fuzzer.cli import app


def test_coverage_json_names_reached_and_unreachable_passes(tmp_path: Path) -> None:
    out = tmp_path / "coverage.json"
    result = CliRunner().invoke(app, ["coverage", "--cases", "6", "--jobs", "1", "--passes",
                                      "fuse_bn_into_conv,eliminate_identity,nop",
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    passes = report["passes"]
    assert set(passes) == {"fuse_bn_into_conv", "eliminate_identity", "nop"}
    assert passes["eliminate_identity"]["reached"]
    assert passes["eliminate_identity"]["share"] >= 0.5
    assert not passes["nop"]["reached"]
    assert passes["nop"]["changed"] == 0
    assert "by design" in passes["nop"]["reason"]
    assert "conv-bn" in passes["fuse_bn_into_conv"]["motifs"]


def test_coverage_rejects_unknown_pass() -> None:
    result = CliRunner().invoke(app, ["coverage", "--cases", "1", "--passes", "no_such_pass"])
    assert result.exit_code != 0
