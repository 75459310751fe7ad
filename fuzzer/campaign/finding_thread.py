"""Finding handling beside the case loop: a thread that localizes, signs, deduplicates,
reduces and stores findings while the campaign keeps its workers busy with new cases.

Findings wait in a bounded queue: when it is full the case loop blocks (backpressure), so no
finding is ever dropped. The thread has a sandbox of its own (one worker), so its optimizer
runs never queue behind the campaign's cases. When the campaign ends, :meth:`finish` handles
what is left; past its grace period (or after Ctrl-C) the rest is recorded without reduction.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from fuzzer.campaign.record import FindingPolicy, handle_finding
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.store.folder import BundleStore

QUEUE_SIZE = 64
FLUSH_SECONDS = 2.0  # batched hits reach meta.json at least this often

Report = Callable[[str, bool, str], None]


class FindingWorker:
    """A thread that records findings into ``store``.

    Args:
        store: the campaign's bundle store.
        sandbox_factory: makes the thread's sandbox on the first finding.
        version: the target's version for meta.json.
        policy: localization and reduction settings.
        report: called with ``(bundle id, created, message)`` after each finding.
    """

    def __init__(self, store: BundleStore, sandbox_factory: Callable[[], Sandbox],
                 version: str, policy: FindingPolicy, report: Report) -> None:
        self.store, self.version, self.policy, self.report = store, version, policy, report
        self._factory = sandbox_factory
        self._sandbox: Sandbox | None = None
        self._queue: queue.Queue[tuple[TestCase, CaseResult] | None] = queue.Queue(QUEUE_SIZE)
        self._quick = threading.Event()
        self.memo = LocalizationMemo()
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._loop, name="findings", daemon=True)
        self._thread.start()

    def put(self, case: TestCase, result: CaseResult) -> None:
        """Queue a result with findings; blocks while the queue is full."""
        self._queue.put((case, result))

    def pending(self) -> int:
        """Findings waiting in the queue."""
        return self._queue.qsize()

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
            case, result = item
            quick = self._quick.is_set()
            policy = FindingPolicy(localize=self.policy.localize,
                                   reduce_seconds=0 if quick else self.policy.reduce_seconds)
            try:
                if self._sandbox is None:
                    self._sandbox = self._factory()
                outcome = handle_finding(self.store, self._sandbox, case, result, self.version,
                                         policy, self.memo)
            except Exception as exc:  # a bug of optfuzz: keep the campaign alive, say why
                self.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if outcome is not None:
                self.report(outcome[0], outcome[1], result.findings[0].message)

    def finish(self, grace: float, quick: bool = False) -> None:
        """Handle what is queued and stop: fully for ``grace`` seconds, then (or at once with
        ``quick``) without reduction."""
        if quick:
            self._quick.set()
        self._queue.put(None)
        self._thread.join(timeout=grace)
        if self._thread.is_alive():
            self._quick.set()
            self._thread.join()
        if self._sandbox is not None:
            self._sandbox.close()

