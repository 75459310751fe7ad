"""A campaign's finish keeps its word: past the grace period a finding of a new fault is kept
in ``pending/`` instead of becoming an unreduced bundle, and ``optfuzz triage --pending`` (or
``--resume``) later turns it into the reduced, verified bundle the campaign would have made.
Ground truth is the fake target's planted faults: ``raise`` (optimizer-error) and
``drop-node`` (output-mismatch), one bundle each. No test asserts on time."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from fuzzer.campaign import finding_thread
from fuzzer.campaign.finding_thread import FindingWorker
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import FindingPolicy, Handled
from fuzzer.handling.pending import PendingKeeper
from fuzzer.store.folder import BundleStore
from fuzzer.store.pending import FINDING_FILE, PendingStore, finish_command
from tests.conftest import unary_chain_model
from tests.test_campaign_integrity import HANG_GUARD, bounded, campaign_json, generated
from tests.test_triage_status import optfuzz

FAULTS = {"raise": "optimizer-error", "drop-node": "output-mismatch"}
SIGHTINGS = 3  # findings queued per planted fault
CHAIN = ("Neg", "Exp", "Sin", "Cos")  # no op is ~identity: drop-node changes the outputs


def planted(sandbox: Sandbox) -> list[tuple[TestCase, object]]:
    """One case and its run per planted fault, on a four-node chain."""
    model = unary_chain_model(CHAIN).SerializeToString()
    runs = []
    for passes, symptom in FAULTS.items():
        case = TestCase("fake", {"passes": [passes]}, {"kind": "bytes"}, model_bytes=model)
        result = sandbox.run(case)
        assert [f.symptom for f in result.findings][:1] == [symptom]
        runs.append((case, result))
    return runs


def screen_after_the_cutoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every screening wait until the finish's cutoff has passed, so that no finding is
    recorded before the campaign ends (whatever the machine's speed)."""
    real = finding_thread.screen

    def late(store, sandbox, case, result, policy, *rest):
        guard = time.monotonic() + HANG_GUARD
        while policy.cutoff.left() > 0 and time.monotonic() < guard:
            time.sleep(0.01)
        return real(store, sandbox, case, result, policy, *rest)

    monkeypatch.setattr(finding_thread, "screen", late)


def finish_at_once(folder: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,
                   seen: list[Handled] | None = None) -> FindingWorker:
    """Queue :data:`SIGHTINGS` findings of each planted fault, then finish with a grace
    period of 0 (with the reduction a campaign has, 120 s)."""
    screen_after_the_cutoff(monkeypatch)
    outcomes = seen if seen is not None else []
    worker = FindingWorker(BundleStore(folder), lambda: Sandbox(1, timeout=5.0), "1.0",
                           FindingPolicy(), lambda handled, message: outcomes.append(handled))
    for case, result in planted(sandbox) * SIGHTINGS:
        worker.put(case, result)
    bounded(lambda: worker.finish(grace=0.0))  # returns; its bound is not asserted
    return worker


def test_a_finish_with_no_grace_keeps_new_faults_pending_and_writes_no_bundle(
        sandbox, tmp_path, monkeypatch):
    seen: list[Handled] = []
    worker = finish_at_once(tmp_path, sandbox, monkeypatch, seen)
    assert worker.errors == [] and worker.abandoned == 0
    assert BundleStore(tmp_path).ids() == []  # no bundle without reduction
    kept = PendingStore(tmp_path)
    assert kept.count() > 0
    findings = [kept.read(pending_id) for pending_id in kept.ids()]
    # no finding lost: each is a pending finding or waits for one of its key
    assert sum(1 + len(p.waiting) for p in findings) == len(FAULTS) * SIGHTINGS
    keys = [p.prelim for p in findings if p.prelim is not None]
    assert len(keys) == len(set(keys))  # one pending finding per preliminary key
    assert {p.finding.symptom for p in findings} == set(FAULTS.values())
    assert all(p.result.artifacts is not None and p.found for p in findings)
    assert {h.status for h in seen} == {"pending"}


