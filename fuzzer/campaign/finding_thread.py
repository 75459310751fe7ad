"""Finding handling beside the case loop: three threads that localize, sign, deduplicate,
reduce and store findings while the campaign keeps its workers busy with new cases.

* The **screening thread** takes every finding (:func:`fuzzer.handling.screen.screen`):
  documented behaviour, localization (mostly one confirming run of a remembered answer), the
  preliminary root-cause key, and a hit on the bundle that key knows. A finding of a root
  cause not known yet goes on to the recording thread, as does a whole finding whose screening
  itself is long (:func:`fuzzer.handling.screen.costly_screening`: a hang runs again up to its
  timeout, a slow run is timed at three sizes and scaled down).
* The **recording thread** does the costly part (:func:`fuzzer.handling.record.record_new`:
  determinism, reduction, verification in a fresh process, the bundle). Findings that reach
  it with a preliminary key already on its way there wait for that one and end as it did (a
  hit on its bundle, or its outcome), so one new bug met 500 times during its reduction costs
  one reduction.
* The **slow thread** handles those costly findings whole
  (:func:`fuzzer.handling.record.handle_finding`), one at a time, within a share of the
  campaign's time (:data:`SLOW_SHARE`); those that come past it are kept in ``pending/``.

So a hit never waits behind a reduction or a slow finding's timings: in an hour-long soak
on onnxoptimizer a single thread handled hits at about 20 per second, but each new slow
finding took it minutes, during which the queue filled and the case loop stood still seven
times.

Findings wait in a queue bounded by the bytes of their artifacts (:data:`QUEUE_BYTES`) and by
their number (:data:`QUEUE_SIZE`): past either bound the case loop blocks (backpressure), so no
finding is ever dropped; the recording thread's queue holds at most :data:`RECORD_SIZE`, past
which the screening thread waits.

A new root cause never waits behind a hang: in 10-minute onnxslim campaigns where one thread
recorded both, each hang candidate's confirmation and localization (each run up to the whole
timeout) held it for minutes, and no bundle was written for three and a half to six minutes
of every run (the new root causes found meanwhile queued behind it, some to end in
``pending/``); taking the new root causes first (a priority queue) did not help once a hang
was at hand.

Each thread has a sandbox of its own (one worker), so its optimizer runs never queue behind
the campaign's cases or another thread's. When the campaign ends, :meth:`finish` handles
what is left in full for its grace period. Then (at once after Ctrl-C) the reduction at hand
stops, and no finding of a new root cause becomes a bundle any more: a bundle written
unreduced would be keyed on the unreduced model. For :data:`LATE_SCREENING_SECONDS` more the
queued findings are still screened, so a known root cause counts as a hit on its bundle; a new
one is kept in ``pending/`` (:mod:`fuzzer.handling.pending`) with its preliminary key, for
``--resume`` or ``optfuzz triage --pending`` to handle in full. The findings still queued
after that go to ``pending/`` untouched, and :data:`STOP_SECONDS` later the finding at hand
is stopped (its worker closed) and kept there too: the finish ends within its grace period
and a few seconds, whatever it holds.

A failure in one finding is counted (:attr:`FindingWorker.errors`) and the thread goes on; a
failure that every later finding would meet too (a full disk, its own worker pool gone, an
error outside the handling of one finding) ends the threads. The case loop learns of it from
:meth:`FindingWorker.check` or :meth:`FindingWorker.put` (never blocked by a dead thread) and
stops the campaign.
"""

from __future__ import annotations

import dataclasses
import math
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from fuzzer.campaign.failure import as_campaign_error, stopped
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import release_free_memory
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import (
    FindingPolicy,
    Handled,
    Report,
    RootCauseMemo,
    settle_waiting,
)
from fuzzer.handling.pending import PendingKeeper
from fuzzer.handling.record import TOO_LATE, handle_finding, record_new
from fuzzer.handling.screen import Screened, costly_screening, primary_finding, screen
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.reduce.predicate import Cutoff
from fuzzer.report.refresh import flush_and_refresh
from fuzzer.store.folder import BundleStore, is_disk_full
from fuzzer.store.versions import utc_now

