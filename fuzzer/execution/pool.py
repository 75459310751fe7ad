"""pebble's ProcessPool, without its orphaned tasks.

pebble (5.x) learns which worker runs a task from the worker's acknowledgement, read by one
of its threads, and learns of a worker's death from another thread, which looks up the task
that worker was running. When a worker takes a task and dies before the first thread has read
its acknowledgement (a target that crashes in the first case of a batch, while the campaign
process is busy), the death finds no task and is forgotten; the acknowledgement, read later,
ties the task to a worker that no longer exists, and the task waits out its whole timeout
(pebble issue #153, "task never completes on process pool"). For a batch of 32 cases
that is sixteen minutes of a worker's share of the campaign lost.

:class:`ProcessPool` here fails such a task at once, as pebble fails a task whose worker died
while it knew of it: with ``ProcessExpired`` and the worker's exit code. So it does for a
worker that exits with status 0 in the middle of a task (a target calling ``_exit(0)``), an
end pebble does not count as a death, so that its task too waited out its timeout.

Why a subclass of pebble's ``PoolManager``, and the pin ``pebble>=5.1,<6``: pebble 5.2.3, the
latest release the package index lists (``pip index versions pebble``), still has the race,
and its public API (``ProcessPool``, ``ProcessFuture``, ``ProcessExpired``) gives a caller
nothing to end such a task with: a future does not say which worker runs its task, and the
pool does not say when a worker ends, nor with which exit code. ``PoolManager`` and its
``update_workers``/``update_status`` are pebble's internals (``pebble.pool.process``), read in
the 5.x series, hence the pin. What would let this module go, as a request to pebble, either
of:

- the fix: the pool manager keeps the exit codes of the workers that ended (status 0 in the
  middle of a task included) for the acknowledgements still to come, and fails a task
  acknowledged by, or running on, a worker that is no longer alive with
  ``ProcessExpired(code=<its exit code>)``;
- a public hook: ``ProcessPool(..., on_worker_exit=callback(pid, exitcode))``, called for
  every worker that ends, and ``ProcessFuture.pid``, the worker running the task once it has
  started, so that a caller can end such a task itself (pebble already ends a cancelled
  running task once it may stop the task's worker, and a worker already gone counts as
  stopped).
"""

from __future__ import annotations

import collections
import os
from typing import Any

from pebble import ProcessExpired
from pebble import ProcessPool as PebbleProcessPool
from pebble.common import Result, ResultStatus
from pebble.pool.process import PoolManager, dictionary_values

#: exit codes of the workers that ended, kept for the acknowledgements that may still come
#: from them (oldest forgotten first).
REMEMBERED_DEATHS = 256


class _PoolManager(PoolManager):
    """pebble's pool manager, which also ends the tasks of workers it saw die unannounced."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.deaths: collections.OrderedDict[int, int] = collections.OrderedDict()

    def update_workers(self) -> None:
        """pebble's, remembering the exit code of every worker that ended (pebble keeps only
        the non-zero ones, and only where it finds their task)."""
        before = dict(self.worker_manager.workers)
        super().update_workers()
        for pid, process in before.items():
            if pid not in self.worker_manager.workers and process.exitcode is not None:
                self.deaths[pid] = process.exitcode
        while len(self.deaths) > REMEMBERED_DEATHS:
            self.deaths.popitem(last=False)

    def update_status(self) -> None:
        """pebble's, then: a started task whose worker is neither in the pool nor alive
        ends with ``ProcessExpired`` and the worker's exit code (None where this manager
        did not see it end: a worker pebble stopped itself)."""
        super().update_status()
        workers = self.worker_manager.workers
        for task in dictionary_values(self.task_manager.tasks):
            worker = task.worker_id
            if not worker or worker in workers or process_exists(worker):
                continue
            error = ProcessExpired("Abnormal termination", code=self.deaths.pop(worker, None),
                                   pid=worker)
            self.task_manager.task_done(task.id, Result(ResultStatus.ERROR, error))


def process_exists(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie, dead but not yet reaped, still does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


class ProcessPool(PebbleProcessPool):
    """``pebble.ProcessPool`` (same arguments) whose tasks never outlive their worker: a
    task whose worker died unseen ends within pebble's polling period (0.1 s) with
    ``ProcessExpired``, not at its timeout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pool_manager = _PoolManager(self._context, self._pool_manager.worker_manager
                                          .mp_context)
