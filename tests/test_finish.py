"""The end of a time-limited campaign: cases still in flight a few seconds after the limit
(here every case hangs until its timeout of a minute) are stopped unjudged and said in the
log, instead of holding the finish for their timeouts."""

from __future__ import annotations

import json

from tests.test_cli_check import optfuzz


def test_cases_hanging_past_the_time_limit_are_stopped_unjudged(tmp_path):
    out = tmp_path / "out"
    proc = optfuzz("fuzz", "--target", "fake", "--passes", "hang", "--fixed-passes",
                   "--source", "generated", "--seconds", "2", "--timeout", "600",
                   "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    log = (out / "campaign.log").read_text()
    assert "case(s) still running 5 s after it were stopped unjudged" in log, log
    stats = json.loads((out / "campaign.json").read_text())
    assert stats["last_run"]["cases"] == 0  # no case came back: none was judged
