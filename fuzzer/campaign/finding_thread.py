"""Finding handling beside the case loop: a thread that localizes, signs, deduplicates,
reduces and stores findings while the campaign keeps its workers busy with new cases.

Findings wait in a queue bounded by the bytes of their artifacts (:data:`QUEUE_BYTES`) and by
their number (:data:`QUEUE_SIZE`): past either bound the case loop blocks (backpressure), so no
finding is ever dropped. The bounds are wide enough that hits keep queueing for minutes while
the thread verifies a slow new finding (a hang is run again up to its timeout): with 64
findings at most, the one new bundle of a 3,000-case second pass over known bugs once held
the case loop for about four minutes.

The thread has a sandbox of its own (one worker), so its optimizer runs never queue behind the
campaign's cases. When the campaign ends, :meth:`finish` handles what is left; past its grace
period (or after Ctrl-C) the rest is recorded without reduction.

A failure in one finding is counted (:attr:`FindingWorker.errors`) and the thread goes on; a
failure that every later finding would meet too (a full disk, its own worker pool gone, an
error outside the handling of one finding) ends the thread. The case loop learns of it from
:meth:`FindingWorker.check` or :meth:`FindingWorker.put` (never blocked by a dead thread) and
stops the campaign.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable

from fuzzer.campaign.failure import as_campaign_error, is_disk_full, stopped
from fuzzer.campaign.record import FindingPolicy, Handled, RootCauseMemo, handle_finding
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import release_free_memory
from fuzzer.execution.sandbox import Sandbox
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.store.folder import BundleStore

#: most findings queued at once.
QUEUE_SIZE = 1024
#: most bytes of artifacts (:attr:`fuzzer.execution.case.Artifacts.nbytes`) queued at once;
#: a finding larger than this waits until the queue is empty.
QUEUE_BYTES = 64 << 20
FLUSH_SECONDS = 2.0  # batched hits reach meta.json at least this often
POLL_SECONDS = 0.5  # while the queue is full: how often to check that the thread still runs
ABANDON_SECONDS = 5.0  # how long an abandoning finish waits for the finding at hand
QUICK_LOCALIZE_SECONDS = 10.0  # a localization's bound once the grace period is over

#: called with ``(Handled, message of the finding)`` after each finding.
Report = Callable[[Handled, str], None]


class FindingWorker:
    """A thread that records findings into ``store``.

    Args:
        store: the campaign's bundle store.
        sandbox_factory: makes the thread's sandbox on the first finding.
        version: the target's version for meta.json.
        policy: localization and reduction settings.
        report: called with ``(Handled, message)`` after each finding.

    Attributes:
        errors: one line per finding that could not be recorded (the thread went on).
        failure: the exception that ended the thread early, or None.
        abandoned: queued findings dropped by a failing campaign's :meth:`finish`.
    """

    def __init__(self, store: BundleStore, sandbox_factory: Callable[[], Sandbox],
                 version: str, policy: FindingPolicy, report: Report) -> None:
        self.store, self.version, self.policy, self.report = store, version, policy, report
        self._factory = sandbox_factory
        self._sandbox: Sandbox | None = None
        # unbounded itself: put() holds both bounds under self._room
        self._queue: queue.Queue[tuple[TestCase, CaseResult, int] | None] = queue.Queue()
        self._queued_bytes = 0
        self._room = threading.Condition()
        self._quick = threading.Event()
        self.memo = LocalizationMemo()
        self.roots = RootCauseMemo()
        self.errors: list[str] = []
        self.failure: BaseException | None = None
        self.abandoned = 0
        self._finishing = self._abandoning = False
        self._thread = threading.Thread(target=self._run, name="findings", daemon=True)
        self._thread.start()

    def put(self, case: TestCase, result: CaseResult,
            waiting: Callable[[], None] | None = None) -> None:
        """Queue a result with findings; blocks while the queue is full (either bound) and
        the thread runs, calling ``waiting()`` every :data:`POLL_SECONDS` meanwhile (it may
        raise, e.g. on Ctrl-C: :meth:`fuzzer.campaign.interrupt.StopRequest.check`).

        Raises:
            CampaignError: the thread has stopped (see :meth:`check`).
        """
        arts = getattr(result, "artifacts", None)
        weight = arts.nbytes if arts is not None else 0
        while True:
            self.check()
            if waiting is not None:
                waiting()
            with self._room:
                if self._has_room(weight):
                    self._queue.put_nowait((case, result, weight))
                    self._queued_bytes += weight
                    return
                self._room.wait(POLL_SECONDS)

    def _has_room(self, weight: int) -> bool:
        """Whether a finding of ``weight`` bytes fits under both bounds (an empty queue
        takes any finding)."""
        return self._queue.qsize() < QUEUE_SIZE and \
            (not self._queued_bytes or self._queued_bytes + weight <= QUEUE_BYTES)

    def _taken(self, weight: int) -> None:
        """A queued finding of ``weight`` bytes left the queue: wake a waiting :meth:`put`."""
        with self._room:
            self._queued_bytes -= weight
            self._room.notify_all()

    def check(self) -> None:
        """Raise if the thread stopped before :meth:`finish` asked it to.

        Raises:
            CampaignError: one line saying why (a full disk, or the exception that ended it).
        """
        if self.failure is not None:
            raise as_campaign_error(self.failure, "the finding thread", self.store.root)
        if not self._thread.is_alive() and not self._finishing:
            raise stopped("the finding thread stopped")

    def pending(self) -> int:
        """Findings waiting in the queue."""
        return self._queue.qsize()

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # the case loop reports it and stops the campaign
            if not self._abandoning:  # else: its sandbox was closed under it, on purpose
                self.failure = exc

    def _loop(self) -> None:
        last_flush = time.monotonic()
        while True:
            try:
                item = self._queue.get(timeout=FLUSH_SECONDS)
            except queue.Empty:
                item = ()
            if time.monotonic() - last_flush >= FLUSH_SECONDS or item is None:
                self.store.flush_hits()
                last_flush = time.monotonic()
            if item is None:
                return
            if not item:
                continue
            case, result, weight = item
            self._taken(weight)
            quick = self._quick.is_set()
            policy = dataclasses.replace(self.policy, reduce_seconds=0, probe_seconds=0,
                                         localize_seconds=QUICK_LOCALIZE_SECONDS) \
                if quick else self.policy
            try:
                if self._sandbox is None:
                    self._sandbox = self._factory()
                outcome = handle_finding(self.store, self._sandbox, case, result, self.version,
                                         policy, self.memo, self.roots)
            except Exception as exc:  # a bug of optfuzz: keep the campaign alive, say why
                if self._fatal(exc):
                    raise
                self.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            finally:
                release_free_memory()  # a reduction's models and values, dropped
            if outcome is not None:
                self.report(outcome, result.findings[0].message)

    def _fatal(self, exc: Exception) -> bool:
        """Whether every later finding would fail the same way: a full disk, or the thread's
        worker pool is gone."""
        return is_disk_full(exc) or (self._sandbox is not None and not self._sandbox.alive)

    def finish(self, grace: float, quick: bool = False, abandon: bool = False) -> None:
        """Handle what is queued and stop: fully for ``grace`` seconds, then (or at once with
        ``quick``) without reduction and with each localization cut at
        :data:`QUICK_LOCALIZE_SECONDS` (its best answer so far kept). With ``abandon`` (the
        campaign is failing) the queued findings are dropped (counted in :attr:`abandoned`)
        and the finding at hand gets :data:`ABANDON_SECONDS`. A dead thread is not waited
        for. Never raises; see :meth:`check`."""
        self._finishing = True
        self._abandoning = self._abandoning or abandon
        if quick or abandon:
            self._quick.set()
        if abandon:
            self._drain()
        if self._thread.is_alive():
            self._queue.put(None)  # after what is queued; the bounds are put()'s alone
        self._thread.join(timeout=ABANDON_SECONDS if abandon else grace)
        if self._thread.is_alive() and not abandon:
            self._quick.set()
            self._thread.join()
        if self._sandbox is not None:
            self._sandbox.close()  # also ends the wait of an abandoned finding's sandbox run
        self._thread.join(timeout=ABANDON_SECONDS)
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._taken(item[2])
                self.abandoned += 1

