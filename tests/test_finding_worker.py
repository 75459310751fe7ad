"""The finding thread records every finding, even past its queue bounds (backpressure), and
hits keep queueing while it verifies a slow new finding."""

from __future__ import annotations

import json
import threading
import time

import pytest

from fuzzer.campaign import finding_thread
from fuzzer.campaign.finding_thread import FindingWorker
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import FindingPolicy
from fuzzer.store.folder import BundleStore
from tests.conftest import unary_chain_model


@pytest.mark.parametrize("bound", ["QUEUE_SIZE", "QUEUE_BYTES"])
def test_every_finding_is_recorded_once_as_a_bundle_or_a_hit(sandbox, tmp_path, monkeypatch,
                                                             bound):
    """Past either bound (8 findings, or 1 byte: one finding at a time)."""
    monkeypatch.setattr(finding_thread, bound, 8 if bound == "QUEUE_SIZE" else 1)
    case = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    result = sandbox.run(case)
    assert result.findings
    seen: list[tuple[str | None, bool]] = []
    worker = FindingWorker(BundleStore(tmp_path), lambda: Sandbox(1, timeout=5.0), "1.0",
                           FindingPolicy(localize=True, reduce_seconds=0),
                           lambda handled, message: seen.append(
                               (handled.bundle_id, handled.status == "new")))
    total = 8 + 6
    for _ in range(total):
        worker.put(case, result)
    worker.finish(grace=60.0)
    assert len(seen) == total and worker.errors == []
    assert sum(created for _, created in seen) == 1
    (bid,) = {b for b, _ in seen}
    assert json.loads((tmp_path / bid / "meta.json").read_text())["hits"] == total