def test_triage_pending_turns_them_into_one_reduced_verified_bundle_per_fault(
        sandbox, tmp_path, monkeypatch):
    finish_at_once(tmp_path, sandbox, monkeypatch)
    proc = optfuzz("triage", str(tmp_path), "--pending", "--timeout", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert PendingStore(tmp_path).count() == 0
    metas = [json.loads(p.read_text()) for p in tmp_path.glob("*/meta.json")]
    assert sorted(m["symptom"] for m in metas) == sorted(FAULTS.values())  # one per fault
    assert sorted(m["breaking_pass"] for m in metas) == sorted(FAULTS)
    for meta in metas:
        assert meta["verified"]["repro"] == "reproduces in a fresh process"
        assert meta["nodes"]["minimized"] < meta["nodes"]["original"] == len(CHAIN)
    assert sum(m["hits"] for m in metas) == len(FAULTS) * SIGHTINGS  # every sighting counted


def test_triage_pending_reduces_as_the_campaign_was_told(sandbox, tmp_path, monkeypatch):
    """A campaign of ``--reduce-seconds 0`` keys its findings unreduced; its pending ones are
    handled the same way unless ``--reduce-seconds`` says otherwise (a handling of its own
    would key the same fault on other models than the campaign's live findings)."""
    record = tmp_path / "record"  # a campaign record that says --reduce-seconds 0
    ran = optfuzz("fuzz", "--target", "fake", "--passes", "nop-1", "--source", "generated",
                  "--max-cases", "1", "--reduce-seconds", "0", "--out", str(record), "--quiet")
    assert ran.returncode == 0, ran.stderr
    folder = tmp_path / "crashes"
    folder.mkdir()
    (folder / "campaign.json").write_bytes((record / "campaign.json").read_bytes())
    finish_at_once(folder, sandbox, monkeypatch)
    proc = optfuzz("triage", str(folder), "--pending", "--timeout", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    metas = [json.loads(p.read_text()) for p in folder.glob("*/meta.json")]
    assert sorted(m["breaking_pass"] for m in metas) == sorted(FAULTS)
    assert all(m["nodes"]["minimized"] == m["nodes"]["original"] for m in metas), metas


def test_a_corrupt_pending_finding_is_skipped_with_one_line_and_kept(sandbox, tmp_path):
    keeper = PendingKeeper(tmp_path)
    kept = keeper.store
    (case, result), _ = planted(sandbox)
    for _ in range(2):  # no preliminary key: two pending findings
        assert keeper.keep(case, result, "2026-01-01T00:00:00Z", Handled("pending")) is None
    damaged, whole = kept.ids()
    finding_json = kept.path(damaged) / FINDING_FILE
    finding_json.write_bytes(finding_json.read_bytes()[:40])  # cut short
    before = {p.name: p.read_bytes() for p in kept.path(damaged).iterdir()}
    proc = optfuzz("triage", str(tmp_path), "--pending", "--timeout", "10")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one is left
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if damaged in line]
    assert len(lines) == 1 and "damaged" in lines[0], proc.stdout
    assert kept.ids() == [damaged]  # the whole one was finished, the damaged one kept
    assert {p.name: p.read_bytes() for p in kept.path(damaged).iterdir()} == before
    assert f"{whole}: new bundle" in proc.stdout
    assert [m.symptom for m in BundleStore(tmp_path).read_all()[0]] == ["optimizer-error"]


def test_pending_hangs_are_finished_after_the_other_findings(sandbox, tmp_path):
    """A hang waits behind a newer crash (its screening runs it again at the whole
    timeout); within each kind, oldest first."""
    from fuzzer.handling.pending import cheap_first
    from oracles.base import Finding

    keeper = PendingKeeper(tmp_path)
    (case, result), _ = planted(sandbox)
    hang = dataclasses.replace(result, findings=[
        Finding("hang", "optimize", "no result after 5 s in stage optimize",
                {"timeout_s": 5.0})])
    for found, run in (("2026-01-01T00:00:00Z", hang), ("2026-01-01T00:00:01Z", result),
                       ("2026-01-01T00:00:02Z", hang), ("2026-01-01T00:00:03Z", result)):
        assert keeper.keep(case, run, found, Handled("pending")) is None
    kept = keeper.store
    assert [kept.symptom(i) for i in kept.ids()] == ["hang", "optimizer-error"] * 2
    order = cheap_first(kept)
    assert [kept.symptom(i) for i in order] == ["optimizer-error"] * 2 + ["hang"] * 2
    assert order == sorted(order[:2]) + sorted(order[2:])  # oldest first within each


def test_a_folder_without_pending_findings_is_one_line_of_error(tmp_path):
    proc = optfuzz("triage", str(tmp_path), "--pending")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "pending/" in lines[0]
    assert "Traceback" not in proc.stderr


_KILLED_WRITE = """
import pathlib, sys, time
from fuzzer.handling.outcome import Handled
from fuzzer.execution.case import Artifacts, CaseResult, TestCase
from fuzzer.store.pending import PendingFinding, PendingStore
from oracles.base import Finding
from tests.conftest import unary_chain_model

folder, marker = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
real = pathlib.Path.write_bytes

def stall(self, data):
    written = real(self, data)
    if self.name == "model.onnx":  # one file of the folder written: the process is killed
        marker.write_text("written")
        time.sleep(600)
    return written

pathlib.Path.write_bytes = stall
model = unary_chain_model().SerializeToString()
result = CaseResult([Finding("optimizer-error", "optimize", "boom")], None, "optimize", {},
                    artifacts=Artifacts(model, None, {}))
PendingStore(folder).add(PendingFinding(TestCase("fake", {}, {}), result, "2026-01-01T00:00:00Z"))
"""


def test_a_killed_write_leaves_no_half_pending_finding(tmp_path):
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", _KILLED_WRITE, str(tmp_path),
                              str(marker)])
    try:
        guard = time.monotonic() + HANG_GUARD
        while not marker.exists() and child.poll() is None and time.monotonic() < guard:
            time.sleep(0.05)
        assert marker.exists(), "the writer never got to its first file"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    kept = PendingStore(tmp_path)
    assert kept.ids() == [] and kept.count() == 0  # its temporary folder is not one
    leftovers = list(kept.folder.iterdir())
    assert leftovers and all(p.name.startswith(".") for p in leftovers)


