"""A campaign folder stays one campaign: ``--resume`` refuses other settings, and a campaign
whose finding thread or worker pool dies, or whose disk fills up, stops at once with one line
and leaves a folder that ``--resume`` continues."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pebble import ProcessFuture, ProcessPool
from pebble.pool.base_pool import PoolStatus
from rich.console import Console
from typer.testing import CliRunner

from fuzzer.campaign import finding_thread
from fuzzer.campaign.failure import CampaignError
from fuzzer.campaign.run import BATCH, run_campaign
from fuzzer.campaign.settings import CampaignSettings
from fuzzer.campaign.stats import CampaignStats
from fuzzer.cli import app
from fuzzer.errors import InputError
from fuzzer.handling.outcome import FindingPolicy
from fuzzer.store.folder import BundleStore
from tests.test_cli_check import assert_one_line_error, optfuzz

HANG_GUARD = 60.0  # seconds: a campaign that has to stop early returns well before this
LONG = 120.0  # seconds: the time limit of campaigns that are expected to stop early


def corpus_args(chain_file: Path, out: Path) -> list[str]:
    """A three-case campaign of the fake target over one model (the list, then each pass)."""
    return ["fuzz", "--target", "fake", "--source", "dir", "--corpus", str(chain_file.parent),
            "--passes", "clean,bloat", "--out", str(out), "--quiet", "--jobs", "1",
            "--reduce-seconds", "0"]


def generated(out: Path, passes: list[str], **extra: Any) -> CampaignSettings:
    """An in-process campaign of generated graphs through the fake target's ``passes``."""
    return CampaignSettings(out=out, target="fake", jobs=1, passes=passes, fixed_passes=True,
                            seconds=LONG, live=False,
                            policy=FindingPolicy(localize=False, reduce_seconds=0), **extra)