def test_a_hang_that_does_not_recur_is_not_recorded(sandbox, tmp_path):
    from fuzzer.handling.record import handle_finding
    from oracles.base import Finding

    case = TestCase("fake", {"passes": ["clean"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    result = sandbox.run(case)
    result.findings = [Finding("hang", "optimize", "no result after 3 s in stage optimize")]
    result.artifacts = sandbox.run(TestCase(**dict(case.__dict__, keep=True))).artifacts
    store = BundleStore(tmp_path)
    handled = handle_finding(store, sandbox, case, result, "1.0", FindingPolicy())
    assert handled.status == "unconfirmed" and handled.bundle_id is None
    assert store.ids() == []
    hang = TestCase("fake", {"passes": ["hang"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    real = sandbox.run(hang)
    handled = handle_finding(store, sandbox, hang, real, "1.0", FindingPolicy(reduce_seconds=0))
    assert handled.status == "new" and handled.bundle_id.startswith("hang-")


def test_hits_keep_queueing_while_a_new_finding_is_verified(sandbox, tmp_path, monkeypatch):
    """The first finding's handling waits until 200 more are queued (the queue once held 64:
    the case loop then stalled for the whole verification of a hang)."""
    case = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    result = sandbox.run(case)
    queued = threading.Event()
    real = finding_thread.screen

    def slow_first(*args, **kwargs):
        queued.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(finding_thread, "screen", slow_first)
    seen: list[str] = []
    worker = FindingWorker(BundleStore(tmp_path), lambda: Sandbox(1, timeout=5.0), "1.0",
                           FindingPolicy(localize=False, reduce_seconds=0),
                           lambda handled, message: seen.append(handled.status))
    assert result.artifacts is not None and result.artifacts.nbytes > 0
    for _ in range(201):
        worker.put(case, result)  # would block at the 65th while the first waits
    assert seen == [] and worker.pending() >= 200
    queued.set()
    worker.finish(grace=60.0)
    assert len(seen) == 201 and seen.count("new") == 1


def test_hits_are_counted_while_a_new_root_cause_is_recorded(sandbox, tmp_path, monkeypatch):
    """While the recording thread is held on a new root cause (raise), hits on a known one
    (drop-node) are counted at once, and later findings of the held root cause wait for it
    and end as hits on its bundle: one recording for all of them."""
    model = unary_chain_model().SerializeToString()
    known = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"}, model_bytes=model)
    new = TestCase("fake", {"passes": ["raise"]}, {"kind": "bytes"}, model_bytes=model)
    known_result, new_result = sandbox.run(known), sandbox.run(new)
    assert known_result.findings and new_result.findings
    seen: list[tuple[str, str | None]] = []
    got = threading.Condition()

    def report(handled, message):
        with got:
            seen.append((handled.status, handled.bundle_id))
            got.notify_all()

    worker = FindingWorker(BundleStore(tmp_path), lambda: Sandbox(1, timeout=5.0), "1.0",
                           FindingPolicy(localize=True, reduce_seconds=0), report)
    worker.put(known, known_result)
    with got:
        assert got.wait_for(lambda: len(seen) == 1, timeout=120)
    assert seen[0][0] == "new"
    held, recordings = threading.Event(), []
    real = finding_thread.record_new

    def held_record(*args, **kwargs):
        recordings.append(args[2].prelim)
        held.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(finding_thread, "record_new", held_record)
    for _ in range(5):
        worker.put(new, new_result)
    for _ in range(10):
        worker.put(known, known_result)
    with got:
        assert got.wait_for(lambda: len(seen) == 11, timeout=120)
    assert seen[1:] == [("hit", seen[0][1])] * 10 and len(recordings) == 1
    held.set()
    worker.finish(grace=60.0)
    assert worker.errors == [] and len(recordings) == 1
    statuses = [status for status, _ in seen[11:]]
    assert statuses == ["new"] + ["hit"] * 4
    (other,) = {bid for _, bid in seen[11:]}
    assert json.loads((tmp_path / other / "meta.json").read_text())["hits"] == 5


def test_a_new_root_cause_is_recorded_while_a_hang_is_handled(sandbox, tmp_path, monkeypatch):
    """A hang (whose screening alone runs it again, each time up to its timeout) is handled
    by a thread of its own: while its handling is held, a new root cause found after it
    becomes a bundle (one thread handled both, and a hang at hand held every new root cause
    behind it for minutes)."""
    from fuzzer.handling.outcome import Handled
    from oracles.base import Finding

    model = unary_chain_model().SerializeToString()
    case = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"}, model_bytes=model)
    result = sandbox.run(case)
    hang_result = sandbox.run(case)
    hang_result.findings = [Finding("hang", "optimize", "no result after 3 s in stage optimize")]
    at_hand, held = threading.Event(), threading.Event()

    def held_hang(store, sandbox, case, result, *args, **kwargs):
        at_hand.set()
        held.wait(120)
        return Handled("unconfirmed", name="not seen again")

    monkeypatch.setattr(finding_thread, "handle_finding", held_hang)
    seen: list[str] = []
    got = threading.Condition()

    def report(handled, message):
        with got:
            seen.append(handled.status)
            got.notify_all()

    worker = FindingWorker(BundleStore(tmp_path), lambda: Sandbox(1, timeout=5.0), "1.0",
                           FindingPolicy(localize=False, reduce_seconds=0), report)
    worker.put(case, hang_result)
    assert at_hand.wait(120)
    worker.put(case, result)
    with got:
        recorded = got.wait_for(lambda: seen == ["new"], timeout=120)
    held.set()
    worker.finish(grace=60.0)
    assert recorded and seen == ["new", "unconfirmed"] and worker.errors == []
    assert len(BundleStore(tmp_path).ids()) == 1


def test_hangs_past_the_slow_threads_share_are_kept_pending(sandbox, tmp_path, monkeypatch):
    """With a share of 0, the first hang is handled and the next, which comes once the slow
    thread has spent time, is kept in pending/ unhandled."""
    from fuzzer.handling.outcome import Handled
    from fuzzer.store.pending import PendingStore
    from oracles.base import Finding

    case = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    hang_result = sandbox.run(case)
    hang_result.findings = [Finding("hang", "optimize", "no result after 3 s in stage optimize")]
    handled: list[int] = []

    def slow_hang(*args, **kwargs):
        handled.append(1)
        time.sleep(0.2)
        return Handled("unconfirmed", name="not seen again")

    monkeypatch.setattr(finding_thread, "handle_finding", slow_hang)
    monkeypatch.setattr(finding_thread, "SLOW_SHARE", 0.0)
    seen: list[str] = []
    worker = FindingWorker(BundleStore(tmp_path), lambda: Sandbox(1, timeout=5.0), "1.0",
                           FindingPolicy(localize=False, reduce_seconds=0),
                           lambda outcome, message: seen.append(outcome.status))
    worker.put(case, hang_result)
    worker.put(case, hang_result)
    worker.finish(grace=60.0)
    assert handled == [1] and seen == ["unconfirmed", "pending"] and worker.errors == []
    assert PendingStore(tmp_path).count() == 1


def patient_reduction(monkeypatch) -> tuple[threading.Event, list[float]]:
    """Make every reduction wait out its budget (at most 120 s, its guard) before it runs:
    ``(started, left at the end)``, the event set once one waits, the seconds its budget
    had left when it stopped waiting (negative: expired, by its deadline or a cutoff)."""
    from fuzzer.reduce import reducer

    started, left_at_end = threading.Event(), []
    real = reducer.reduce_model

    def patient(model, feeds, predicate, *args, **kwargs):
        started.set()
        guard = time.monotonic() + 120.0  # a reduction the cutoff does not end stops here
        while predicate.budget.left() > 0 and time.monotonic() < guard:
            time.sleep(0.05)
        left_at_end.append(predicate.budget.left())
        return real(model, feeds, predicate, *args, **kwargs)  # out of time: keeps the model

    monkeypatch.setattr(reducer, "reduce_model", patient)
    return started, left_at_end


def dropping_case(sandbox: Sandbox) -> tuple[TestCase, object]:
    """A case of the fake target's drop-node pass and its run (an output-count finding)."""
    case = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    return case, sandbox.run(case)


def test_the_reduction_at_hand_stops_when_the_grace_period_ends(sandbox, tmp_path,
                                                                monkeypatch):
    """A finding whose reduction has an hour left when the campaign ends stops once
    finish's grace period is over: the reduction's budget expires at that moment (it used
    to run on for its whole budget, and the campaign ended minutes past its time), and the
    finding, not reduced in time, is kept pending instead of becoming a bundle."""
    from fuzzer.store.pending import PendingStore

    case, result = dropping_case(sandbox)
    started, left_at_end = patient_reduction(monkeypatch)
    seen: list[str] = []
    policy = FindingPolicy(localize=False, reduce_seconds=3600.0, probe_seconds=0)
    worker = FindingWorker(BundleStore(tmp_path), lambda: Sandbox(1, timeout=5.0), "1.0",
                           policy, lambda handled, message: seen.append(handled.status))
    worker.put(case, result)
    assert started.wait(120.0)
    worker.finish(grace=0.5)
    assert seen == ["pending"] and worker.errors == []
    assert policy.cutoff.left() == float("inf")  # the caller's policy, reused by a resumed
    # run, is never cut
    assert left_at_end and left_at_end[0] <= 0  # expired by the cutoff, not the guard
    assert BundleStore(tmp_path).ids() == [] and PendingStore(tmp_path).count() == 1


def test_a_cluster_handlers_reduction_at_hand_stops_when_it_is_cut(sandbox, monkeypatch):
    """The Ray path's FindingHandler (run in this process here): a batch whose reduction
    has an hour left ends when the driver's finish calls ``cut``, its finding sent back
    pending (no bundle: the driver keeps it in pending/)."""
    from fuzzer.cluster.actors import FindingHandler

    case, result = dropping_case(sandbox)
    started, left_at_end = patient_reduction(monkeypatch)
    policy = FindingPolicy(localize=False, reduce_seconds=3600.0, probe_seconds=0)
    handler = FindingHandler("1.0", policy, 5.0, None)
    outcomes: list = []
    thread = threading.Thread(target=lambda: outcomes.extend(handler.handle([(case, result)],
                                                                            {})))
    thread.start()
    try:
        assert started.wait(120.0)
        handler.cut(0.5)
        thread.join(150.0)
        ((handled, ops, error),) = outcomes
        assert error == "" and handled.status == "pending" and handled.prelim
        assert not any(op.kind == "create" for op in ops)
        assert left_at_end and left_at_end[0] <= 0  # expired by the cut, not the guard
        assert policy.cutoff.left() == float("inf")  # the driver's policy is never cut
    finally:
        thread.join(150.0)
        handler.close()


def test_a_bundle_whose_reduction_ran_to_its_end_says_it_is_minimal(sandbox, tmp_path):
    """A reduction that ran to its end, whether it found a smaller model or the found one
    is already as small as its edits get (one node), marks the bundle's ``nodes.minimal``
    (triage then never calls it unreduced); a bundle written without reduction is not."""
    from fuzzer.handling.record import handle_finding

    for ops, seconds, minimal in ((("Neg",), 60.0, True), (("Neg", "Exp", "Sin"), 60.0, True),
                                  (("Neg", "Exp", "Sin"), 0.0, False)):
        case = TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"},
                        model_bytes=unary_chain_model(ops).SerializeToString())
        store = BundleStore(tmp_path / f"{len(ops)}-{seconds}")
        handled = handle_finding(store, sandbox, case, sandbox.run(case), "1.0",
                                 FindingPolicy(verify=False, reduce_seconds=seconds))
        meta = store.meta(handled.bundle_id)
        assert meta.nodes.minimal == minimal, (ops, seconds)
        assert meta.nodes.minimized == (1 if seconds else len(ops))


@pytest.mark.parametrize(("repro_runs", "written"), [
    ([False, True, True], True),   # one disturbed run of three
    ([False, True, False], False),  # most runs did not reproduce
    ([True, True], True),           # two agreeing runs decide, no third
])
def test_a_hang_bundle_is_verified_by_the_majority_of_its_repro_runs(
        sandbox, tmp_path, monkeypatch, repro_runs, written):
    """A timing symptom's repro.py verdict is the majority of three runs (the campaign
    dropped a real slow finding whose one repro.py run fell on a loaded moment)."""
    from fuzzer.handling import record
    from fuzzer.handling.record import handle_finding

    verdicts = list(repro_runs)
    monkeypatch.setattr(record, "reproduces",
                        lambda *args, **kwargs: (verdicts.pop(0), "tail"))
    hang = TestCase("fake", {"passes": ["hang"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())
    store = BundleStore(tmp_path)
    handled = handle_finding(store, sandbox, hang, sandbox.run(hang), "1.0",
                             FindingPolicy(reduce_seconds=0))
    assert verdicts == []  # every scripted run was used, and no more
    assert (handled.status == "new") == written, handled
    assert len(store.ids()) == int(written)


def test_a_hang_that_recurs_in_two_of_three_runs_is_confirmed(monkeypatch):
    """The found run, then a run that did not show it, then one that did."""
    from fuzzer.handling.determinism import confirmed
    from oracles.base import Finding, by_majority

    class Runs:
        timeout = 30.0

        def __init__(self, shows: list[bool]) -> None:
            self.shows, self.calls = list(shows), 0

        def run(self, case):
            assert case.timeout is None  # every rerun has the whole timeout
            self.calls += 1
            found = [Finding("hang", "optimize", "no result after 30 s",
                             {"timeout_s": 30.0})] if self.shows.pop(0) else []
            return type("Result", (), {"findings": found})()

    case = TestCase("fake", {}, {"kind": "generated", "seed": 0})
    finding = Finding("hang", "optimize", "no result after 30 s", {"timeout_s": 30.0})
    for shows, verdict in (([False, True], True), ([False, False], False), ([True], True)):
        box = Runs(shows)
        assert (confirmed(box, case, finding) is finding) is verdict
        assert box.calls == len(shows)
    # found within a calibrated limit: the found run does not vote, and the confirmed
    # finding is a rerun's
    candidate = Finding("hang", "optimize", "no result after 5 s", {"timeout_s": 5.0})
    limited = TestCase("fake", {}, {"kind": "generated", "seed": 0}, timeout=5.0)
    for shows, verdict in (([True, True], True), ([False, True, True], True),
                           ([True, False, False], False), ([False, False], False)):
        box = Runs(shows)
        again = confirmed(box, limited, candidate)
        assert (again is not None) is verdict and box.calls == len(shows)
        assert again is None or again.detail["timeout_s"] == 30.0
    assert by_majority(False, iter([True, False]).__next__) is False
    assert by_majority(True, iter([False, True, True]).__next__, votes=5) is True
