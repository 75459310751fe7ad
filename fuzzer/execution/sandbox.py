"""Sandboxed execution of test cases in long-lived worker processes (pebble ProcessPool,
without its orphaned tasks: :mod:`fuzzer.execution.pool`).

Each worker imports onnx, onnxruntime and the target once and runs many cases. A case that
kills its worker (a signal) or outlives the per-case timeout is turned into an Outcome with the
stage the worker had announced, judged by the oracles here, and the worker is replaced; the
optimizer never runs in the calling process.
"""

from __future__ import annotations

import collections
import multiprocessing
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from pebble import ProcessExpired

from fuzzer.builds.sanitizer import SanitizerRuntime, release
from fuzzer.edges.setup import EdgeSetup
from fuzzer.execution import scratch as scratch_folders
from fuzzer.execution.case import Artifacts, CaseResult, TestCase
from fuzzer.execution.deaths import (
    PRE_TARGET_STAGES,
    expired,
    judge_death,
    late_reference,
    reference_first,
    unknown_death,
)
from fuzzer.execution.pool import ProcessPool
from fuzzer.execution.preload import CASE_PRELOAD, FORKSERVER_PRELOAD, import_before_fork
from fuzzer.execution.slots import PENDING, StageSlots
from oracles.base import STAGES, Outcome

__all__ = ["CASE_PRELOAD", "DEFAULT_MEMORY_LIMIT", "DEFAULT_TIMEOUT", "MAX_DEAD_BATCHES",
           "MAX_RSS_GROWTH", "MAX_TASKS", "Sandbox", "SandboxError", "late_reference",
           "reference_first"]

T = TypeVar("T")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY_LIMIT = 4 << 30
_SLOTS_PER_JOB = 256
#: rebuilds of a broken pebble pool within :data:`RESTART_WINDOW` seconds past which the
#: pool counts as dead (a broken pool that keeps breaking is not a crashing target).
MAX_RESTARTS = 20
RESTART_WINDOW = 60.0
#: cases one worker runs before pebble replaces it (pebble's ``max_tasks``), so that a leak
#: in the target cannot grow without bound; a forked replacement costs milliseconds.
MAX_TASKS = 2000
#: resident-size growth of a worker (bytes) past its warm-up size at which its pool is
#: replaced: new cases go to a fresh pool, the old one finishes what it holds and stops.
MAX_RSS_GROWTH = 256 << 20
_POLL = 1.0  # seconds between checks that the pool still runs, while waiting
#: times :meth:`Sandbox.call` schedules its function while the pool holding it breaks first.
CALL_ATTEMPTS = 3


class _PoolReplaced(Exception):
    """A waited-for task's pool broke and was replaced before the task ran."""


#: a batch's task outlives the sum of its cases' timeouts by this much (seconds) before
#: pebble kills its worker; each case's own timeout is the worker's alarm.
BATCH_SLACK = 10.0
#: weight of one case in the sandbox's running rate of worker deaths.
DEATH_RATE_WEIGHT = 0.02
#: expected deaths per batch the batch size keeps within (:meth:`Sandbox.batch_size`): a
#: death re-runs the batch's other cases one by one, so a target that crashes often gets
#: smaller batches, and one per task at a death rate of a tenth.
MAX_DEAD_BATCHES = 0.1


class SandboxError(RuntimeError):
    """A function run by :meth:`Sandbox.call` killed its worker or outlived the timeout, or
    the pool itself no longer runs (then no call or case can run in it)."""


