"""What the live screen, the closing summary, campaign.log and summary.html say of a campaign:
bundles by symptom with documented behaviour apart, the time since the last new bundle, one
cases/s figure everywhere, each run's finish on every time axis, bundles per culprit (not
cases per pass), the folder's name as heading, one documented behaviour under one name."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from fuzzer.campaign.progress import render, summary
from fuzzer.campaign.stats import CampaignStats, cases_per_second, documented_name
from fuzzer.campaign.summary import after_finish, bundle_counts, culprit, write_summary
from fuzzer.handling.outcome import Handled, RootCauseMemo, settle_waiting
from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta
from tests.bundle_files import meta_dict
from tests.schema2_bundles import write_bundle

NOTE = "int32-input-casts (not tried again: an earlier finding with its key ended so)"


def text_of(renderable: object, width: int = 120) -> str:
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(renderable)
    return console.export_text()


def campaign_stats() -> CampaignStats:
    """3,133 documented findings and 10 others that made 2 bundles and 6 hits."""
    stats = CampaignStats(seed=0, target="fake", cases=5459)
    stats.findings.update({"metadata-change": 3133, "output-mismatch": 8, "bloat": 2})
    stats.documented["ir-version-upgrade"] = 3133
    stats.handled("new", "output-mismatch-00000001", "", "values differ")
    stats.handled("new", "bloat-00000002", "", "dead node")
    for _ in range(6):
        stats.handled("hit", "output-mismatch-00000001", "", "values differ")
    return stats


def test_the_live_screen_shows_bundles_by_symptom_and_documented_behaviour_apart():
    text = text_of(render(campaign_stats(), 600.0, 5459, 30.0, "crashes"))
    bundles = text.split("bundles by symptom")[1].split("documented behaviour")[0]
    assert re.search(r"output-mismatch\s+│\s+1\s+│\s+6", bundles)
    assert re.search(r"bloat\s+│\s+1\s+│\s+0", bundles)
    assert "metadata-change" not in bundles and "3133" not in bundles  # no raw findings
    documented = text.split("documented behaviour")[1]
    assert re.search(r"ir-version-upgrade\s+│\s+3133", documented)


def test_time_since_the_last_new_bundle():
    stats = CampaignStats(seed=0, target="fake")
    assert "last new bundle           none yet" in text_of(render(stats, None, 0, 1.0, "c"))
    stats.started = time.monotonic() - 100.0  # 100 s into the campaign
    stats.handled("new", "hang-00000001", "", "no result")
    stats.started -= 125.0  # 125 s later
    assert stats.since_last_bundle() == pytest.approx(125.0, abs=2.0)
    assert re.search(r"last new bundle\s+0:02:0[4-7] ago", text_of(render(stats, None, 0, 1.0,
                                                                           "c")))
    restored = CampaignStats.from_json(json.loads(json.dumps(stats.to_json())))
    assert restored.last_bundle_at == stats.last_bundle_at


def test_one_cases_per_second_figure_on_the_screen_and_in_summaries(tmp_path: Path):
    stats = campaign_stats()
    stats.elapsed_s, stats.started = 50.0, time.monotonic()  # the findings' end took 20 s
    stats.end_loop(5459, 30.0, limit=30.0)
    assert cases_per_second(5459, 30.0) == pytest.approx(181.97, abs=0.01)
    assert "cases/s                   182.0" in text_of(render(stats, 30.0, 5459, 30.0, "c"))
    assert "5459 in 30.0 s (182.0/s)" in text_of(summary(stats, 5459, 30.0, False, "c"))
    html = write_summary(tmp_path, stats.to_json()).read_text()
    assert "<td>cases per second (cases / 30.0 s of case loop)</td><td>182.0</td>" in html
    assert "109.2" not in html  # 5459 cases over the 50 s elapsed is not the figure


@pytest.mark.slow
def test_the_log_the_closing_summary_and_summary_html_agree(tmp_path: Path):
    out = tmp_path / "crashes"
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzer", "fuzz", "--target", "fake", "--passes", "raise",
         "--max-cases", "40", "--jobs", "1", "--reduce-seconds", "5", "--source", "generated",
         "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    closing = re.search(r"40 in [\d.]+ s \(([\d.,]+)/s\)", proc.stdout).group(1)
    logged = re.search(r"run ended: 40 cases in [\d.]+ s \(([\d.,]+)/s\)",
                       (out / "campaign.log").read_text()).group(1)
    page = re.search(r"<td>cases per second [^<]*</td><td>([\d.,]+)</td>",
                     (out / "summary.html").read_text()).group(1)
    assert closing == logged == page
    [run] = json.loads((out / "campaign.json").read_text())["runs"]
    assert run["start"] <= run["finish"] <= run["loop_end"] <= run["end"]


def test_every_time_axis_marks_the_finish_and_what_came_after(tmp_path: Path):
    stats = campaign_stats().to_json()
    stats["timeline"] = [{"t": 30.0 * i, "cases": 100 * i, "findings": 3 * i, "bundles": i}
                         for i in range(6)]
    stats["runs"] = [{"start": 0.0, "finish": 60.0, "loop_end": 90.0, "end": 150.0}]
    assert after_finish(stats) == [(1.0, 1.5, 2.5)]
    html = write_summary(tmp_path, stats).read_text()
    charts = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    timed = [svg for svg in charts if "campaign time (min)" in svg]
    assert len(timed) == 3
    for svg in timed:
        assert "finish" in svg and "after the finish: cases in flight" in svg
        assert "after the last case: queued findings" in svg
    del stats["runs"]  # a campaign.json of an older optfuzz: nothing to mark
    assert "after the finish" not in write_summary(tmp_path, stats).read_text()


def test_bundles_per_culprit_replace_cases_per_pass(tmp_path: Path):
    write_bundle(tmp_path, "output-mismatch-000000a1", breaking_pass="drop-node")
    write_bundle(tmp_path, "invalid-model-000000a2", breaking_pass="drop-node")
    write_bundle(tmp_path, "bloat-000000a3", responsible_passes=["bloat", "clean"])
    write_bundle(tmp_path, "hang-000000a4")
    metas = BundleStore(tmp_path).read_all()[0]
    by_symptom, by_culprit = bundle_counts(metas)
    assert by_culprit == {"drop-node": 2, "bloat + clean": 1, "(not localized)": 1}
    assert by_symptom == {"output-mismatch": 1, "invalid-model": 1, "bloat": 1, "hang": 1}
    stats = campaign_stats().to_json()
    stats["per_pass"] = {"drop-node": 5000, "clean": 5000}  # every case, every pass listed
    html = write_summary(tmp_path, stats).read_text()
    assert "Bundles per culprit (the pass at fault)" in html and "Cases per pass" not in html
    assert culprit(BundleMeta.from_json(meta_dict("bloat-00000001"))) == "(not localized)"


def test_the_heading_is_the_folders_name_not_a_machine_path(tmp_path: Path):
    folder = tmp_path / "crashes"
    folder.mkdir()
    html = write_summary(folder, CampaignStats(seed=0, target="fake").to_json()).read_text()
    assert "<h1>optfuzz campaign crashes</h1>" in html
    assert str(tmp_path) not in html


def test_one_documented_behaviour_has_one_name(tmp_path: Path):
    memo = RootCauseMemo()
    memo.failed("k", Handled("documented", name="int32-input-casts"))
    again = memo.backed_off("k")
    assert again is not None and again.name == "int32-input-casts"
    assert again.said == NOTE  # the note goes to the log, beside the name
    reported: list[Handled] = []
    settle_waiting(BundleStore(tmp_path), Handled("documented", name="int32-input-casts"),
                   [("message", "")], lambda handled, message: reported.append(handled))
    assert [h.name for h in reported] == ["int32-input-casts"]
    assert documented_name(NOTE) == "int32-input-casts"
    stats = CampaignStats(seed=0, target="fake")
    stats.handled("documented", None, "int32-input-casts", "m")
    stats.handled(again.status, None, again.name, "m")
    assert dict(stats.documented) == {"int32-input-casts": 2}
    older = {**stats.to_json(), "documented": {"int32-input-casts": 5, NOTE: 2}}
    assert dict(CampaignStats.from_json(older).documented) == {"int32-input-casts": 7}
    html = write_summary(tmp_path, older).read_text()
    table = html.split("<h2>Documented behaviour (not bundled)</h2>")[1]
    assert "<td>int32-input-casts</td><td class=num>7</td>" in table
    assert "not tried again" not in html