#: most findings queued at once.
QUEUE_SIZE = 1024
#: most bytes of artifacts (:attr:`fuzzer.execution.case.Artifacts.nbytes`) queued at once;
#: a finding larger than this waits until the queue is empty.
QUEUE_BYTES = 64 << 20
#: most findings waiting for the recording thread, and for the slow thread (each holds its
#: artifacts).
RECORD_SIZE = 256
#: batched hits reach meta.json at least this often (seconds): each flush rewrites the
#: meta.json of every bundle hit since the last, as campaign.json is written every 10 s.
FLUSH_SECONDS = 10.0
#: a finding whose handling took this long (seconds: a localization, a reduction) is
#: followed by giving the C heap's free pages back; a hit, handled in a millisecond, is not.
TRIM_AFTER_SECONDS = 1.0
POLL_SECONDS = 0.5  # while a queue is full: how often to check that the threads still run
ABANDON_SECONDS = 5.0  # how long a finish waits for a thread once it has stopped it
#: seconds past the grace period during which queued findings are still screened, each
#: localization bounded by what is left of them (a known root cause counts as a hit, a new
#: one is kept pending); past them the findings still queued are kept pending untouched.
LATE_SCREENING_SECONDS = 3.0
#: seconds past those after which the finding at hand is stopped (its worker closed) and
#: kept pending. With the close of the threads' workers and the closing summary the finish
#: stays within 10 s of its grace period (with 5 + 5 s here, a 5-minute onnxoptimizer
#: campaign of benchmarks/finish.py ended 72.6 s past its time: a slow scale-down at hand).
STOP_SECONDS = 3.0
#: the most of a campaign's time the slow thread spends handling findings (a share of the
#: seconds since it started); past it, the hangs and slow runs that come are kept in
#: ``pending/``. Each hang candidate runs again at the whole timeout, at each step, and keeps
#: a core busy meanwhile: with no bound, a 10-minute onnxslim campaign on two cores ran 30% fewer
#: cases and wrote 4 bundles fewer, its thirteen candidates all one known hang.
SLOW_SHARE = 0.2
#: why findings are pending that the end of a campaign left unscreened, or stopped mid-way.
UNSCREENED = Handled("pending", name="the campaign ended before it was screened")
STOPPED = Handled("pending", name="the campaign ended while it was handled")
#: why a hang or slow run is pending that came past the slow thread's share.
SLOW_SHARE_SPENT = Handled("pending", name="hangs and slow runs had taken their share of the "
                                           "campaign's time")


