"""A sandbox's pool of worker processes, kept running: pebble's pool
(:class:`fuzzer.execution.pool.ProcessPool`) started with the worker initializer and the
preloads of :mod:`fuzzer.execution.preload`, rebuilt when pebble marks it broken, replaced
when a worker's resident size grew too much (the old pool drains on a thread of its own), and
stopped on close with its workers' scratch folders (:mod:`fuzzer.execution.scratch`) and
sanitizer runtime.

The tasks it schedules are counted outstanding until settled, so that a replacement runs them
again on the new pool: a rebuild cancels every outstanding task (the broken pool never
returns their results), a recycling those that have not started (they are *moved*:
:meth:`ManagedPool.settle` says so, and their case is not yet retried).
"""

from __future__ import annotations

import collections
import multiprocessing
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from fuzzer.builds.sanitizer import SanitizerRuntime, release
from fuzzer.edges.setup import EdgeSetup
from fuzzer.execution import scratch as scratch_folders
from fuzzer.execution.pool import ProcessPool
from fuzzer.execution.preload import FORKSERVER_PRELOAD, import_before_fork

T = TypeVar("T")
#: rebuilds of a broken pebble pool within :data:`RESTART_WINDOW` seconds past which the
#: pool counts as dead (a broken pool that keeps breaking is not a crashing target).
MAX_RESTARTS = 20
RESTART_WINDOW = 60.0
POLL = 1.0  # seconds between checks that the pool still runs, while waiting
#: times :meth:`ManagedPool.run` schedules its function while the pool holding it breaks
#: first.
CALL_ATTEMPTS = 3


class SandboxError(RuntimeError):
    """A function run by :meth:`fuzzer.execution.sandbox.Sandbox.call` killed its worker or
    outlived the timeout, or the pool itself no longer runs (then no call or case can run
    in it)."""


class _PoolReplaced(Exception):
    """A waited-for task's pool broke and was replaced before the task ran."""