class Sandbox:
    """A pool of ``jobs`` worker processes.

    Args:
        jobs: number of worker processes.
        timeout: per-case timeout in seconds; past it the worker is killed (``hang``).
        memory_limit: per-worker address-space limit in bytes (RLIMIT_AS); None for none.
        max_tasks: cases (and calls) a worker runs before it is replaced (0: never); with
            ``batch`` above 1, tasks of a batch count as ``batch`` cases each.
        max_rss_growth: a worker's resident-size growth in bytes past its warm-up size that
            replaces its pool (None: never); see :mod:`fuzzer.execution.worker`.
        edges: collect each case's edges of the target's own code into
            ``CaseResult.edges`` (workers of a coverage build are spawned, not forked).
        sanitizer: run the workers under a sanitizer runtime (and the target's sanitize
            build): they fork from a fork server started through its wrapper (the runtime
            loaded, onnx, onnxruntime and the build imported once, so a worker a sanitizer
            halts is replaced in milliseconds), with no address-space limit (ASan reserves
            terabytes of shadow memory); a worker a sanitizer halts gives an Outcome of
            status ``"sanitizer"`` with the report.
        start_method: how workers start (``multiprocessing`` start methods; None: fork,
            spawn for a coverage build, the fork server for a sanitize build). A process
            with threads of its own that may hold locks at any time (a Ray actor's) uses
            ``"forkserver"``: workers fork from a single-threaded server that imported
            :data:`fuzzer.execution.preload.FORKSERVER_PRELOAD` once.
        batch: cases per worker task in :meth:`submit_many` at most (pebble's traffic and
            the callbacks are paid once per task); each case keeps its own timeout (an
            alarm in the worker) and its own stage, so a death is still the case's own.
        preload: modules the cases need, imported here before forked workers start (e.g.
            :data:`CASE_PRELOAD`), so that every new worker inherits them.

    ``submit`` returns a Future that always resolves to a :class:`CaseResult`, never to an
    exception of the case's making. :attr:`recycled` counts pools replaced for growth;
    :attr:`probes` is the workers' shared account of the ``slow`` oracle's scaling
    probes (:class:`fuzzer.execution.scaling.ProbeAccount`: their share holds across
    worker replacement).
    """

    def __init__(self, jobs: int = 1, timeout: float = DEFAULT_TIMEOUT,
                 memory_limit: int | None = DEFAULT_MEMORY_LIMIT, max_tasks: int = MAX_TASKS,
                 max_rss_growth: int | None = MAX_RSS_GROWTH,
                 edges: EdgeSetup | None = None, start_method: str | None = None,
                 sanitizer: SanitizerRuntime | None = None, batch: int = 1,
                 preload: Sequence[str] = ()) -> None:
        # fork: workers inherit the imports made here (replacing a dead worker costs
        # milliseconds) and scripts need no ``if __name__ == "__main__"`` guard; workers of
        # a coverage build start afresh (spawn), since they import another copy of the target
        method = start_method or ("spawn" if edges is not None and edges.build is not None
                                  else "forkserver" if sanitizer is not None else "fork")
        self.sanitizer = sanitizer
        if sanitizer is not None:
            sanitizer.install()
            memory_limit = None
        if method == "forkserver":
            multiprocessing.set_forkserver_preload(list(FORKSERVER_PRELOAD))
        context = multiprocessing.get_context(method)
        self.jobs, self.timeout, self.batch = jobs, timeout, max(1, batch)
        self.death_rate = 0.0  # running share of cases whose worker died (or hung)
        self.finished = 0  # cases that ended (a result or a judged death), for progress
        # each worker's temporary files live in a folder of its own under this one, removed
        # when a worker dies and, whole, on close: a case killed mid-way leaves nothing
        # behind; those of sandboxes whose owner was killed before its close go now
        self.scratch = scratch_folders.new_scratch()
        self._slots = StageSlots(context.Array("b", jobs * _SLOTS_PER_JOB, lock=False))
        self._lock = threading.Lock()
        from fuzzer.execution.scaling import ProbeAccount
        from fuzzer.execution.worker import Recycling  # imported once, inherited by workers

        if method == "fork":
            import_before_fork(preload)

        tasks = max_tasks and max(1, max_tasks // self.batch)  # pebble counts tasks

        self.probes = ProbeAccount(jobs, context)  # outlives the pools and their workers

        def make_pool() -> ProcessPool:
            # each pool has its own retire flag: the old pool's workers, draining, no longer
            # speak for the new one
            self._recycling = Recycling(timeout, max_rss_growth, context.Value("b", 0),
                                        self.probes)
            return ProcessPool(max_workers=jobs, max_tasks=tasks, initializer=_init,
                               initargs=(self._slots.stages, memory_limit, self._recycling,
                                         edges, sanitizer, self.scratch),
                               context=context)

        self._make_pool = make_pool
        self._pool = self._make_pool()
        self._pool_lock = threading.Lock()
        self._draining: dict[ProcessPool, threading.Thread] = {}  # replaced pools finishing
        self.restarts = self.recycled = 0
        self._recent: collections.deque[float] = collections.deque()
        self._outstanding: set[Future] = set()
        self._moved: set[Future] = set()  # cancelled to run on a recycled pool's successor
        self._closed = False

    @property
    def alive(self) -> bool:
        """Whether the pool can still run cases: not closed, and pebble's pool is running (its
        manager threads alive) or can be rebuilt. Futures of a dead pool never resolve."""
        if self._closed:
            return False
        return self._healthy_pool().active

    def _may_restart(self) -> bool:
        now = time.monotonic()
        while self._recent and now - self._recent[0] > RESTART_WINDOW:
            self._recent.popleft()
        return len(self._recent) < MAX_RESTARTS

    def _healthy_pool(self) -> ProcessPool:
        """The pool to schedule on, rebuilt where pebble broke it. Pebble marks a pool broken
        when a worker dies before the pool registered the task it had taken (a target that
        crashes at once, many times over); the sandbox's own job is to survive crashes, so it
        starts a new pool, at most :data:`MAX_RESTARTS` times a :data:`RESTART_WINDOW`."""
        with self._pool_lock:
            pool = self._pool
            if pool.active or self._closed or not self._may_restart():
                return pool
            self.restarts += 1
            self._recent.append(time.monotonic())
            with self._lock:
                lost = list(self._outstanding)
            for task in lost:  # their results can no longer come: run them again
                task.cancel()
            # stopped beside the caller: the caller may be one of the old pool's own threads
            threading.Thread(target=pool.stop, name="sandbox-stop", daemon=True).start()
            self._pool = self._make_pool()
            return self._pool

    def submit(self, case: TestCase) -> Future[CaseResult]:
        """Schedule ``case``; blocks while ``jobs * 256`` cases are already in flight.

        Raises:
            SandboxError: the pool no longer runs (closed, or pebble's pool failed).
        """
        return self._submit(case, retried=False)

    def _submit(self, case: TestCase, retried: bool) -> Future[CaseResult]:
        (slot,) = slots = self._slots.take(1, 0)
        future: Future[CaseResult] = Future()
        task = self._schedule(_execute, (case, slot), self.timeout, slots)
        task.add_done_callback(lambda done: self._finish(done, case, slot, future, retried))
        return future

    def _schedule(self, function: Callable[..., Any], args: tuple, timeout: float,
                  slots: list[int]) -> Future:
        """pebble's task of ``function(*args)``, counted outstanding.

        Raises:
            SandboxError: the pool no longer runs (``slots`` are given back).
        """
        pool = self._healthy_pool()
        try:
            task = pool.schedule(function, args=args, timeout=timeout)
        except RuntimeError as exc:  # pebble: "The Pool is not active", or its error state
            self._slots.release(slots)
            raise SandboxError(f"the worker pool is not running: {exc}") from None
        with self._lock:
            self._outstanding.add(task)
        if pool is not self._pool:  # replaced meanwhile (by another thread), before this
            task.cancel()  # task was counted: cancelled, it runs again on the new pool
        return task

    def submit_many(self, cases: Sequence[TestCase]) -> list[Future[CaseResult]]:
        """Schedule ``cases`` in tasks of up to :attr:`batch` cases each (fewer while
        workers die often: :meth:`batch_size`); one Future per case, in
        order, each resolving as :meth:`submit`'s. A batch whose worker dies or hangs gives
        the death to the case that was running (its stage in the shared array) and runs
        its other cases again as a batch (one per task where no case could be blamed: an
        unknown death, a slow start, a reference run to repeat first). Blocks while
        ``jobs * 256`` cases are in flight.

        Raises:
            SandboxError: the pool no longer runs (closed, or pebble's pool failed).
        """
        size = self.batch_size()
        futures: list[Future[CaseResult]] = []
        for start in range(0, len(cases), size):
            chunk = list(cases[start:start + size])
            futures += self._submit_batch(chunk) if len(chunk) > 1 \
                else [self._submit(chunk[0], retried=False)]
        return futures

    def batch_size(self) -> int:
        """Cases per task now: :attr:`batch` at most, fewer as workers die more often, so
        that the expected deaths per batch (:attr:`death_rate` times its size) stay within
        :data:`MAX_DEAD_BATCHES`: one case per task once a tenth of the cases kill their
        worker."""
        if self.death_rate * self.batch <= MAX_DEAD_BATCHES:
            return self.batch
        return max(1, int(MAX_DEAD_BATCHES / self.death_rate))

    def _submit_batch(self, cases: list[TestCase]) -> list[Future[CaseResult]]:
        slots = self._slots.take(len(cases), PENDING)
        futures: list[Future[CaseResult]] = [Future() for _ in cases]
        task = self._schedule(_execute_batch, (cases, slots, self.timeout),
                              self.timeout * len(cases) + BATCH_SLACK, slots)
        task.add_done_callback(lambda done: self._finish_batch(done, cases, slots, futures))
        return futures

    def _settle(self, done: Future, slots: list[int]) -> bool:
        """Forget finished task ``done`` and give back its ``slots``; whether a recycling
        had cancelled it (to run on the new pool: not a retry)."""
        with self._lock:
            self._outstanding.discard(done)
            moved = done in self._moved
            self._moved.discard(done)
        self._slots.release(slots)
        return moved

    def _finish_batch(self, done: Future, cases: list[TestCase], slots: list[int],
                      futures: list[Future]) -> None:
        stages = [self._slots.stage(slot) for slot in slots]
        self._settle(done, slots)
        error = None if done.cancelled() else done.exception()
        if not done.cancelled() and error is None:
            self._count(len(cases), 0)
            if self._recycling.retire.value:
                self._recycle()
            for future, result in zip(futures, done.result(), strict=True):
                future.set_result(result)
            return
        # the case that was running takes the death; the others run again
        running = next((i for i, stage in enumerate(stages) if 0 <= stage < len(STAGES)),
                       None)
        culprit = running if isinstance(error, (FutureTimeout, ProcessExpired)) and \
            not unknown_death(error) else None
        death = None
        if culprit is not None:
            self._sweep()
            stage = STAGES[stages[culprit]]
            timed_out = isinstance(error, FutureTimeout) or \
                getattr(error, "exitcode", None) == -signal.SIGALRM
            death = Outcome("timeout", stage, timeout=self.timeout) if timed_out \
                else expired(error, stage, self.sanitizer)  # type: ignore[arg-type]
            if late_reference(cases[culprit], stage):  # again, its reference run first
                cases = [*cases[:culprit], reference_first(cases[culprit]),
                         *cases[culprit + 1:]]
                culprit = death = None
            elif timed_out and stage in PRE_TARGET_STAGES:  # a slow start: run it again too
                culprit = death = None
            self._count(1, 1)
        if self._recycling.retire.value:
            self._recycle()
        others = [(case, future) for i, (case, future) in enumerate(zip(cases, futures,
                                                                         strict=True))
                  if i != culprit]
        if culprit is not None and len(others) > 1:  # not to blame: a batch again, from a
            # thread of its own (a further death there gives up its own culprit)
            threading.Thread(target=self._rerun, args=(others,), name="sandbox-rerun",
                             daemon=True).start()
        else:  # on a closed sandbox, _retry ends the case as internal
            for case, future in others:
                self._retry_later(case, future, False)
        if culprit is not None and death is not None:
            self._resolve_death(cases[culprit], death, futures[culprit])

    def _count(self, cases: int, deaths: int) -> None:
        """Update :attr:`death_rate` with ``cases`` cases of which ``deaths`` died."""
        keep = (1 - DEATH_RATE_WEIGHT) ** cases
        self.death_rate = self.death_rate * keep + (1 - keep) * deaths / cases
        self.finished += cases

    def busy_stages(self) -> list[str]:
        """The stages (:data:`oracles.base.STAGES` names) the cases running now
        are in, for a progress display; empty while none runs."""
        return self._slots.busy()

    def run(self, case: TestCase) -> CaseResult:
        """Run ``case`` and wait for its result.

        Raises:
            SandboxError: the pool stopped before the case ended.
        """
        return self._wait(self.submit(case))

    def _wait(self, future: Future[T], pool: ProcessPool | None = None) -> T:
        """``future.result()``, polling the pool: a dead pool raises SandboxError instead of
        waiting forever, and so does ``pool``, the pool that holds ``future``'s task, once
        a broken pool was replaced by a new one (:class:`_PoolReplaced`: a task still queued
        in the old pool never runs)."""
        while True:
            try:
                return future.result(timeout=_POLL)
            except FutureTimeout:
                if future.done():  # the task's own timeout
                    raise
                if not self.alive:
                    raise SandboxError("the worker pool stopped") from None
                if pool is not None and pool is not self._pool and not pool.active:
                    raise _PoolReplaced from None

    def call(self, function: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """Run ``function(*args)`` in a worker and return its result.

        For any work on untrusted models that could crash or hang the caller: onnx's checker
        and shape inference, onnxruntime sessions. ``function`` and ``args`` must pickle.

        Raises:
            SandboxError: the worker died by a signal or outlived ``timeout`` seconds
                (default: the per-case timeout), or the pool stopped.
            Exception: whatever ``function`` raised.
        """
        for _ in range(CALL_ATTEMPTS):
            try:
                pool = self._healthy_pool()
                future = pool.schedule(function, args=args, timeout=timeout or self.timeout)
            except RuntimeError as exc:
                raise SandboxError(f"the worker pool is not running: {exc}") from None
            try:
                return self._wait(future, pool)
            except _PoolReplaced:
                continue  # its pool broke before it ran: once more on the new pool
            except FutureTimeout:
                self._sweep()
                raise SandboxError(f"{getattr(function, '__name__', 'call')}: no result "
                                   f"after {timeout or self.timeout:g} s") from None
            except (ProcessExpired, BrokenProcessPool) as exc:
                self._sweep()
                raise SandboxError(f"{getattr(function, '__name__', 'call')}: worker died "
                                   f"({exc})") from None
        raise SandboxError(f"{getattr(function, '__name__', 'call')}: the worker pool broke "
                           f"{CALL_ATTEMPTS} times before it ran")

    def _finish(self, done: Future, case: TestCase, slot: int, future: Future,
                retried: bool = False) -> None:
        stage = STAGES[self._slots.stage(slot)]
        moved = self._settle(done, [slot])
        error = None if done.cancelled() else done.exception()
        lost = done.cancelled() or isinstance(error, BrokenProcessPool) or unknown_death(error)
        # a timeout before the target ran (a slow start or reference run on a loaded machine)
        # would call the seed unusable: it runs once more first
        early = isinstance(error, FutureTimeout) and stage in PRE_TARGET_STAGES
        if isinstance(error, (FutureTimeout, ProcessExpired)) and not lost and \
                not self._closed and late_reference(case, stage):
            # it may be the target's doing: run it again, with its reference run first
            self._sweep()
            self._count(1, 1)
            self._retry_later(reference_first(case), future, retried)
            return
        if (lost or early) and (moved or not retried) and not self._closed:
            # the pool broke under the case, it was recycled before it started, or it timed
            # out before the target ran: run it (once more), off pebble's own thread
            self._retry_later(case, future, retried or not moved)
            return
        death: Outcome | None = None
        result: CaseResult | None = None
        try:
            result = done.result()
        except FutureTimeout:
            self._sweep()
            death = Outcome("timeout", stage, timeout=self.timeout)
        except ProcessExpired as exc:
            self._sweep()
            death = expired(exc, stage, self.sanitizer)
        except BaseException as exc:  # a bug of optfuzz itself, or an unpicklable result
            result = CaseResult([], f"internal: {type(exc).__name__}: {exc}", stage,
                                dict(case.source))
        if self._recycling.retire.value:
            self._recycle()
        self._count(1, death is not None)
        if death is not None:
            self._resolve_death(case, death, future)
            return
        future.set_result(result)

    def _resolve_death(self, case: TestCase, death: Outcome, future: Future) -> None:
        """Resolve ``future`` with the judged death of ``case``. Judged on this thread
        (pebble forks new workers from it: an import made on another thread meanwhile
        could leave its lock held in the child); the model is rebuilt for the bundle off
        this thread, in a worker of this pool."""
        result = judge_death(case, death)
        if result.findings:
            threading.Thread(target=self._with_artifacts, args=(case, result, future),
                             name="sandbox-rebuild", daemon=True).start()
        else:
            future.set_result(result)

    def _with_artifacts(self, case: TestCase, result: CaseResult, future: Future) -> None:
        """Resolve ``future`` with ``result`` (a dead worker's case) and the artifacts and
        provenance of its case (:meth:`_rebuild`)."""
        try:
            result.artifacts, provenance = self._rebuild(case)
            result.source.update(provenance)
        finally:  # the case must end whatever happened here
            future.set_result(result)

    def _rebuild(self, case: TestCase) -> tuple[Artifacts | None, dict[str, Any]]:
        """Materialize model and feeds of a case whose worker died again, for its bundle, in
        a worker of this pool (a mutated case's materialization runs onnx's checker and
        onnxruntime on the model, which never run in the calling process; and a child
        forked from the calling process, whose other threads may hold import locks, could
        wait forever on one). Returns the artifacts and the materializer's provenance (e.g.
        the mutators applied); ``(None, {})`` where that fails, kills the worker or outlives
        :data:`REBUILD_TIMEOUT`."""
        try:
            model, feeds, provenance = self.call(_materialize_elsewhere, case,
                                                 timeout=REBUILD_TIMEOUT)
        except Exception:
            return None, {}
        return Artifacts(case.model_bytes or model, None, feeds), provenance

    def _sweep(self) -> None:
        """Remove the temporary folders of workers that no longer run
        (:func:`fuzzer.execution.scratch.sweep_dead`)."""
        scratch_folders.sweep_dead(self.scratch)

    def _recycle(self) -> None:
        """Replace the pool one of whose workers outgrew ``max_rss_growth``: new cases go
        to a fresh pool, and so do the old pool's cases that have not started (cancelled
        there, they run again here: see :meth:`_finish`); the old pool finishes the cases
        and calls it is running and stops, on a thread of its own."""
        with self._pool_lock:
            if self._closed or not self._recycling.retire.value:
                return
            old, self._pool = self._pool, self._make_pool()
            self.recycled += 1
            drain = threading.Thread(target=self._drain, args=(old,), name="sandbox-drain",
                                     daemon=True)
            self._draining[old] = drain
        with self._lock:
            waiting = [task for task in self._outstanding if not task.running()]
            self._moved.update(waiting)
        for task in waiting:
            task.cancel()
        drain.start()

    def _drain(self, pool: ProcessPool) -> None:
        """Let a replaced pool finish its cases, then stop it and forget it (the one thread
        that joins it)."""
        pool.close()
        pool.join()
        with self._pool_lock:
            self._draining.pop(pool, None)

    def _rerun(self, pending: list[tuple[TestCase, Future]],
               submit: Callable[[list[TestCase]], list[Future[CaseResult]]] | None = None
               ) -> None:
        """Run the cases of the ``(case, future)`` pairs again through ``submit`` (None:
        :meth:`submit_many`, for the rest of a batch whose worker died in another of its
        cases) and resolve each future with its case's run; on a closed sandbox each ends
        as internal."""
        try:
            again = (submit or self.submit_many)([case for case, _ in pending])
        except SandboxError as exc:
            for case, future in pending:
                future.set_result(CaseResult([], f"internal: {exc}", "materialize",
                                             dict(case.source)))
            return
        for (_, future), rerun in zip(pending, again, strict=True):
            rerun.add_done_callback(lambda done, f=future: f.set_result(done.result()))

    def _retry_later(self, case: TestCase, future: Future, retried: bool) -> None:
        """:meth:`_retry` on a thread of its own (never on pebble's threads, which call the
        tasks' callbacks)."""
        threading.Thread(target=self._retry, args=(case, future, retried),
                         name="sandbox-retry", daemon=True).start()

    def _retry(self, case: TestCase, future: Future, retried: bool = True) -> None:
        """Run ``case`` again on a rebuilt pool and resolve ``future`` with that run
        (``retried``: it may not run a third time)."""
        self._rerun([(case, future)], lambda cases: [self._submit(cases[0], retried=retried)])

    def close(self) -> None:
        """Stop the workers (cases in flight are cancelled); calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        with self._pool_lock:
            draining = list(self._draining.items())
        for pool, drain in draining:  # their drain threads join them
            pool.stop()
            drain.join(timeout=_POLL * 30)
        self._pool.stop()
        self._pool.join()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.sanitizer is not None:
            release()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _init(stages: Any, memory_limit: int | None, recycling: Any,
          edges: EdgeSetup | None = None, sanitizer: SanitizerRuntime | None = None,
          scratch: str | None = None) -> None:
    from fuzzer.execution.worker import init_worker

    if scratch is not None:  # tempfile and child processes write under the worker's folder
        scratch_folders.enter(scratch)
    init_worker(stages, memory_limit, recycling, edges, sanitizer)


def _execute(case: TestCase, slot: int) -> CaseResult:
    from fuzzer.execution.worker import execute

    return execute(case, slot)


def _execute_batch(cases: list[TestCase], slots: list[int],
                   timeout: float) -> list[CaseResult]:
    from fuzzer.execution.worker import execute_batch

    return execute_batch(cases, slots, timeout)


#: seconds a dead worker's case may take to be materialized again.
REBUILD_TIMEOUT = 120.0


def _materialize_elsewhere(case: TestCase) -> tuple[bytes, Any, dict[str, Any]]:
    """``(model bytes, feeds, provenance)`` of ``case``, built in a worker."""
    from fuzzer.execution.pipeline import materialize_case

    model, feeds, mat = materialize_case(case)
    return model.SerializeToString(), feeds, dict(mat.provenance)
