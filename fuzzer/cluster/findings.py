"""The driver's side of finding handling in a cluster campaign: findings wait in a queue,
go to a bounded number of :class:`fuzzer.cluster.actors.FindingHandler` actors (one batch of
up to :data:`BATCH` at a time each, handled in order, so each handler's root-cause memo stays
in step with the bundles), and come back as store writes that the driver makes
(:func:`fuzzer.cluster.recording.apply`). A finding counts as recorded only then; the range
it came from is settled when its last finding is.

It offers the interface of :class:`fuzzer.campaign.finding_thread.FindingWorker` (``put``,
``check``, ``pending``, ``finish``, ``errors``, ``failure``, ``abandoned``), driven by the
campaign's own loop instead of a thread: :meth:`refs` and :meth:`complete`.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

from fuzzer.campaign.failure import as_campaign_error
from fuzzer.campaign.finding_thread import FLUSH_SECONDS, Report
from fuzzer.campaign.record import merge_failures
from fuzzer.cluster.liveness import Liveness
from fuzzer.cluster.recording import apply, known_bundles, root_cause_of
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.report.refresh import flush_and_refresh
from fuzzer.store.folder import BundleStore

#: times a finding goes to a handler before it is given up (its handler died each time; a
#: handler that failed gets findings again once it answers).
MAX_ATTEMPTS = 3
_WAIT = 0.2  # seconds of one wait while finishing
_GATHER_SECONDS = 10.0  # seconds the handlers have to send their failed keys at the end
#: seconds past the grace period after which findings that no handler took are left
GIVE_UP_SECONDS = 120.0
#: findings sent to a handler in one call (most are hits, handled in milliseconds).
BATCH = 32

Item = tuple[TestCase, CaseResult, Any, int]  # case, result, tag, attempts so far


class ClusterFindings:
    """Findings of a cluster campaign on their way to ``crashes/``.

    Args:
        ray: the ``ray`` module.
        handlers: the FindingHandler actor handles.
        store: the campaign's bundle store (only the driver writes it).
        report: called with ``(Handled, message)`` after each finding.
        settle: called with a finding's tag after it is recorded (or given up).
        failures: the root-cause keys an earlier run failed on, as the handlers got them
            (:meth:`fuzzer.campaign.record.RootCauseMemo.failures`).

    Attributes:
        errors: one line per finding that could not be recorded.
        failure: the exception that stops the campaign (a write failed), or None.
        abandoned: queued findings dropped by a failing campaign's :meth:`finish`.
        driver_seconds: CPU seconds of the driver spent recording findings.
        recorded: findings recorded.
    """

    def __init__(self, ray: Any, handlers: list[Any], store: BundleStore, report: Report,
                 settle: Callable[[Any], None],
                 failures: dict[str, Any] | None = None) -> None:
        self.ray, self.handlers, self.store = ray, handlers, store
        self._failures = dict(failures or {})
        self.report, self.settle = report, settle
        self.known = known_bundles(store)
        self.queue: collections.deque[Item] = collections.deque()
        self.in_flight: dict[Any, tuple[int, list[Item]]] = {}
        self.errors: list[str] = []
        self.failure: BaseException | None = None
        self.abandoned = self.recorded = 0
        self.driver_seconds = 0.0
        self.quick = False
        self.liveness = Liveness(ray, handlers)
        self._last_flush = time.monotonic()

    def failures(self) -> dict[str, Any]:
        """The failed root-cause keys, for the next run: the handlers' records as
        :meth:`finish` gathered them (before it, those the handlers started with)."""
        return self._failures

    def _gather_failures(self) -> None:
        """Merge the handlers' records of failed root-cause keys (a handler that does not
        answer within :data:`_GATHER_SECONDS` keeps its part out)."""
        refs = [handler.failures.remote() for handler in self.handlers]
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=_GATHER_SECONDS)
        records = [self._failures]
        for ref in ready:
            try:
                records.append(self.ray.get(ref))
            except Exception:  # a handler that died meanwhile: its part is lost
                continue
        self._failures = merge_failures(records)

    def put(self, case: TestCase, result: CaseResult, tag: Any = None) -> None:
        """Queue a result with findings; ``tag`` comes back through ``settle``."""
        self.queue.append((case, result, tag, 0))
        self.pump()

    def pump(self) -> None:
        """Give queued findings to idle handlers, up to :data:`BATCH` each."""
        self.liveness.refresh()
        busy = {index for index, _ in self.in_flight.values()}
        for index, handler in enumerate(self.handlers):
            if index in busy or not self.liveness.up(index) or not self.queue:
                continue
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            ref = handler.handle.remote([(case, result) for case, result, _, _ in batch],
                                        self.known, self.quick)
            self.in_flight[ref] = (index, [(c, r, t, a + 1) for c, r, t, a in batch])

    def refs(self) -> list[Any]:
        """The results the campaign loop waits for."""
        return list(self.in_flight)

    def owns(self, ref: Any) -> bool:
        """Whether ``ref`` is one of :meth:`refs`."""
        return ref in self.in_flight

    def complete(self, ref: Any) -> None:
        """Record the findings whose handling ``ref`` holds, in order, then hand out the
        next batch."""
        started = time.process_time()
        index, batch = self.in_flight.pop(ref)
        try:
            outcomes = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the handler's node or process died
            self.liveness.mark_down(index)
            for item in reversed(batch):
                case, result, tag, attempts = item
                if attempts < MAX_ATTEMPTS:
                    self.queue.appendleft(item)
                else:
                    self.errors.append(f"handler lost {attempts} times: {type(exc).__name__}")
                    self.settle(tag)
            self.pump()
            return
        for (_, result, tag, _), (handled, ops, error) in zip(batch, outcomes, strict=True):
            try:
                if handled is not None:
                    handled = apply(self.store, handled, ops)
                    self.known.update({op.bundle_id: root_cause_of(op.files) for op in ops
                                       if op.kind == "create"})
                    self.recorded += 1
                    self.report(handled, result.findings[0].message)
                else:
                    self.errors.append(error)
            except OSError as exc:  # a write failed: every later finding would fail too
                self.failure = exc
                return
            self.settle(tag)
        try:
            self._flush()
        except OSError as exc:
            self.failure = exc
            return
        self.driver_seconds += time.process_time() - started
        self.pump()

    def _flush(self, force: bool = False) -> None:
        if force or time.monotonic() - self._last_flush >= FLUSH_SECONDS:
            flush_and_refresh(self.store)
            self._last_flush = time.monotonic()

    def check(self) -> None:
        """Raise if recording failed.

        Raises:
            CampaignError: one line saying why (e.g. a full disk).
        """
        if self.failure is not None:
            raise as_campaign_error(self.failure, "recording a finding", self.store.root)

    def pending(self) -> int:
        """Findings queued or being handled."""
        return len(self.queue) + sum(len(batch) for _, batch in self.in_flight.values())

    def finish(self, grace: float, quick: bool = False, abandon: bool = False) -> None:
        """Record what is queued: fully for ``grace`` seconds, then (or at once with
        ``quick``) without reduction, the reductions under way on the handlers ending then
        too (:meth:`fuzzer.cluster.actors.FindingHandler.cut`); with ``abandon`` the queue
        is dropped (counted in :attr:`abandoned`) and nothing more is waited for; what no
        handler took within :data:`GIVE_UP_SECONDS` past the grace period is counted there
        too. Then (unless abandoning) the handlers' failed root-cause keys are gathered
        (:meth:`failures`). Never raises; see :meth:`check`."""
        if abandon:
            self.abandoned += len(self.queue)
            self.queue.clear()
            self.in_flight.clear()
        deadline = time.monotonic() + grace
        self.quick = self.quick or quick
        for handler in self.handlers:  # the reductions under way end with the grace period
            handler.cut.remote(0.0 if self.quick or abandon else grace)
        while (self.in_flight or self.queue) and self.failure is None:
            now = time.monotonic()
            self.quick = self.quick or now > deadline
            if now > deadline + GIVE_UP_SECONDS:  # no handler came back: what is left stays
                self.abandoned += self.pending()
                self.queue.clear()
                self.in_flight.clear()
                break
            self.pump()
            if not self.in_flight:
                time.sleep(_WAIT)
                continue
            ready, _ = self.ray.wait(self.refs(), num_returns=1, timeout=_WAIT)
            for ref in ready:
                self.complete(ref)
        self._flush(force=True)
        if not abandon:
            self._gather_failures()

