"""Finding handling beside the case loop: two threads that localize, sign, deduplicate,
reduce and store findings while the campaign keeps its workers busy with new cases.

* The **triage thread** takes every finding (:func:`fuzzer.campaign.record.triage`):
  documented behaviour, localization (mostly one confirming run of a remembered answer), the
  preliminary root-cause key, and a hit on the bundle that key knows. A finding of a root
  cause not known yet goes on to the recording thread, as does a whole finding whose triage
  itself is long (:func:`fuzzer.campaign.record.costly_triage`: a hang runs again up to its
  timeout, a slow run is timed at three sizes and scaled down).
* The **recording thread** does the costly part (:func:`fuzzer.campaign.record.record_new`:
  determinism, reduction, verification in a fresh process, the bundle). Findings that reach
  it with a preliminary key already on its way there wait for that one and end as it did (a
  hit on its bundle, or its outcome), so one new bug met 500 times during its reduction costs
  one reduction.

So a hit never waits behind a reduction or a slow finding's timings: in an hour-long soak
on onnxoptimizer a single thread handled hits at about 20 per second, but each new slow
finding took it minutes, during which the queue filled and the case loop stood still seven
times.

Findings wait in a queue bounded by the bytes of their artifacts (:data:`QUEUE_BYTES`) and by
their number (:data:`QUEUE_SIZE`): past either bound the case loop blocks (backpressure), so no
finding is ever dropped; the recording thread's queue holds at most :data:`RECORD_SIZE`, past
which the triage thread waits.

Each thread has a sandbox of its own (one worker), so its optimizer runs never queue behind
the campaign's cases or the other thread's. When the campaign ends, :meth:`finish` handles
what is left; past its grace period (or after Ctrl-C) the rest is recorded without reduction.

A failure in one finding is counted (:attr:`FindingWorker.errors`) and the thread goes on; a
failure that every later finding would meet too (a full disk, its own worker pool gone, an
error outside the handling of one finding) ends the threads. The case loop learns of it from
:meth:`FindingWorker.check` or :meth:`FindingWorker.put` (never blocked by a dead thread) and
stops the campaign.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from fuzzer.campaign.failure import as_campaign_error, is_disk_full, stopped
from fuzzer.campaign.record import (
    FindingPolicy,
    Handled,
    RootCauseMemo,
    Triaged,
    costly_triage,
    handle_finding,
    primary_finding,
    record_new,
    triage,
)
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import release_free_memory
from fuzzer.execution.sandbox import Sandbox
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.reduce.predicate import Cutoff
from fuzzer.report.refresh import flush_and_refresh
from fuzzer.store.folder import BundleStore

#: most findings queued at once.
QUEUE_SIZE = 1024
#: most bytes of artifacts (:attr:`fuzzer.execution.case.Artifacts.nbytes`) queued at once;
#: a finding larger than this waits until the queue is empty.
QUEUE_BYTES = 64 << 20
#: most findings waiting for the recording thread (each holds its artifacts).
RECORD_SIZE = 256
#: batched hits reach meta.json at least this often (seconds): each flush rewrites the
#: meta.json of every bundle hit since the last, as campaign.json is written every 10 s.
FLUSH_SECONDS = 10.0
#: a finding whose handling took this long (seconds: a localization, a reduction) is
#: followed by giving the C heap's free pages back; a hit, handled in a millisecond, is not.
TRIM_AFTER_SECONDS = 1.0
POLL_SECONDS = 0.5  # while a queue is full: how often to check that the threads still run
ABANDON_SECONDS = 5.0  # how long an abandoning finish waits for the finding at hand
QUICK_LOCALIZE_SECONDS = 10.0  # a localization's bound once the grace period is over

#: called with ``(Handled, message of the finding)`` after each finding.
Report = Callable[[Handled, str], None]


def policy_at_hand(policy: FindingPolicy, quick: bool = False) -> FindingPolicy:
    """The policy for the finding at hand: ``policy`` itself until its cutoff has passed,
    then (or at once with ``quick``) the same without reduction or trigger probes and with
    localizations bounded by :data:`QUICK_LOCALIZE_SECONDS` (it keeps the same cutoff)."""
    if not quick and policy.cutoff.left() > 0:
        return policy
    return dataclasses.replace(policy, reduce_seconds=0, probe_seconds=0,
                               localize_seconds=QUICK_LOCALIZE_SECONDS)


@dataclasses.dataclass
class _Lane:
    """One finding thread: its queue, its sandbox (made on its first finding) and its
    localization memory."""

    name: str
    queue: queue.Queue
    memo: LocalizationMemo
    sandbox: Sandbox | None = None
    thread: threading.Thread | None = None


class FindingWorker:
    """Two threads (triage and recording, see the module docstring) that record findings
    into ``store``.

    Args:
        store: the campaign's bundle store.
        sandbox_factory: makes a thread's sandbox on its first finding (called once per
            thread).
        version: the target's version for meta.json.
        policy: localization and reduction settings.
        report: called with ``(Handled, message)`` after each finding (from either thread).
        failures: the root-cause keys an earlier run failed on
            (:meth:`fuzzer.campaign.record.RootCauseMemo.failures`).

    Attributes:
        errors: one line per finding that could not be recorded (the threads went on).
        failure: the exception that ended a thread early, or None.
        abandoned: queued findings dropped by a failing campaign's :meth:`finish`.
        memo: the triage thread's localization memory.
        roots: the root-cause memory both threads share.
    """

    def __init__(self, store: BundleStore, sandbox_factory: Callable[[], Sandbox],
                 version: str, policy: FindingPolicy, report: Report,
                 failures: dict[str, Any] | None = None) -> None:
        self.store, self.version, self.report = store, version, report
        # a cutoff of its own: finish() cuts it, and the caller's policy (its settings,
        # which a resumed run may reuse) stays as it was
        self.policy = dataclasses.replace(policy, cutoff=Cutoff())
        self._factory = sandbox_factory
        # unbounded itself: put() holds both bounds under self._room
        self._triage = _Lane("findings", queue.Queue(), LocalizationMemo())
        self._record = _Lane("findings-record", queue.Queue(RECORD_SIZE), LocalizationMemo())
        self._queued_bytes = 0
        self._room = threading.Condition()
        self._keys = threading.Lock()
        #: preliminary key on its way to the recording thread -> (message, first-wave
        #: signature) of each later finding with that key, which ends as it does.
        self._waiting: dict[str, list[tuple[str, str]]] = {}
        self.memo = self._triage.memo
        self.roots = RootCauseMemo(failures)
        self.errors: list[str] = []
        self.failure: BaseException | None = None
        self.abandoned = 0
        self._finishing = self._abandoning = False
        for lane, loop in ((self._triage, self._triage_loop), (self._record, self._record_loop)):
            lane.thread = threading.Thread(target=self._run, args=(loop,), name=lane.name,
                                           daemon=True)
            lane.thread.start()

    def put(self, case: TestCase, result: CaseResult,
            waiting: Callable[[], None] | None = None) -> None:
        """Queue a result with findings; blocks while the queue is full (either bound) and
        the threads run, calling ``waiting()`` every :data:`POLL_SECONDS` meanwhile (it may
        raise, e.g. on Ctrl-C: :meth:`fuzzer.campaign.interrupt.StopRequest.check`).

        Raises:
            CampaignError: a thread has stopped (see :meth:`check`).
        """
        arts = getattr(result, "artifacts", None)
        weight = arts.nbytes if arts is not None else 0
        while True:
            self.check()
            if waiting is not None:
                waiting()
            with self._room:
                if self._has_room(weight):
                    self._triage.queue.put_nowait((case, result, weight))
                    self._queued_bytes += weight
                    return
                self._room.wait(POLL_SECONDS)

    def _has_room(self, weight: int) -> bool:
        """Whether a finding of ``weight`` bytes fits under both bounds (an empty queue
        takes any finding)."""
        return self._triage.queue.qsize() < QUEUE_SIZE and \
            (not self._queued_bytes or self._queued_bytes + weight <= QUEUE_BYTES)

    def _taken(self, weight: int) -> None:
        """A queued finding of ``weight`` bytes left the queue: wake a waiting :meth:`put`."""
        with self._room:
            self._queued_bytes -= weight
            self._room.notify_all()

    def check(self) -> None:
        """Raise if a thread stopped before :meth:`finish` asked it to.

        Raises:
            CampaignError: one line saying why (a full disk, or the exception that ended it).
        """
        if self.failure is not None:
            raise as_campaign_error(self.failure, "the finding thread", self.store.root)
        if not self._finishing and not all(lane.thread is not None and lane.thread.is_alive()
                                           for lane in (self._triage, self._record)):
            raise stopped("the finding thread stopped")

    def failures(self) -> dict[str, Any]:
        """The failed root-cause keys, for the next run
        (:meth:`fuzzer.campaign.record.RootCauseMemo.failures`)."""
        return self.roots.failures()

    def pending(self) -> int:
        """Findings waiting in the queues (those waiting for a finding of their key not
        counted)."""
        return self._triage.queue.qsize() + self._record.queue.qsize()

    def _run(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except BaseException as exc:  # the case loop reports it and stops the campaign
            if not self._abandoning:  # else: its sandbox was closed under it, on purpose
                self.failure = exc

    def _policy(self) -> FindingPolicy:
        """The policy of the finding at hand: quick (no reduction, localization cut short)
        once :meth:`finish`'s grace period is over (its cutoff has passed)."""
        return policy_at_hand(self.policy)

    def _triage_loop(self) -> None:
        last_flush = time.monotonic()
        while True:
            try:
                item = self._triage.queue.get(timeout=FLUSH_SECONDS)
            except queue.Empty:
                item = ()
            if time.monotonic() - last_flush >= FLUSH_SECONDS or item is None:
                flush_and_refresh(self.store)
                last_flush = time.monotonic()
            if item is None:
                self._forward(None)
                return
            if not item:
                continue
            case, result, weight = item
            self._taken(weight)
            finding = primary_finding(result)
            if finding is not None and costly_triage(finding):
                self._forward(("whole", case, result))
                continue
            outcome = self._handle(self._triage, triage, self.store, case, result)
            if isinstance(outcome, Triaged):
                self._send_on(outcome)
            elif outcome is not None and finding is not None:
                self.report(outcome, finding.message)

    def _send_on(self, triaged: Triaged) -> None:
        """Send ``triaged`` to the recording thread, or, where a finding with its key is
        already on its way there, let it wait for that one."""
        with self._keys:
            waiting = self._waiting.get(triaged.prelim)
            if waiting is not None:
                waiting.append((triaged.finding.message, triaged.first_wave))
                return
            self._waiting[triaged.prelim] = []
        self._forward(("triaged", triaged))

    def _forward(self, item: tuple | None) -> None:
        """Put ``item`` on the recording thread's queue; waits while it is full and the
        recording thread runs (an abandoning finish drops it)."""
        while True:
            thread = self._record.thread
            if self._abandoning or thread is None or not thread.is_alive():
                if item is not None:
                    self._dropped(self._record, item)
                return
            try:
                self._record.queue.put(item, timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _record_loop(self) -> None:
        while True:
            item = self._record.queue.get()
            if item is None:
                flush_and_refresh(self.store)
                return
            if item[0] == "whole":
                _, case, result = item
                outcome = self._handle(self._record, handle_finding, self.store, case, result,
                                       self.version)
                if outcome is not None:
                    self.report(outcome, result.findings[0].message)
                continue
            triaged = item[1]
            outcome = self._handle(self._record, _record_new, self.store, triaged, self.version)
            if outcome is None:  # it failed: so do those that waited for it
                outcome = Handled("unconfirmed", name="its first finding could not be recorded")
            self.report(outcome, triaged.finding.message)
            self._settle(triaged.prelim, outcome)

    def _settle(self, prelim: str, outcome: Handled) -> None:
        """The findings that waited for the one of key ``prelim`` end as it did: a hit on
        its bundle, or its outcome."""
        with self._keys:
            waited = self._waiting.pop(prelim, [])
        bundle = outcome.bundle_id if outcome.status in ("new", "hit", "merged") else None
        for message, signature in waited:
            if bundle is not None:
                self.store.add_hit(bundle)
                self.report(Handled("hit", bundle, signature=signature), message)
            else:
                self.report(dataclasses.replace(
                    outcome, signature=signature,
                    name=f"{outcome.name} (not tried again: a finding with its key was "
                         "handled meanwhile)".lstrip()), message)

    def _handle(self, lane: _Lane, step: Callable[..., Any], store: BundleStore,
                *args: Any) -> Any:
        """``step(store, lane's sandbox, *args, policy, lane's memo, roots)``; a failure of
        this finding alone is counted in :attr:`errors` (None returned), one every later
        finding would meet too is raised."""
        started = time.monotonic()
        try:
            if lane.sandbox is None:
                lane.sandbox = self._factory()
            return step(store, lane.sandbox, *args, self._policy(), lane.memo, self.roots)
        except Exception as exc:  # a bug of optfuzz: keep the campaign alive, say why
            if is_disk_full(exc) or (lane.sandbox is not None and not lane.sandbox.alive):
                raise
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return None
        finally:
            if time.monotonic() - started >= TRIM_AFTER_SECONDS:
                release_free_memory()  # a reduction's models and values, dropped

    def finish(self, grace: float, quick: bool = False, abandon: bool = False) -> None:
        """Handle what is queued and stop: fully for ``grace`` seconds, then (or at once with
        ``quick``) without reduction and with each localization cut at
        :data:`QUICK_LOCALIZE_SECONDS` (its best answer so far kept). The reduction and
        trigger probes at hand stop at that moment too, with what they have found
        (:attr:`FindingPolicy.cutoff`): a finding begun just before the end does not hold the
        campaign for its whole reduction budget. With ``abandon`` (the campaign is failing)
        the queued findings are dropped (counted in :attr:`abandoned`) and the finding at
        hand gets :data:`ABANDON_SECONDS`. A dead thread is not waited for. Never raises;
        see :meth:`check`."""
        self._finishing = True
        self._abandoning = self._abandoning or abandon
        deadline = time.monotonic() + (ABANDON_SECONDS if abandon else grace)
        # past it the findings are handled quickly (_policy) and the reduction at hand stops
        self.policy.cutoff.cut(time.monotonic() if quick or abandon else deadline)
        if abandon:
            self._drain()
        triage_thread = self._triage.thread
        if triage_thread is not None and triage_thread.is_alive():
            self._triage.queue.put(None)  # after what is queued; the bounds are put()'s alone
        else:
            self._forward(None)
        for lane in (self._triage, self._record):
            assert lane.thread is not None
            lane.thread.join(timeout=max(0.0, deadline - time.monotonic()))
            if lane.thread.is_alive() and not abandon:
                lane.thread.join()  # the cutoff has passed: what is left goes quickly
        for lane in (self._triage, self._record):
            if lane.sandbox is not None:
                lane.sandbox.close()  # also ends the wait of an abandoned finding's run
        for lane in (self._triage, self._record):
            assert lane.thread is not None
            lane.thread.join(timeout=ABANDON_SECONDS)
        self._drain()

    def _drain(self) -> None:
        for lane in (self._triage, self._record):
            while True:
                try:
                    item = lane.queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    self._dropped(lane, item)

    def _dropped(self, lane: _Lane, item: tuple) -> None:
        """Count a finding queued on ``lane`` that will not be recorded: the triage queue's
        ``(case, result, weight)`` frees its bytes; the recording queue's ``("triaged",
        Triaged)`` takes the findings waiting for it along."""
        if lane is self._triage:
            self._taken(item[2])
        elif item[0] == "triaged":
            with self._keys:
                self.abandoned += len(self._waiting.pop(item[1].prelim, []))
        self.abandoned += 1


def _record_new(store: BundleStore, sandbox: Sandbox, triaged: Triaged, version: str,
                policy: FindingPolicy, memo: LocalizationMemo, roots: RootCauseMemo) -> Handled:
    """:func:`fuzzer.campaign.record.record_new` in the argument order of the other steps
    (it needs no localization memory)."""
    return record_new(store, sandbox, triaged, version, policy, roots)