def bounded(call: Callable[[], Any]) -> Any:
    """``call()`` in a thread, failing the test if it has not returned after HANG_GUARD s;
    returns its result or raises what it raised."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    assert not thread.is_alive(), "the campaign did not stop"
    if "error" in box:
        raise box["error"]
    return box["result"]


def campaign_json(out: Path) -> dict[str, Any]:
    """The parsed campaign.json of ``out``, checked to load as a campaign."""
    assert CampaignStats.load(out) is not None
    return json.loads((out / "campaign.json").read_text())


def hidden_leftovers(out: Path) -> list[str]:
    """Temporary files and folders of atomic writes left in ``out`` (and its bundles)."""
    names = [p.name for p in out.iterdir()] + [p.name for p in out.glob("*/.*")]
    return [n for n in names if n.startswith(".") and n not in (".lock", ".campaign.lock")]


# --- settings on resume -------------------------------------------------------------------


def test_resume_with_other_settings_is_refused_and_runs_no_case(chain_file, tmp_path):
    out = tmp_path / "crashes"
    args = corpus_args(chain_file, out)
    assert optfuzz(*args, "--max-cases", "2").returncode == 0
    before = (out / "campaign.json").read_bytes()
    proc = optfuzz(*args[:-4], "--seed", "3", "--passes", "clean", "--quiet", "--jobs", "1",
                   "--resume")
    assert_one_line_error(proc)
    assert "other settings" in proc.stderr
    assert "seed 0 -> 3" in proc.stderr and "passes [clean, bloat] -> [clean]" in proc.stderr
    assert (out / "campaign.json").read_bytes() == before  # not even the counters moved


def test_allow_change_lets_an_operational_setting_change(chain_file, tmp_path):
    out = tmp_path / "crashes"
    args = corpus_args(chain_file, out)
    assert optfuzz(*args, "--max-cases", "2").returncode == 0
    refused = optfuzz(*args, "--timeout", "7", "--resume")
    assert_one_line_error(refused)
    assert "timeout 30 -> 7" in refused.stderr and "--allow-change timeout" in refused.stderr
    proc = optfuzz(*args, "--timeout", "7", "--resume", "--allow-change", "timeout")
    assert proc.returncode == 0, proc.stderr[-2000:]
    saved = campaign_json(out)
    assert saved["settings"]["timeout"] == 7 and saved["cases"] == 3


def test_identity_settings_cannot_be_allowed_to_change(chain_file, tmp_path):
    proc = optfuzz(*corpus_args(chain_file, tmp_path / "crashes"), "--resume",
                   "--allow-change", "seed")
    assert_one_line_error(proc)
    assert "--allow-change seed" in proc.stderr


def test_a_first_wave_campaign_json_is_resumed_and_its_settings_recorded(chain_file,
                                                                         tmp_path):
    out = tmp_path / "crashes"
    args = corpus_args(chain_file, out)
    assert optfuzz(*args, "--max-cases", "2").returncode == 0
    old = campaign_json(out)
    del old["settings"]
    (out / "campaign.json").write_text(json.dumps(old))
    other_seed = optfuzz(*args, "--seed", "5", "--resume")  # the seed was always recorded
    assert_one_line_error(other_seed)
    assert "seed 0 -> 5" in other_seed.stderr
    assert optfuzz(*args, "--resume").returncode == 0
    saved = campaign_json(out)
    assert saved["cases"] == 3 and saved["settings"]["passes"] == ["clean", "bloat"]
    assert saved["settings"]["tolerances"]["float32"] == [1e-3, 1e-4]


def test_resume_needs_a_campaign_json_unless_the_folder_is_empty(chain_file, tmp_path):
    from fuzzer.corpus import iter_models

    models = list(iter_models(["dir"], [str(chain_file.parent)]))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds no campaign.json to resume"):
        run_campaign(generated(busy, ["clean"], generated=False, corpus=models, resume=True),
                     Console(quiet=True))
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    stats = run_campaign(generated(empty, ["clean"], generated=False, corpus=models,
                                   resume=True), Console(quiet=True))
    assert stats.cases == 1 and campaign_json(empty)["settings"]["corpus"] == []


def test_a_resumed_campaign_goes_on_with_the_backoff_of_its_failed_root_causes(monkeypatch,
                                                                               tmp_path):
    """campaign.json keeps the root-cause keys whose handling failed, with their backoff
    (RootCauseMemo.failures), and a resumed run goes on with it: each finding of the key
    counts on from where the last run stopped, and the determinism runs are only those due
    at the occurrences that are powers of two (a fresh memo would handle the first finding
    of the run in full and start counting again)."""
    import fuzzer.handling.outcome as outcome
    import fuzzer.handling.record as record

    runs: list[int] = []
    monkeypatch.setattr(record, "deterministic", lambda *args: runs.append(1) and False)
    monkeypatch.setattr(outcome, "RETRY_SECONDS", 0.0)  # the count alone decides here
    out = tmp_path / "crashes"
    since = []
    for resume in (False, True):
        before = len(runs)
        settings = generated(out, ["raise"], max_cases=6, resume=resume)
        stats = bounded(lambda s=settings: run_campaign(s, Console(quiet=True)))
        assert stats.dropped["nondeterministic"] == 6 * (1 + resume)
        (entry,) = campaign_json(out)["failed_keys"].values()
        assert entry["status"] == "nondeterministic"
        since.append(entry["since"])
    assert since[1] == since[0] + 6  # every finding of the second run counted on
    due = [n for n in range(since[0] + 1, since[1] + 1) if n & (n - 1) == 0]
    assert len(runs) - before <= len(due)


def test_first_wave_signatures_are_counted_for_localized_findings_only(tmp_path):
    """campaign.json's first-wave signatures (how many buckets that key would have made)
    count localized findings only; without localization no hit pays for the WL hash."""
    localized = dataclasses.replace(generated(tmp_path / "on", ["raise"], max_cases=3),
                                    policy=FindingPolicy(reduce_seconds=0))
    counted = bounded(lambda: run_campaign(localized, Console(quiet=True)))
    assert counted.bundles_new + counted.hits == 3 and counted.signatures
    plain = bounded(lambda: run_campaign(generated(tmp_path / "off", ["raise"], max_cases=3),
                                         Console(quiet=True)))
    assert plain.bundles_new + plain.hits == 3 and not plain.signatures


# --- a campaign that cannot go on ---------------------------------------------------------


def test_a_dying_finding_thread_stops_the_campaign(monkeypatch, tmp_path):
    def broken(self: BundleStore) -> None:
        raise RuntimeError("injected failure")

    monkeypatch.setattr(BundleStore, "flush_hits", broken)
    monkeypatch.setattr(finding_thread, "FLUSH_SECONDS", 1.0)  # the first flush comes soon
    out = tmp_path / "crashes"
    with pytest.raises(CampaignError, match=r"finding thread died \(RuntimeError: injected"):
        bounded(lambda: run_campaign(generated(out, ["clean"]), Console(quiet=True)))
    assert campaign_json(out)["settings"]["passes"] == ["clean"]
    assert not (out / ".campaign.lock").exists()


def test_put_does_not_block_on_a_full_queue_once_the_thread_died(monkeypatch, tmp_path):
    from fuzzer.campaign.finding_thread import QUEUE_SIZE, FindingWorker

    die = threading.Event()

    def loop(self: FindingWorker) -> None:
        die.wait(HANG_GUARD)
        raise RuntimeError("injected failure")

    monkeypatch.setattr(FindingWorker, "_screen_loop", loop)
    worker = FindingWorker(BundleStore(tmp_path), lambda: None, "1.0", FindingPolicy(),
                           lambda *args: None)
    for _ in range(QUEUE_SIZE):
        worker.put(None, None)
    die.set()
    with pytest.raises(CampaignError, match="finding thread died"):
        bounded(lambda: worker.put(None, None))
    worker.finish(grace=1.0)
    assert worker.abandoned == QUEUE_SIZE


def test_the_cli_exits_non_zero_with_one_line_when_the_finding_thread_dies(monkeypatch,
                                                                          tmp_path):
    def broken(self: BundleStore) -> None:
        raise RuntimeError("injected failure")

    monkeypatch.setattr(BundleStore, "flush_hits", broken)
    monkeypatch.setattr(finding_thread, "FLUSH_SECONDS", 1.0)  # the first flush comes soon
    out = tmp_path / "crashes"
    result = bounded(lambda: CliRunner().invoke(app, [
        "fuzz", "--target", "fake", "--source", "generated", "--passes", "clean",
        "--seconds", str(LONG), "--jobs", "1", "--quiet", "--out", str(out)]))
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: the finding thread died")
    assert "Traceback" not in result.output
    campaign_json(out)


@pytest.mark.parametrize("how", ["scheduling raises", "futures never resolve"])
def test_a_dead_worker_pool_stops_the_campaign(monkeypatch, tmp_path, how):
    real = ProcessPool.schedule
    calls = {"n": 0}

    def failing(self: ProcessPool, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= 20:
            return real(self, *args, **kwargs)
        self._context.status = PoolStatus.ERROR  # what pebble does when its manager dies
        return real(self, *args, **kwargs) if how == "scheduling raises" else ProcessFuture()

    monkeypatch.setattr(ProcessPool, "schedule", failing)
    out = tmp_path / "crashes"
    with pytest.raises(CampaignError, match="worker pool"):
        bounded(lambda: run_campaign(generated(out, ["clean"]), Console(quiet=True)))
    saved = campaign_json(out)
    # cases the broken pool lost are counted as unusable (run once more, then given up);
    # the 20 tasks scheduled before it broke held up to BATCH cases each
    assert 0 < saved["usable"] <= 20 * BATCH and saved["next_case"] >= saved["cases"]


def test_a_full_disk_while_writing_a_bundle_stops_cleanly(monkeypatch, tmp_path):
    out = tmp_path / "crashes"
    real = Path.write_bytes

    def full_disk(self: Path, data: bytes) -> int:
        if self.parent.parent == out and self.parent.name.startswith("."):
            real(self, data[:16])  # a partly written file in the temporary bundle folder
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(CampaignError) as failure:
        bounded(lambda: run_campaign(generated(out, ["bloat"]), Console(quiet=True)))
    message = str(failure.value)
    assert message.startswith(f"disk full writing {out}/bloat-")
    assert message.endswith("resume with --resume after freeing space")
    assert hidden_leftovers(out) == [] and BundleStore(out).ids() == []
    cases = campaign_json(out)["cases"]
    monkeypatch.setattr(Path, "write_bytes", real)  # space freed: the campaign goes on
    resumed = generated(out, ["bloat"], resume=True)
    resumed.seconds, resumed.max_cases = None, 3
    stats = run_campaign(resumed, Console(quiet=True))
    assert stats.cases == cases + 3 and BundleStore(out).ids()


def test_a_full_disk_while_writing_campaign_json_exits_with_one_line(monkeypatch, tmp_path):
    out = tmp_path / "crashes"
    real = os.fdopen
    saves = {"n": 0}

    class FullFile:
        """A temporary file on a full disk: every write fails."""

        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self) -> FullFile:
            return self

        def __exit__(self, *exc: Any) -> None:
            self.handle.close()

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        handle = real(fd, *args, **kwargs)
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".campaign.json."):
            saves["n"] += 1
            if saves["n"] > 1:  # the first save (the settings) fits, later ones do not
                return FullFile(handle)
        return handle

    monkeypatch.setattr(os, "fdopen", fdopen)
    result = bounded(lambda: CliRunner().invoke(app, [
        "fuzz", "--target", "fake", "--source", "generated", "--passes", "clean",
        "--max-cases", "3", "--jobs", "1", "--quiet", "--out", str(out)]))
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors == [f"error: disk full writing {out}/campaign.json; the folder is "
                      "consistent, resume with --resume after freeing space"]
    assert "Traceback" not in result.output
    monkeypatch.setattr(os, "fdopen", real)
    assert hidden_leftovers(out) == []
    assert campaign_json(out)["cases"] == 0  # the last campaign.json that could be written


def test_a_finding_whose_model_cannot_be_rebuilt_is_named_not_dropped(monkeypatch, tmp_path):
    """A segfault whose model could not be rebuilt for its bundle (every worker that tried
    died) was counted as a finding and then vanished; it is listed as a finding not
    recorded, with its reason, in campaign.log."""
    import fuzzer.execution.sandbox as sandbox_module
    from tests.test_sandbox_call import _dies_while_marked

    mark = tmp_path / "dies"
    mark.write_text("99")
    monkeypatch.setenv("OPTFUZZ_TEST_DIES", str(mark))
    monkeypatch.setattr(sandbox_module, "_materialize_elsewhere", _dies_while_marked)
    out = tmp_path / "crashes"
    stats = bounded(lambda: run_campaign(generated(out, ["segv"], max_cases=1),
                                         Console(quiet=True)))
    assert stats.findings["optimizer-abort"] == 1 and stats.bundles_new + stats.hits == 0
    log = (out / "campaign.log").read_text()
    assert "finding not recorded: optimizer-abort: worker killed by SIGSEGV" in log
    assert "could not be rebuilt (its worker died" in log