def test_a_full_disk_is_counted_not_a_crash(sandbox, tmp_path, monkeypatch):
    def full(self, pending):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(PendingStore, "add", full)
    worker = finish_at_once(tmp_path, sandbox, monkeypatch)
    assert worker.failure is None
    assert worker.abandoned == len(FAULTS) * SIGHTINGS
    assert worker.errors and all("No space left" in e for e in worker.errors)
    assert BundleStore(tmp_path).ids() == [] and PendingStore(tmp_path).count() == 0


def test_a_write_that_fails_half_way_leaves_nothing(sandbox, tmp_path, monkeypatch):
    (case, result), _ = planted(sandbox)
    real = Path.write_bytes

    def fail_second(self, data):
        if self.name != "model.onnx":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", fail_second)
    why_not = PendingKeeper(tmp_path).keep(case, result, "2026-01-01T00:00:00Z",
                                           Handled("pending"))
    assert why_not is not None and "No space left" in why_not
    assert list((tmp_path / "pending").iterdir()) == []  # nor a temporary folder


def test_the_summary_names_the_pending_findings_and_resume_finishes_them(tmp_path,
                                                                         monkeypatch):
    """A campaign whose end leaves pending findings says so (campaign.json, the closing
    table); ``--resume`` handles them first, in full."""
    from fuzzer.campaign import run
    from fuzzer.campaign.run import run_campaign

    monkeypatch.setattr(run, "FINISH_GRACE", 0.0)
    screen_after_the_cutoff(monkeypatch)
    out = tmp_path / "crashes"
    policy = FindingPolicy(localize=True, reduce_seconds=30.0)
    settings = dataclasses.replace(generated(out, ["raise"], max_cases=3), policy=policy)
    console = Console(record=True, width=200)
    bounded(lambda: run_campaign(settings, console))
    saved = campaign_json(out)
    left = PendingStore(out).count()
    assert left > 0 and BundleStore(out).ids() == []
    assert saved["pending"] == {"findings": left, "command": finish_command(out)}
    assert finish_command(out) in console.export_text()

    resumed = dataclasses.replace(settings, resume=True, max_cases=0)
    monkeypatch.undo()
    bounded(lambda: run_campaign(resumed, Console(quiet=True)))
    assert PendingStore(out).count() == 0
    (bundle,) = BundleStore(out).read_all()[0]
    assert bundle.symptom == "optimizer-error" and bundle.verified
    assert "pending" not in campaign_json(out)


class _Ref:
    """A stand-in for a Ray object ref: the call runs when the result is first asked for
    (``lazy``), as a remote call runs while the driver does other things, or at once."""

    def __init__(self, call, lazy: bool) -> None:
        self.call, self.ran, self.value = call, False, None
        if not lazy:
            self.result()

    def result(self):
        if not self.ran:
            self.value, self.ran = self.call(), True
        return self.value


class _Actor:
    """A stand-in for a Ray actor handle around ``obj``: ``handle`` runs lazily."""

    def __init__(self, obj) -> None:
        self.obj = obj

    def __getattr__(self, name):
        method = getattr(self.obj, name)
        return SimpleNamespace(remote=lambda *args: _Ref(lambda: method(*args),
                                                         lazy=name == "handle"))


_RAY = SimpleNamespace(wait=lambda refs, num_returns=1, timeout=None: (refs[:num_returns],
                                                                      refs[num_returns:]),
                       get=lambda ref: ref.result(),
                       exceptions=SimpleNamespace(RayError=RuntimeError))


def test_a_cluster_finish_keeps_new_faults_pending_too(sandbox, tmp_path):
    """The Ray path's finish (its driver, with a FindingHandler run in this process): past
    the grace period the handler sends a new fault back pending, and the driver keeps it in
    pending/, one per preliminary key, every finding settled."""
    from fuzzer.cluster.actors import FindingHandler
    from fuzzer.cluster.findings import ClusterFindings

    handler = FindingHandler("1.0", FindingPolicy(), 5.0, None)
    settled: list[object] = []
    try:
        findings = ClusterFindings(_RAY, [_Actor(handler)], BundleStore(tmp_path),
                                   lambda handled, message: None, settled.append)
        for number, (case, result) in enumerate(planted(sandbox) * SIGHTINGS):
            findings.put(case, result, number)
        bounded(lambda: findings.finish(grace=0.0))
    finally:
        handler.close()
    assert findings.errors == [] and findings.abandoned == 0 and findings.failure is None
    assert sorted(settled) == list(range(len(FAULTS) * SIGHTINGS))
    assert BundleStore(tmp_path).ids() == []
    kept = [findings.kept.store.read(i) for i in findings.kept.store.ids()]
    assert len(kept) == len(FAULTS)  # one per preliminary key, the others wait for it
    assert sum(1 + len(p.waiting) for p in kept) == len(FAULTS) * SIGHTINGS
