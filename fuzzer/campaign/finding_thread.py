"""Finding handling beside the case loop: a thread that localizes, signs, deduplicates,
reduces and stores findings while the campaign keeps its workers busy with new cases.

Findings wait in a queue bounded by their bytes (:data:`QUEUE_BYTES`) and by their number
(:data:`QUEUE_SIZE`): past either bound the case loop blocks (backpressure), so no finding is
ever dropped. The bounds must hold the hits that arrive while the thread handles one new
finding: a new ``slow`` finding (confirmation, scale-down, localization and minimization by
three-size timings) held the thread for 4.5 minutes in an hour-long soak, and that
campaign queued 19 hits per second, so a queue of 1,024 findings stalled the case loop for
3.5 of them. The first :data:`COMPACT_AFTER` findings wait as objects (counted as their
artifacts' bytes plus :data:`ENTRY_BYTES`); the later ones wait serialized (pickle, zlib),
2.6 KB for a typical hit instead of 15.6 KB, so the 64 MiB bound holds about 24,000 hits
(20 minutes at that rate) and a short queue costs no serialization.

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
import pickle
import queue
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from fuzzer.campaign.failure import as_campaign_error, is_disk_full, stopped
from fuzzer.campaign.record import FindingPolicy, Handled, RootCauseMemo, handle_finding
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import release_free_memory
from fuzzer.execution.sandbox import Sandbox
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.store.folder import BundleStore

#: most findings queued at once.
QUEUE_SIZE = 1 << 16
#: most bytes queued at once (see :meth:`FindingWorker.put` for how a finding is weighed); a
#: finding larger than this waits until the queue is empty.
QUEUE_BYTES = 64 << 20
#: findings queued as objects; those queued behind them wait serialized.
COMPACT_AFTER = 256
#: bytes a finding queued as objects holds beyond its artifacts (its case, result and
#: findings: 15.6 KB in all for the throughput benchmark's findings, 3.4 KB of artifacts).
ENTRY_BYTES = 12 << 10
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
        self._queue: queue.Queue[tuple[Any, int] | None] = queue.Queue()
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

        Behind :data:`COMPACT_AFTER` queued findings, the pair waits serialized (pickle,
        zlib level 1: about 0.4 ms) and weighs its serialized bytes; else it weighs its
        artifacts' bytes (:attr:`fuzzer.execution.case.Artifacts.nbytes`) plus
        :data:`ENTRY_BYTES`.

        Raises:
            CampaignError: the thread has stopped (see :meth:`check`).
        """
        entry: Any = (case, result)
        if self._queue.qsize() >= COMPACT_AFTER:
            entry = zlib.compress(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), 1)
            weight = len(entry)
        else:
            arts = getattr(result, "artifacts", None)
            weight = (arts.nbytes if arts is not None else 0) + ENTRY_BYTES
        while True:
            self.check()
            if waiting is not None:
                waiting()
            with self._room:
                if self._has_room(weight):
                    self._queue.put_nowait((entry, weight))
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

    def queued_bytes(self) -> int:
        """What the waiting findings weigh, in bytes (see :meth:`put`)."""
        with self._room:
            return self._queued_bytes

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
            entry, weight = item
            self._taken(weight)
            case, result = entry if isinstance(entry, tuple) else \
                pickle.loads(zlib.decompress(entry))
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
                self._taken(item[1])
                self.abandoned += 1

