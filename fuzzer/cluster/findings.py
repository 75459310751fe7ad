"""The driver's side of finding handling in a cluster campaign: findings wait in a queue,
go to a bounded number of :class:`fuzzer.cluster.actors.FindingHandler` actors (one batch of
up to :data:`BATCH` at a time each, handled in order, so each handler's root-cause memo stays
in step with the bundles), and come back as store writes that the driver makes
(:func:`fuzzer.cluster.recording.apply`). A finding counts as recorded only then; the range
it came from is settled when its last finding is.

It offers the interface of :class:`fuzzer.campaign.finding_thread.FindingWorker` (``put``,
``check``, ``pending``, ``finish``, ``errors``, ``failure``, ``abandoned``, ``kept``,
``memo``, ``roots``), driven by the campaign's own loop instead of a thread: :meth:`refs` and
:meth:`complete`. Its finish keeps the same word: past the grace period a new root cause is
kept in ``pending/`` (the driver writes it, from the finding it sent), and whatever is queued
or out on a handler a few seconds later is kept there too.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

from fuzzer.campaign.failure import as_campaign_error
from fuzzer.campaign.finding_thread import (
    FLUSH_SECONDS,
    LATE_SCREENING_SECONDS,
    STOP_SECONDS,
    UNSCREENED,
)
from fuzzer.cluster.liveness import Liveness
from fuzzer.cluster.recording import apply, known_bundles, root_cause_of
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.handling.outcome import Handled, Report, RootCauseMemo, merge_failures
from fuzzer.handling.pending import PendingKeeper
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.report.refresh import flush_and_refresh
from fuzzer.store.folder import BundleStore
from fuzzer.store.versions import utc_now

#: times a finding goes to a handler before it is given up (its handler died each time; a
#: handler that failed gets findings again once it answers).
MAX_ATTEMPTS = 3
_WAIT = 0.2  # seconds of one wait while finishing
_GATHER_SECONDS = 10.0  # seconds the handlers have to send their failed keys at the end
#: findings sent to a handler in one call (most are hits, handled in milliseconds).
BATCH = 32

#: case, result, tag, attempts so far, when it was found (ISO time).
Item = tuple[TestCase, CaseResult, Any, int, str]


class ClusterFindings:
    """Findings of a cluster campaign on their way to ``crashes/``.

    Args:
        ray: the ``ray`` module.
        handlers: the FindingHandler actor handles.
        store: the campaign's bundle store (only the driver writes it).
        report: called with ``(Handled, message)`` after each finding.
        settle: called with a finding's tag after it is recorded (or given up).
        failures: the root-cause keys an earlier run failed on, as the handlers got them
            (:meth:`fuzzer.handling.outcome.RootCauseMemo.failures`).

    Attributes:
        errors: one line per finding that could not be recorded.
        failure: the exception that stops the campaign (a write failed), or None.
        abandoned: findings neither recorded nor kept pending (a full disk).
        driver_seconds: CPU seconds of the driver spent recording findings.
        recorded: findings recorded.
        kept: keeps the findings the finish cannot handle in time in ``pending/``
            (:class:`fuzzer.handling.pending.PendingKeeper`).
        memo, roots: the driver's own localization and root-cause memories, for findings
            it handles itself (pending ones, on resume); the failed keys ``roots`` learns
            are part of :meth:`failures`. ``memo`` starts from the one given (the memo the
            handlers were made with), else from the folder's bundles.
    """

    def __init__(self, ray: Any, handlers: list[Any], store: BundleStore, report: Report,
                 settle: Callable[[Any], None],
                 failures: dict[str, Any] | None = None,
                 memo: LocalizationMemo | None = None) -> None:
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
        self.kept = PendingKeeper(store.root)
        self.memo = memo if memo is not None else LocalizationMemo.of_bundles(store.index())
        self.roots = RootCauseMemo(failures)
        self.liveness = Liveness(ray, handlers)
        self._last_flush = time.monotonic()

    def failures(self) -> dict[str, Any]:
        """The failed root-cause keys, for the next run: the handlers' records as
        :meth:`finish` gathered them (before it, those the handlers started with), and the
        driver's own (:attr:`roots`)."""
        return merge_failures([self._failures, self.roots.failures()])

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
        self.queue.append((case, result, tag, 0, utc_now()))
        self.pump()

    def pump(self) -> None:
        """Give queued findings to idle handlers, up to :data:`BATCH` each."""
        self.liveness.refresh()
        busy = {index for index, _ in self.in_flight.values()}
        for index, handler in enumerate(self.handlers):
            if index in busy or not self.liveness.up(index) or not self.queue:
                continue
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            ref = handler.handle.remote([(item[0], item[1]) for item in batch], self.known,
                                        self.quick)
            self.in_flight[ref] = (index, [(c, r, t, a + 1, f) for c, r, t, a, f in batch])

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
                case, result, tag, attempts, _ = item
                if attempts < MAX_ATTEMPTS:
                    self.queue.appendleft(item)
                else:
                    self.errors.append(f"handler lost {attempts} times: {type(exc).__name__}")
                    self.settle(tag)
            self.pump()
            return
        for item, (handled, ops, error) in zip(batch, outcomes, strict=True):
            _, result, tag, _, _ = item
            if handled is not None and handled.status == "pending":  # the driver keeps it
                self._keep(item, handled)
                continue
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

    def _keep(self, item: Item, outcome: Handled) -> None:
        """Keep ``item``'s finding in ``pending/`` as ``outcome`` says and settle it; where
        that fails (a full disk) it is counted in :attr:`abandoned` and :attr:`errors`, and
        left unsettled (``--resume`` runs its range again)."""
        case, result, tag, _, found = item
        why_not = self.kept.keep(case, result, found, outcome)
        if why_not is not None:
            self.abandoned += 1
            self.errors.append(why_not)
            return
        self.report(outcome, result.findings[0].message)
        self.settle(tag)

    def _keep_left(self, in_flight: bool) -> None:
        """Keep the queued findings (and, with ``in_flight``, those out on handlers, whose
        answers are no longer waited for) in ``pending/`` unscreened."""
        items = list(self.queue)
        self.queue.clear()
        if in_flight:
            items += [item for _, batch in self.in_flight.values() for item in batch]
            self.in_flight.clear()
        for item in items:
            self._keep(item, UNSCREENED)

    def finish(self, grace: float, quick: bool = False, abandon: bool = False) -> None:
        """Record what is queued, within ``grace`` seconds and a few more: fully for
        ``grace`` seconds; then (at once with ``quick``) the reductions under way on the
        handlers end (:meth:`fuzzer.cluster.actors.FindingHandler.cut`) and no new root
        cause becomes a bundle: for
        :data:`fuzzer.campaign.finding_thread.LATE_SCREENING_SECONDS` the handlers still
        screen (a known root cause is a hit) and send a new one back ``pending``, which the
        driver keeps (:attr:`kept`); then the queued findings are kept pending unscreened,
        and :data:`fuzzer.campaign.finding_thread.STOP_SECONDS` later so are those a handler
        has not answered for. With ``abandon`` everything is kept pending at once and
        nothing more is waited for. Findings that cannot be kept (a full disk) are counted
        in :attr:`abandoned`. Then (unless abandoning) the handlers' failed root-cause keys
        are gathered (:meth:`failures`). Never raises; see :meth:`check`."""
        if abandon:
            self._keep_left(in_flight=True)
        now = time.monotonic()
        deadline = now + grace
        self.quick = self.quick or quick
        for handler in self.handlers:  # the reductions under way end with the grace period
            handler.cut.remote(0.0 if self.quick or abandon else grace)
        late = (now if self.quick else deadline) + LATE_SCREENING_SECONDS
        while (self.in_flight or self.queue) and self.failure is None:
            now = time.monotonic()
            self.quick = self.quick or now > deadline
            if now > late:  # what is queued, then (past STOP_SECONDS) what is out, is kept
                self._keep_left(in_flight=now > late + STOP_SECONDS)
                if not self.in_flight:
                    break
            self.pump()
            if not self.in_flight:
                time.sleep(_WAIT)
                continue
            ready, _ = self.ray.wait(self.refs(), num_returns=1, timeout=_WAIT)
            for ref in ready:
                self.complete(ref)
        self._keep_left(in_flight=True)  # after a failed write: what no handler answered
        self._flush(force=True)
        if not abandon:
            self._gather_failures()