def policy_at_hand(policy: FindingPolicy, quick: bool = False,
                   localize_seconds: float = LATE_SCREENING_SECONDS) -> FindingPolicy:
    """The policy for the finding at hand: ``policy`` itself until its cutoff has passed,
    then (or at once with ``quick``) the same without reduction or trigger probes and with
    localizations bounded by ``localize_seconds`` (it keeps the same cutoff, past which a
    new root cause ends ``pending``: :func:`fuzzer.handling.record.record_new`)."""
    if not quick and policy.cutoff.left() > 0:
        return policy
    return dataclasses.replace(policy, reduce_seconds=0, probe_seconds=0,
                               localize_seconds=localize_seconds)


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
    """Three threads (screening, recording and slow, see the module docstring) that record
    findings into ``store``.

    Args:
        store: the campaign's bundle store.
        sandbox_factory: makes a thread's sandbox on its first finding (called once per
            thread).
        version: the target's version for meta.json.
        policy: localization and reduction settings.
        report: called with ``(Handled, message)`` after each finding (from either thread).
        failures: the root-cause keys an earlier run failed on
            (:meth:`fuzzer.handling.outcome.RootCauseMemo.failures`).

    Attributes:
        errors: one line per finding that could not be recorded (the threads went on).
        failure: the exception that ended a thread early, or None.
        abandoned: findings neither recorded nor kept pending (a full disk).
        memo: the screening thread's localization memory.
        roots: the root-cause memory both threads share.
        kept: keeps the findings the finish cannot handle in time in ``pending/``
            (:class:`fuzzer.handling.pending.PendingKeeper`).
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
        # a resumed folder's bundles are known faults: each lane tries their passes first
        known = store.index()
        self._screen = _Lane("findings", queue.Queue(), LocalizationMemo.of_bundles(known))
        self._record = _Lane("findings-record", queue.Queue(RECORD_SIZE),
                             LocalizationMemo.of_bundles(known))
        self._slow = _Lane("findings-slow", queue.Queue(RECORD_SIZE),
                           LocalizationMemo.of_bundles(known))
        self._queued_bytes = 0
        self._room = threading.Condition()
        self._keys = threading.Lock()
        #: preliminary key on its way to the recording thread -> (message, first-wave
        #: signature) of each later finding with that key, which ends as it does.
        self._waiting: dict[str, list[tuple[str, str]]] = {}
        self.memo = self._screen.memo
        self.roots = RootCauseMemo(failures)
        self.errors: list[str] = []
        self.failure: BaseException | None = None
        self.abandoned = 0
        self.kept = PendingKeeper(store.root)
        self._finishing = self._abandoning = self._stopping = False
        #: the moment (``time.monotonic()``) past which queued findings are kept unscreened.
        self._late = math.inf
        for lane, loop in ((self._screen, self._screen_loop), (self._record, self._record_loop),
                           (self._slow, self._slow_loop)):
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
                    self._screen.queue.put_nowait((case, result, weight, utc_now()))
                    self._queued_bytes += weight
                    return
                self._room.wait(POLL_SECONDS)

    def _has_room(self, weight: int) -> bool:
        """Whether a finding of ``weight`` bytes fits under both bounds (an empty queue
        takes any finding)."""
        return self._screen.queue.qsize() < QUEUE_SIZE and \
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
                                           for lane in self._lanes()):
            raise stopped("the finding thread stopped")

    def failures(self) -> dict[str, Any]:
        """The failed root-cause keys, for the next run
        (:meth:`fuzzer.handling.outcome.RootCauseMemo.failures`)."""
        return self.roots.failures()

    def pending(self) -> int:
        """Findings waiting in the queues (those waiting for a finding of their key not
        counted)."""
        return sum(lane.queue.qsize() for lane in self._lanes())

    def _lanes(self) -> tuple[_Lane, _Lane, _Lane]:
        return self._screen, self._record, self._slow

    def _run(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except BaseException as exc:  # the case loop reports it and stops the campaign
            if not self._abandoning:  # else: its sandbox was closed under it, on purpose
                self.failure = exc

    def _policy(self) -> FindingPolicy:
        """The policy of the finding at hand: quick (no reduction, each localization within
        what is left of :data:`LATE_SCREENING_SECONDS`) once :meth:`finish`'s grace period is
        over (its cutoff has passed)."""
        left = max(0.0, self._late - time.monotonic())
        return policy_at_hand(self.policy, localize_seconds=min(LATE_SCREENING_SECONDS, left))

    def _screen_loop(self) -> None:
        last_flush = time.monotonic()
        while True:
            try:
                item = self._screen.queue.get(timeout=FLUSH_SECONDS)
            except queue.Empty:
                item = ()
            if time.monotonic() - last_flush >= FLUSH_SECONDS or item is None:
                flush_and_refresh(self.store)
                last_flush = time.monotonic()
            if item is None:
                self._end_handling_lanes()
                return
            if not item:
                continue
            case, result, weight, found = item
            self._taken(weight)
            if self._stopping or time.monotonic() >= self._late:
                self._keep(case, result, found, UNSCREENED)
                continue
            finding = primary_finding(result)
            if finding is not None and costly_screening(finding):
                self._forward((case, result, found), self._slow)
                continue
            outcome = self._handle(self._screen, screen, self.store, case, result)
            if isinstance(outcome, Screened):
                self._send_on(outcome, found)
            elif outcome is not None:
                self._ended(case, result, found, outcome)

    def _send_on(self, screened: Screened, found: str) -> None:
        """Send ``screened`` (found at ISO time ``found``) to the recording thread, or, where
        a finding with its key is already on its way there, let it wait for that one."""
        with self._keys:
            waiting = self._waiting.get(screened.prelim)
            if waiting is not None:
                waiting.append((screened.finding.message, screened.first_wave))
                return
            self._waiting[screened.prelim] = []
        self._forward((screened.case, screened.result, found, screened))

    def _end_handling_lanes(self) -> None:
        """Queue the end marker for the recording and slow threads, after what they hold."""
        for lane in (self._record, self._slow):
            self._forward(None, lane)

    def _forward(self, item: tuple | None, lane: _Lane | None = None) -> None:
        """Put ``item`` on ``lane``'s queue (the recording thread's by default); waits while
        it is full and its thread runs (an abandoning finish drops it)."""
        lane = lane or self._record
        while True:
            thread = lane.thread
            if self._abandoning or thread is None or not thread.is_alive():
                if item is not None:
                    self._dropped(lane, item)
                return
            try:
                lane.queue.put(item, timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _slow_loop(self) -> None:
        started, busy = time.monotonic(), 0.0
        while True:
            item = self._slow.queue.get()
            if item is None:
                return
            case, result, found = item
            # its screening alone is long: none once the grace period ends, and none past
            # the thread's share of the campaign's time
            if self._stopping or self.policy.cutoff.left() <= 0:
                outcome = UNSCREENED
            elif busy > SLOW_SHARE * (time.monotonic() - started):
                outcome = SLOW_SHARE_SPENT
            else:
                begun = time.monotonic()
                outcome = self._handle(self._slow, handle_finding, self.store, case, result,
                                       self.version)
                busy += time.monotonic() - begun
            if outcome is not None:
                self._ended(case, result, found, outcome)

    def _record_loop(self) -> None:
        while True:
            item = self._record.queue.get()
            if item is None:
                flush_and_refresh(self.store)
                return
            case, result, found, screened = item
            outcome = self._handle(self._record, _record_new, self.store, screened, self.version)
            if outcome is None:  # it failed: so do those that waited for it
                outcome = Handled("unconfirmed", name="its first finding could not be recorded")
            self._ended(case, result, found, outcome, self._waited(screened.prelim))

    def _waited(self, prelim: str) -> list[tuple[str, str]]:
        """``(message, first-wave signature)`` of the findings that waited for the one of
        preliminary key ``prelim`` (none wait for it from now on)."""
        with self._keys:
            return self._waiting.pop(prelim, [])

    def _ended(self, case: TestCase, result: CaseResult, found: str, outcome: Handled,
               waited: list[tuple[str, str]] | None = None) -> None:
        """Report ``outcome`` of the primary finding of ``result`` and end the findings that
        ``waited`` for it as it did; a ``pending`` one is kept in ``pending/`` with them."""
        if outcome.status == "pending":
            self._keep(case, result, found, outcome, waited or [])
            return
        self.report(outcome, result.findings[0].message)
        settle_waiting(self.store, outcome, waited or [], self.report)

    def _keep(self, case: TestCase, result: CaseResult, found: str, outcome: Handled,
              waited: list[tuple[str, str]] | None = None) -> None:
        """Keep the primary finding of ``result`` (and the findings that ``waited`` for it)
        in ``pending/`` and report it; where that fails (a full disk) they are counted in
        :attr:`abandoned` and :attr:`errors` says why."""
        why_not = self.kept.keep(case, result, found, outcome, waited or [])
        if why_not is None:
            self.report(outcome, result.findings[0].message)
            return
        with self._keys:
            self.abandoned += 1 + len(waited or [])
            self.errors.append(why_not)

    def _handle(self, lane: _Lane, step: Callable[..., Any], store: BundleStore,
                *args: Any) -> Any:
        """``step(store, lane's sandbox, *args, policy, lane's memo, roots)``; a failure of
        this finding alone is counted in :attr:`errors` (None returned), one every later
        finding would meet too is raised. Once :meth:`finish` has stopped the lane (closed
        its sandbox), the finding ends :data:`STOPPED` (pending) unless it was stored: the
        verdict of a closed sandbox proves nothing, so a failure it led to is forgotten."""
        started = time.monotonic()
        try:
            if lane.sandbox is None:
                if self._stopping:
                    return STOPPED
                lane.sandbox = self._factory()
            outcome = step(store, lane.sandbox, *args, self._policy(), lane.memo, self.roots)
        except Exception as exc:  # a bug of optfuzz: keep the campaign alive, say why
            if self._stopping:
                return STOPPED
            if is_disk_full(exc) or (lane.sandbox is not None and not lane.sandbox.alive):
                raise
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return None
        finally:
            if time.monotonic() - started >= TRIM_AFTER_SECONDS:
                release_free_memory()  # a reduction's models and values, dropped
        if self._stopping and isinstance(outcome, Handled) and outcome.bundle_id is None \
                and outcome.status != "pending":
            self.roots.forget(outcome.prelim)
            return dataclasses.replace(STOPPED, prelim=outcome.prelim)
        return outcome

    def finish(self, grace: float, quick: bool = False, abandon: bool = False) -> None:
        """Handle what is queued and stop, within ``grace`` seconds and a few more: fully
        for ``grace`` seconds; then (at once with ``quick``) the reduction and trigger probes
        at hand stop (:attr:`FindingPolicy.cutoff`) and no new root cause becomes a bundle:
        for :data:`LATE_SCREENING_SECONDS` the queued findings are still screened (a known root
        cause is a hit, each localization bounded by what is left of them), and a new root
        cause is kept pending (``pending/``, :attr:`kept`); the findings still queued then are
        kept pending unscreened, and :data:`STOP_SECONDS` later the finding at hand is stopped
        (its sandbox closed) and kept pending too. With ``abandon`` (the campaign is failing)
        the queued findings are kept pending at once and the finding at hand gets
        :data:`ABANDON_SECONDS`. Findings that cannot be kept (a full disk) are counted in
        :attr:`abandoned`. A dead thread is not waited for. Never raises; see
        :meth:`check`."""
        self._finishing = True
        self._abandoning = self._abandoning or abandon
        now = time.monotonic()
        cut = now if quick or abandon else now + grace
        self.policy.cutoff.cut(cut)  # past it the findings are handled quickly (_policy)
        self._late = min(self._late, cut + LATE_SCREENING_SECONDS)
        if abandon:
            self._drain()
        screen_thread = self._screen.thread
        if screen_thread is not None and screen_thread.is_alive():
            self._screen.queue.put(None)  # after what is queued; the bounds are put()'s alone
        else:
            self._end_handling_lanes()
        stop_at = now + ABANDON_SECONDS if abandon else self._late + STOP_SECONDS
        for lane in self._lanes():
            assert lane.thread is not None
            lane.thread.join(timeout=max(0.0, stop_at - time.monotonic()))
        self._stopping = True  # the findings at hand end pending, no new sandbox is made
        for lane in self._lanes():
            if lane.sandbox is not None:
                lane.sandbox.close()  # also ends the wait of the finding at hand's run
        for lane in self._lanes():
            assert lane.thread is not None
            lane.thread.join(timeout=ABANDON_SECONDS)
        self._drain()

    def _drain(self) -> None:
        for lane in self._lanes():
            while True:
                try:
                    item = lane.queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    self._dropped(lane, item)

    def _dropped(self, lane: _Lane, item: tuple) -> None:
        """Keep a finding queued on ``lane`` that no thread will handle pending
        (:meth:`_keep`): the screening queue's ``(case, result, weight, found)`` frees its
        bytes; the slow queue's ``(case, result, found)`` is kept unscreened; the recording
        queue's ``(case, result, found, Screened)`` takes the findings waiting for it along."""
        if lane is self._screen:
            case, result, weight, found = item
            self._taken(weight)
            self._keep(case, result, found, UNSCREENED)
            return
        if lane is self._slow:
            case, result, found = item
            self._keep(case, result, found, UNSCREENED)
            return
        case, result, found, screened = item
        self._keep(case, result, found, Handled("pending", name=TOO_LATE,
                                                signature=screened.first_wave,
                                                prelim=screened.prelim),
                   self._waited(screened.prelim))


def _record_new(store: BundleStore, sandbox: Sandbox, screened: Screened, version: str,
                policy: FindingPolicy, memo: LocalizationMemo, roots: RootCauseMemo) -> Handled:
    """:func:`fuzzer.handling.record.record_new` in the argument order of the other steps
    (it needs no localization memory)."""
    return record_new(store, sandbox, screened, version, policy, roots)
