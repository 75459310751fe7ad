"""A task whose worker dies before pebble reads its acknowledgement ends as the worker's
death (fuzzer.execution.pool), not at its timeout (pebble issue #153)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout

import pebble
import pytest
from pebble import ProcessExpired
from pebble.pool.process import Acknowledgement

from fuzzer.execution.pool import ProcessPool

TIMEOUT = 5.0  # the dying task's timeout (s): where pebble alone ends it


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _exit_zero() -> None:
    os._exit(0)


def _race(pool: pebble.ProcessPool) -> BaseException | None:
    """Make the race: one worker busy, then a task whose worker dies while its
    acknowledgement waits a second unread; the dying task's error."""
    manager = pool._pool_manager.worker_manager
    receive, late = manager.receive, threading.Event()

    def slow_receive(timeout: float):  # the campaign process busy elsewhere
        message = receive(timeout)
        if late.is_set() and isinstance(message, Acknowledgement):
            time.sleep(1.0)
        return message

    manager.receive = slow_receive
    busy = pool.schedule(_sleep, args=(TIMEOUT + 3,))
    while not busy.running():
        time.sleep(0.05)
    late.set()
    dying = pool.schedule(_die, timeout=TIMEOUT)
    return dying.exception(timeout=TIMEOUT * 4)


@pytest.fixture
def fork():
    return multiprocessing.get_context("fork")


def test_pebble_alone_waits_the_timeout(fork):
    """The race is real: pebble's own pool ends the task only at its timeout."""
    with pebble.ProcessPool(max_workers=2, context=fork) as pool:
        error = _race(pool)
        pool.stop()
    assert isinstance(error, FutureTimeout), \
        f"pebble {pebble.__version__} no longer orphans the task: fuzzer.execution.pool can go"


def test_orphaned_task_ends_as_its_workers_death(fork):
    with ProcessPool(max_workers=2, context=fork) as pool:
        error = _race(pool)
        pool.stop()
    assert isinstance(error, ProcessExpired)
    assert error.exitcode == -signal.SIGKILL


def test_pool_still_runs_tasks(fork):
    """Live workers' tasks are untouched: results come back as pebble's."""
    with ProcessPool(max_workers=2, context=fork) as pool:
        results = [pool.schedule(_sleep, args=(0.01,)) for _ in range(20)]
        assert [r.result(timeout=30) for r in results] == ["slept"] * 20


def test_a_worker_that_exits_with_status_zero_ends_its_task(fork):
    """pebble does not count an exit with status 0 as a death: its task waits out its
    timeout there, and ends at once here, with the exit code."""
    with pebble.ProcessPool(max_workers=1, context=fork) as pool:
        alone = pool.schedule(_exit_zero, timeout=TIMEOUT).exception(timeout=TIMEOUT * 4)
        pool.stop()
    with ProcessPool(max_workers=1, context=fork) as pool:
        error = pool.schedule(_exit_zero, timeout=TIMEOUT).exception(timeout=TIMEOUT * 4)
        pool.stop()
    assert isinstance(alone, FutureTimeout)
    assert isinstance(error, ProcessExpired) and error.exitcode == 0
