"""summary.html of a campaign folder: totals, charts and the bundle list."""

from __future__ import annotations

from pathlib import Path

from fuzzer.campaign.summary import write_summary
from tests.schema2_bundles import write_bundle

STATS = {
    "seed": 3, "target": "fake", "elapsed_s": 30.0, "next_case": 300, "cases": 300,
    "usable": 290, "unusable": 10, "unusable_reasons": {"reference: RuntimeError": 10},
    "unusable_models": {}, "findings": {"output-mismatch": 12, "bloat": 3},
    "bundles_new": 4, "hits": 11, "per_pass": {"drop-node": 150, "clean": 140},
    "per_motif": {"conv-bn": 90, "matmul-add-bias": 60},
    "findings_per_pass": {"drop-node": 15},
    "timeline": [{"t": 10.0, "cases": 100, "findings": 4, "bundles": 2},
                 {"t": 20.0, "cases": 190, "findings": 9, "bundles": 3},
                 {"t": 30.0, "cases": 300, "findings": 15, "bundles": 4}],
}


def test_summary_has_totals_and_one_chart_per_view(tmp_path: Path) -> None:
    write_bundle(tmp_path, "output-mismatch-000000a1", breaking_pass="drop-node")
    path = write_summary(tmp_path, STATS)
    text = path.read_text()
    assert path == tmp_path / "summary.html"
    # findings, root causes and throughput over time, bundles per symptom and per culprit,
    # cases per motif
    assert text.count("<svg") == 6
    for title in ("Findings over time", "Root causes over time", "Throughput over time",
                  "Bundles per symptom (first seen)", "Bundles per culprit",
                  "Cases per motif"):
        assert title in text
    assert "Cases per pass" not in text and "Findings per symptom" not in text
    assert "<td>10.0</td>" in text  # 300 cases in 30 s of case loop
    assert "reference: RuntimeError" in text


def test_summary_of_a_fresh_campaign_has_no_charts(tmp_path: Path) -> None:
    text = write_summary(tmp_path, {"seed": 0, "target": "fake", "cases": 0}).read_text()
    assert "<svg" not in text and "Root causes (0)" in text
