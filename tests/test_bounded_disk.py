"""A campaign's output folder grows only with bundles: hits add no file, variants per bundle
are capped, the campaign's own log rotates, and campaign.json's timeline and reason counts
stay bounded however long the campaign runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzer.campaign import log as campaign_log
from fuzzer.campaign.stats import MAX_REASONS, MAX_TIMELINE, OTHER_REASONS, CampaignStats
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.store.folder import BundleStore
from tests.bundle_files import bundle_files
from tests.test_cli_check import optfuzz

LOOSE_FILES = {"campaign.json", "summary.html", "README.md", campaign_log.LOG_FILE, ".lock",
               ".campaign.lock"}


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_hits_add_no_file_and_variants_stop_at_the_cap(tmp_path):
    store = BundleStore(tmp_path, batch_hits=True)
    store.create("hang-0000000a", bundle_files("hang-0000000a"))
    before = files_under(tmp_path)
    for _ in range(200):
        store.add_hit("hang-0000000a")
    store.flush_hits()
    assert files_under(tmp_path) == before
    kept = [store.add_variant("hang-0000000a", {".onnx": b"m", ".npz": b"f"}, 3,
                              "2026-11-21T10:00:00Z") for _ in range(10)]
    assert kept == [True] * 3 + [False] * 7
    assert len(files_under(tmp_path) - before) == 3 * 2  # three variants, two files each
    meta = store.meta("hang-0000000a")
    assert meta.hits == 1 + 200 + 10 and len(meta.variants) == 3


def test_the_campaign_log_rotates_within_its_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(campaign_log, "LOG_BYTES", 4000)
    logger = campaign_log.open_log(tmp_path)
    for index in range(2000):
        logger.info("new bundle hang-%08x: no result after 30 s in stage optimize", index)
    campaign_log.close_log(logger)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [campaign_log.LOG_FILE] + [f"{campaign_log.LOG_FILE}.{i}" for i in
                                                 range(1, campaign_log.LOG_BACKUPS + 1)]
    assert all((tmp_path / n).stat().st_size <= 4000 for n in names)
    assert "hang-000007cf" in (tmp_path / campaign_log.LOG_FILE).read_text()  # the newest


def test_the_timeline_and_the_reasons_stay_bounded():
    stats = CampaignStats(seed=0, target="fake")
    case = TestCase("fake", {"passes": ["clean"]}, {"kind": "generated"})
    for index in range(5 * MAX_TIMELINE):
        stats.cases = index
        stats.tick(force=True)
        stats.add(case, CaseResult([], f"reference: Fail: unknown op Custom{chr(65 + index % 26)}"
                                   f"{'x' * (index % 400)}", "reference", {}))
    assert len(stats.timeline) <= MAX_TIMELINE
    assert stats.timeline[-1]["cases"] == 5 * MAX_TIMELINE - 1  # the newest point is kept
    assert len(stats.unusable_reasons) <= MAX_REASONS + 1
    assert stats.unusable_reasons[OTHER_REASONS] > 0
    assert len(json.dumps(stats.to_json())) < 1 << 20


@pytest.mark.slow
def test_a_campaign_of_one_recurring_bug_writes_files_only_with_its_bundle(tmp_path):
    out = tmp_path / "crashes"
    args = ["fuzz", "--target", "fake", "--source", "generated", "--passes", "raise",
            "--fixed-passes", "--out", str(out), "--quiet", "--jobs", "1", "--reduce-seconds",
            "0"]
    first = optfuzz(*args, "--max-cases", "20")
    assert first.returncode == 0, first.stdout + first.stderr
    bundles = [p for p in out.iterdir() if (p / "meta.json").is_file()]
    assert len(bundles) == 1
    before = files_under(bundles[0])
    hits = json.loads((bundles[0] / "meta.json").read_text())["hits"]
    again = optfuzz(*args, "--max-cases", "150", "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [p for p in out.iterdir() if (p / "meta.json").is_file()] == bundles
    assert files_under(bundles[0]) == before
    assert json.loads((bundles[0] / "meta.json").read_text())["hits"] >= hits + 100
    assert {p.name for p in out.iterdir() if p.is_file()} <= LOOSE_FILES
    log = (out / campaign_log.LOG_FILE).read_text()
    assert log.count("run started") == 2 and log.count("new bundle optimizer-error-") == 1
