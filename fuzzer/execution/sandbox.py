"""Sandboxed execution of test cases in long-lived worker processes: the scheduling of cases
and batches on a pool of workers (:mod:`fuzzer.execution.managed_pool`, pebble's pool kept
running).

Each worker imports onnx, onnxruntime and the target once and runs many cases. A case that
kills its worker (a signal) or outlives the per-case timeout is turned into an Outcome with the
stage the worker had announced in its slot (:mod:`fuzzer.execution.slots`), judged by the
oracles (:mod:`fuzzer.execution.deaths`), and the worker is replaced; the optimizer never runs
in the calling process. Cases a dead worker took with it, or that a replaced pool never ran,
run again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from pebble import ProcessExpired

from fuzzer.builds.sanitizer import SanitizerRuntime
from fuzzer.edges.setup import EdgeSetup
from fuzzer.execution.case import Artifacts, CaseResult, TestCase, full_limit
from fuzzer.execution.deaths import (
    PRE_TARGET_STAGES,
    expired,
    judge_death,
    late_reference,
    reference_first,
    unknown_death,
)
from fuzzer.execution.managed_pool import ManagedPool, SandboxError
from fuzzer.execution.preload import CASE_PRELOAD
from fuzzer.execution.slots import PENDING, StageSlots
from oracles.base import STAGES, Outcome

__all__ = ["CASE_PRELOAD", "DEFAULT_MEMORY_LIMIT", "DEFAULT_TIMEOUT", "MAX_DEAD_BATCHES",
           "MAX_RSS_GROWTH", "MAX_TASKS", "Sandbox", "SandboxError", "late_reference",
           "reference_first"]

T = TypeVar("T")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY_LIMIT = 4 << 30
_SLOTS_PER_JOB = 256
#: cases one worker runs before pebble replaces it (pebble's ``max_tasks``), so that a leak
#: in the target cannot grow without bound; a forked replacement costs milliseconds.
MAX_TASKS = 2000
#: resident-size growth of a worker (bytes) past its warm-up size at which its pool is
#: replaced: new cases go to a fresh pool, the old one finishes what it holds and stops.
MAX_RSS_GROWTH = 256 << 20
#: a batch's task outlives the sum of its cases' timeouts by this much (seconds) before
#: pebble kills its worker; each case's own timeout is the worker's alarm.
BATCH_SLACK = 10.0
#: weight of one case in the sandbox's running rate of worker deaths.
DEATH_RATE_WEIGHT = 0.02
#: expected deaths per batch the batch size keeps within (:meth:`Sandbox.batch_size`): a
#: death re-runs the batch's other cases one by one, so a target that crashes often gets
#: smaller batches, and one per task at a death rate of a tenth.
MAX_DEAD_BATCHES = 0.1
#: seconds a dead worker's case may take to be materialized again.
REBUILD_TIMEOUT = 120.0
#: times the materialization of a dead worker's case is tried where the pool's workers die
#: under it (another case's crash breaks the pool and cancels what it ran).
REBUILD_ATTEMPTS = 3


class Sandbox:
    """A pool of ``jobs`` worker processes that run cases and calls.

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
    exception of the case's making. :attr:`restarts` counts rebuilds of a broken pool,
    :attr:`recycled` pools replaced for growth; :attr:`probes` is the workers' shared account
    of the ``slow`` oracle's scaling probes (:class:`fuzzer.execution.scaling.ProbeAccount`:
    their share holds across worker replacement); :attr:`scratch` is the folder under which
    each worker keeps its temporary files (:mod:`fuzzer.execution.scratch`).

    Raises:
        OSError: the scratch folder cannot be made.
        ImportError: a module of ``preload`` cannot be imported.
    """

    def __init__(self, jobs: int = 1, timeout: float = DEFAULT_TIMEOUT,
                 memory_limit: int | None = DEFAULT_MEMORY_LIMIT, max_tasks: int = MAX_TASKS,
                 max_rss_growth: int | None = MAX_RSS_GROWTH,
                 edges: EdgeSetup | None = None, start_method: str | None = None,
                 sanitizer: SanitizerRuntime | None = None, batch: int = 1,
                 preload: Sequence[str] = ()) -> None:
        self.sanitizer = sanitizer
        self.jobs, self.timeout, self.batch = jobs, timeout, max(1, batch)
        self.death_rate = 0.0  # running share of cases whose worker died (or hung)
        self.finished = 0  # cases that ended (a result or a judged death), for progress
        tasks = max_tasks and max(1, max_tasks // self.batch)  # pebble counts tasks
        self._workers = ManagedPool(
            jobs, jobs * _SLOTS_PER_JOB, timeout=timeout, memory_limit=memory_limit,
            max_tasks=tasks, max_rss_growth=max_rss_growth, edges=edges,
            start_method=start_method, sanitizer=sanitizer, preload=preload)
        self._slots = StageSlots(self._workers.stages)
        self.scratch = self._workers.scratch
        self.probes = self._workers.probes

    @property
    def alive(self) -> bool:
        """Whether the pool can still run cases: not closed, and pebble's pool is running (its
        manager threads alive) or can be rebuilt. Futures of a dead pool never resolve."""
        return self._workers.alive

    @property
    def restarts(self) -> int:
        """Rebuilds of a pool pebble marked broken."""
        return self._workers.restarts

    @property
    def recycled(self) -> int:
        """Pools replaced for a worker's resident-size growth."""
        return self._workers.recycled

    def submit(self, case: TestCase) -> Future[CaseResult]:
        """Schedule ``case``; blocks while ``jobs * 256`` cases are already in flight.

        Raises:
            SandboxError: the pool no longer runs (closed, or pebble's pool failed).
        """
        return self._submit(case, retried=False)

    def _submit(self, case: TestCase, retried: bool) -> Future[CaseResult]:
        (slot,) = slots = self._slots.take(1, 0)
        future: Future[CaseResult] = Future()
        task = self._schedule(_execute, (case, slot), self.limit(case), slots)
        task.add_done_callback(lambda done: self._finish(done, case, slot, future, retried))
        return future

    def limit(self, case: TestCase) -> float:
        """The time limit of ``case`` in seconds: its own (``TestCase.timeout``) where below
        the per-case timeout, else the per-case timeout."""
        return self.timeout if case.timeout is None else min(case.timeout, self.timeout)

    def _schedule(self, function: Callable[..., Any], args: tuple, timeout: float,
                  slots: list[int]) -> Future:
        """The pool's task of ``function(*args)`` (:meth:`ManagedPool.schedule`), with a
        timeout of ``timeout`` seconds.

        Raises:
            SandboxError: the pool no longer runs (``slots`` are given back).
        """
        try:
            return self._workers.schedule(function, args, timeout)
        except SandboxError:
            self._slots.release(slots)
            raise

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
        limits = [self.limit(case) for case in cases]
        task = self._schedule(_execute_batch, (cases, slots, limits),
                              sum(limits) + BATCH_SLACK, slots)
        task.add_done_callback(lambda done: self._finish_batch(done, cases, slots, futures))
        return futures

    def _settle(self, done: Future, slots: list[int]) -> bool:
        """Forget finished task ``done`` and give back its ``slots``; whether a recycling
        had cancelled it (to run on the new pool: not a retry)."""
        moved = self._workers.settle(done)
        self._slots.release(slots)
        return moved

    def _finish_batch(self, done: Future, cases: list[TestCase], slots: list[int],
                      futures: list[Future]) -> None:
        stages = [self._slots.stage(slot) for slot in slots]
        self._settle(done, slots)
        error = None if done.cancelled() else done.exception()
        if not done.cancelled() and error is None:
            self._count(len(cases), 0)
            self._workers.recycle()
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
            self._workers.sweep()
            stage = STAGES[stages[culprit]]
            timed_out = isinstance(error, FutureTimeout) or \
                getattr(error, "exitcode", None) == -signal.SIGALRM
            death = Outcome("timeout", stage, timeout=self.limit(cases[culprit])) \
                if timed_out else expired(error, stage, self.sanitizer)  # type: ignore[arg-type]
            if late_reference(cases[culprit], stage):  # again, its reference run first
                cases = [*cases[:culprit], reference_first(cases[culprit]),
                         *cases[culprit + 1:]]
                culprit = death = None
            elif timed_out and stage in PRE_TARGET_STAGES:  # a slow start: run it again too,
                # within the whole timeout
                cases = [*cases[:culprit], full_limit(cases[culprit]), *cases[culprit + 1:]]
                culprit = death = None
            self._count(1, 1)
        self._workers.recycle()
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
        return self._workers.wait(self.submit(case))

    def call(self, function: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """Run ``function(*args)`` in a worker and return its result.

        For any work on untrusted models that could crash or hang the caller: onnx's checker
        and shape inference, onnxruntime sessions. ``function`` and ``args`` must pickle.

        Raises:
            SandboxError: the worker died by a signal or outlived ``timeout`` seconds
                (default: the per-case timeout), or the pool stopped.
            Exception: whatever ``function`` raised.
        """
        timeout = timeout or self.timeout
        name = getattr(function, "__name__", "call")
        try:
            return self._workers.run(function, args, timeout)
        except FutureTimeout:
            self._workers.sweep()
            raise SandboxError(f"{name}: no result after {timeout:g} s") from None
        except (ProcessExpired, BrokenProcessPool) as exc:
            self._workers.sweep()
            raise SandboxError(f"{name}: worker died ({exc})") from None

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
                not self._workers.closed and late_reference(case, stage):
            # it may be the target's doing: run it again, with its reference run first
            self._workers.sweep()
            self._count(1, 1)
            self._retry_later(reference_first(case), future, retried)
            return
        if (lost or early) and (moved or not retried) and not self._workers.closed:
            # the pool broke under the case, it was recycled before it started, or it timed
            # out before the target ran: run it (once more), off pebble's own thread
            self._retry_later(full_limit(case) if early else case, future, retried or not moved)
            return
        death: Outcome | None = None
        result: CaseResult | None = None
        try:
            result = done.result()
        except FutureTimeout:
            self._workers.sweep()
            death = Outcome("timeout", stage, timeout=self.limit(case))
        except ProcessExpired as exc:
            self._workers.sweep()
            death = expired(exc, stage, self.sanitizer)
        except BaseException as exc:  # a bug of optfuzz itself, or an unpicklable result
            result = CaseResult([], f"internal: {type(exc).__name__}: {exc}", stage,
                                dict(case.source))
        self._workers.recycle()
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
        provenance of its case (:meth:`_rebuild`); where no artifacts could be made, the
        result's ``source["artifacts_lost"]`` says why (its finding cannot be recorded)."""
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
        wait forever on one). A worker that dies under it, or a pool that breaks under it
        (another case's crash), costs one of :data:`REBUILD_ATTEMPTS` tries. Returns the
        artifacts and the materializer's provenance (e.g. the mutators applied); ``(None,
        {"artifacts_lost": why})`` where the materializer raises, every try's worker died
        or it outlives :data:`REBUILD_TIMEOUT` seconds."""
        why = ""
        for _ in range(REBUILD_ATTEMPTS):
            try:
                model, feeds, provenance = self._workers.run(_materialize_elsewhere, (case,),
                                                             REBUILD_TIMEOUT)
            except (ProcessExpired, BrokenProcessPool, CancelledError) as exc:
                self._workers.sweep()  # not the case's doing: once more
                why = f"its worker died ({type(exc).__name__}: {exc})"
                continue
            except FutureTimeout:
                self._workers.sweep()
                return None, {"artifacts_lost": f"no model after {REBUILD_TIMEOUT:g} s"}
            except Exception as exc:  # the materializer's own error, or a stopped pool
                return None, {"artifacts_lost": f"{type(exc).__name__}: {exc}"}
            return Artifacts(case.model_bytes or model, None, feeds), provenance
        return None, {"artifacts_lost": f"{why}, {REBUILD_ATTEMPTS} times"}

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
        self._workers.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _execute(case: TestCase, slot: int) -> CaseResult:
    from fuzzer.execution.worker import execute

    return execute(case, slot)


def _execute_batch(cases: list[TestCase], slots: list[int],
                   limits: list[float]) -> list[CaseResult]:
    from fuzzer.execution.worker import execute_batch

    return execute_batch(cases, slots, limits)


def _materialize_elsewhere(case: TestCase) -> tuple[bytes, Any, dict[str, Any]]:
    """``(model bytes, feeds, provenance)`` of ``case``, built in a worker."""
    from fuzzer.execution.pipeline import materialize_case

    model, feeds, mat = materialize_case(case)
    return model.SerializeToString(), feeds, dict(mat.provenance)