class ManagedPool:
    """``jobs`` worker processes that run functions (:meth:`schedule`, :meth:`run`), kept
    running until :meth:`close`.

    Args:
        jobs: number of worker processes.
        slots: length of the shared stage array the workers write into (:attr:`stages`).
        timeout: per-case timeout in seconds (bounds a worker's scaling probes).
        memory_limit: per-worker address-space limit in bytes (RLIMIT_AS); None for none
            (and none under a sanitizer).
        max_tasks: tasks a worker runs before pebble replaces it (0: never).
        max_rss_growth: a worker's resident-size growth in bytes past its warm-up size that
            replaces the pool (None: never).
        edges: the workers collect each case's edges (spawned for a coverage build).
        start_method: how workers start (None: fork, spawn for a coverage build, the fork
            server for a sanitizer); see :class:`fuzzer.execution.sandbox.Sandbox`.
        sanitizer: a runtime installed here (it stops any fork server started before it)
            and released on :meth:`close`; its workers fork from a fork server.
        preload: modules imported here before forked workers start, beside
            :data:`fuzzer.execution.preload.FORK_PRELOAD`.

    :attr:`restarts` counts rebuilds of a broken pool, :attr:`recycled` replacements for
    growth; :attr:`probes` is the workers' shared account of scaling probes, which outlives
    the pools; :attr:`scratch` the folder under which each worker keeps its temporary files.

    Raises:
        OSError: the scratch folder cannot be made.
        ImportError: a module of ``preload`` cannot be imported.
    """

    def __init__(self, jobs: int, slots: int, *, timeout: float, memory_limit: int | None,
                 max_tasks: int, max_rss_growth: int | None, edges: EdgeSetup | None,
                 start_method: str | None, sanitizer: SanitizerRuntime | None,
                 preload: Sequence[str]) -> None:
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
        # each worker's temporary files live in a folder of its own under this one, removed
        # when a worker dies and, whole, on close: a case killed mid-way leaves nothing
        # behind; those of sandboxes whose owner was killed before its close go now
        self.scratch = scratch_folders.new_scratch()
        self.stages = context.Array("b", slots, lock=False)
        from fuzzer.execution.scaling import ProbeAccount
        from fuzzer.execution.worker import Recycling  # imported once, inherited by workers

        if method == "fork":
            import_before_fork(preload)

        self.probes = ProbeAccount(jobs, context)  # outlives the pools and their workers

        def make_pool() -> ProcessPool:
            # each pool has its own retire flag: the old pool's workers, draining, no longer
            # speak for the new one
            self._recycling = Recycling(timeout, max_rss_growth, context.Value("b", 0),
                                        self.probes)
            return ProcessPool(max_workers=jobs, max_tasks=max_tasks, initializer=_init,
                               initargs=(self.stages, memory_limit, self._recycling,
                                         edges, sanitizer, self.scratch),
                               context=context)

        self._make_pool = make_pool
        self._pool = self._make_pool()
        self._pool_lock = threading.Lock()
        self._lock = threading.Lock()
        self._draining: dict[ProcessPool, threading.Thread] = {}  # replaced pools finishing
        self.restarts = self.recycled = 0
        self._recent: collections.deque[float] = collections.deque()
        self._outstanding: set[Future] = set()
        self._moved: set[Future] = set()  # cancelled to run on a recycled pool's successor
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def current(self) -> ProcessPool:
        """The pebble pool new tasks go to (as it is: :meth:`healthy` rebuilds it)."""
        return self._pool

    @property
    def alive(self) -> bool:
        """Whether the pool can still run tasks: not closed, and pebble's pool is running (its
        manager threads alive) or can be rebuilt. Futures of a dead pool never resolve."""
        if self._closed:
            return False
        return self.healthy().active

    def _may_restart(self) -> bool:
        now = time.monotonic()
        while self._recent and now - self._recent[0] > RESTART_WINDOW:
            self._recent.popleft()
        return len(self._recent) < MAX_RESTARTS

    def healthy(self) -> ProcessPool:
        """The pool to schedule on, rebuilt where pebble broke it. Pebble marks a pool broken
        when a worker dies before the pool registered the task it had taken (a target that
        crashes at once, many times over); the sandbox's own job is to survive crashes, so it
        starts a new pool, at most :data:`MAX_RESTARTS` times a :data:`RESTART_WINDOW`. The
        outstanding tasks are cancelled: their results can no longer come."""
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

    def schedule(self, function: Callable[..., Any], args: tuple, timeout: float) -> Future:
        """pebble's task of ``function(*args)`` with a timeout of ``timeout`` seconds,
        counted outstanding until :meth:`settle`. A task scheduled on a pool that another
        thread replaced before the task was counted is cancelled, to run again on the new
        pool.

        Raises:
            SandboxError: the pool no longer runs.
        """
        pool = self.healthy()
        try:
            task = pool.schedule(function, args=args, timeout=timeout)
        except RuntimeError as exc:  # pebble: "The Pool is not active", or its error state
            raise SandboxError(f"the worker pool is not running: {exc}") from None
        with self._lock:
            self._outstanding.add(task)
        if pool is not self._pool:  # replaced meanwhile (by another thread), before this
            task.cancel()  # task was counted: cancelled, it runs again on the new pool
        return task

    def settle(self, done: Future) -> bool:
        """Forget finished task ``done``; whether a recycling had cancelled it (to run on
        the new pool: not a retry)."""
        with self._lock:
            self._outstanding.discard(done)
            moved = done in self._moved
            self._moved.discard(done)
        return moved

    def recycle(self) -> None:
        """Replace the pool if one of its workers outgrew ``max_rss_growth``: new tasks go
        to a fresh pool, and so do the old pool's outstanding tasks that have not started
        (cancelled there and *moved*: see :meth:`settle`); the old pool finishes the tasks
        it is running and stops, on a thread of its own. Does nothing otherwise."""
        if not self._recycling.retire.value:
            return
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
        """Let a replaced pool finish its tasks, then stop it and forget it (the one thread
        that joins it)."""
        pool.close()
        pool.join()
        with self._pool_lock:
            self._draining.pop(pool, None)

    def wait(self, future: Future[T], pool: ProcessPool | None = None) -> T:
        """``future.result()``, polling the pool every :data:`POLL` seconds.

        Raises:
            SandboxError: the pool died (closed, or past its rebuilds) before ``future``
                resolved.
            _PoolReplaced: ``pool``, the pool that holds ``future``'s task, broke and was
                replaced by a new one (a task still queued in the old pool never runs).
            concurrent.futures.TimeoutError: the task outlived its own timeout.
            Exception: whatever ``future`` resolved to.
        """
        while True:
            try:
                return future.result(timeout=POLL)
            except FutureTimeout:
                if future.done():  # the task's own timeout
                    raise
                if not self.alive:
                    raise SandboxError("the worker pool stopped") from None
                if pool is not None and pool is not self._pool and not pool.active:
                    raise _PoolReplaced from None

    def run(self, function: Callable[..., T], args: tuple, timeout: float) -> T:
        """Run ``function(*args)`` in a worker, within ``timeout`` seconds, and return its
        result; not counted outstanding. A task whose pool broke before it ran is scheduled
        again on the new pool, :data:`CALL_ATTEMPTS` times at most.

        Raises:
            SandboxError: the pool no longer runs, or broke :data:`CALL_ATTEMPTS` times
                before the task ran.
            concurrent.futures.TimeoutError: the task outlived ``timeout``.
            pebble.ProcessExpired: the worker died.
            concurrent.futures.process.BrokenProcessPool: the pool broke under the task.
            Exception: whatever ``function`` raised.
        """
        for _ in range(CALL_ATTEMPTS):
            try:
                pool = self.healthy()
                future = pool.schedule(function, args=args, timeout=timeout)
            except RuntimeError as exc:
                raise SandboxError(f"the worker pool is not running: {exc}") from None
            try:
                return self.wait(future, pool)
            except _PoolReplaced:
                continue  # its pool broke before it ran: once more on the new pool
        raise SandboxError(f"{getattr(function, '__name__', 'call')}: the worker pool broke "
                           f"{CALL_ATTEMPTS} times before it ran")

    def sweep(self) -> None:
        """Remove the scratch folders of workers that no longer run
        (:func:`fuzzer.execution.scratch.sweep_dead`)."""
        scratch_folders.sweep_dead(self.scratch)

    def close(self) -> None:
        """Stop the workers (tasks in flight are cancelled), the draining pools' first, and
        remove the scratch folder; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        with self._pool_lock:
            draining = list(self._draining.items())
        for pool, drain in draining:  # their drain threads join them
            pool.stop()
            drain.join(timeout=POLL * 30)
        self._pool.stop()
        self._pool.join()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.sanitizer is not None:
            release()


def _init(stages: Any, memory_limit: int | None, recycling: Any,
          edges: EdgeSetup | None = None, sanitizer: SanitizerRuntime | None = None,
          scratch: str | None = None) -> None:
    """Worker initializer: temporary files under the worker's own folder in ``scratch``,
    then :func:`fuzzer.execution.worker.init_worker`."""
    from fuzzer.execution.worker import init_worker

    if scratch is not None:  # tempfile and child processes write under the worker's folder
        scratch_folders.enter(scratch)
    init_worker(stages, memory_limit, recycling, edges, sanitizer)
