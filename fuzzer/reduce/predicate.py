"""The reducer's question, "does this candidate still fail the same way?", and its budget.

:class:`Predicate` holds what every check shares: a cache keyed by the hash of the model and
its feeds, a count of real runs, the time budget, and the validity gate (a candidate that
onnx.checker with ``full_check`` rejects is never run, so every accepted step is a valid
model). Concrete predicates live in :mod:`fuzzer.reduce.signature_check` (optfuzz's sandbox)
and :mod:`fuzzer.reduce.command_check` (an external ``--check`` command, as in Polygraphy).

A predicate with :attr:`Predicate.parallel` above 1 runs that many checks at once in threads
(each waits on a child process: an external command, or a sandbox worker): a step submits
several candidates (:meth:`Predicate.submit`, :meth:`Predicate.map`) and reads their verdicts
as they come. Caching and the budget stay in the caller's thread; the validity gate runs in
the check's thread, so candidates are validated side by side too.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from fuzzer.reduce.candidate import Built

#: checks a predicate with :attr:`Predicate.parallel` above 1 may run beyond it for
#: speculative candidates (:meth:`Predicate.speculate`). A check that turns out needed saves
#: a whole round of checks, and one more process than cores costs less than a round: with
#: ``benchmarks/reduce_checker.py`` on 2 cores, one check took 0.29 s, two at once 0.37 to
#: 0.40 s, three at once 0.55 to 0.65 s.
SPECULATIVE = 1


class OutOfTime(Exception):
    """The reduction's time budget is spent; the caller keeps the best candidate so far."""


class Cutoff:
    """A moment (``time.monotonic()``, seconds) past which every :class:`Budget` made with
    this cutoff has expired, however long its own: a campaign that is ending sets it when
    its grace period is over, so that the reduction and trigger probes at hand end with what
    they have found so far. Shared by reference (threads of one process); never cut until
    :meth:`cut`.

    Attributes:
        at: the moment (infinity until cut).
    """

    def __init__(self) -> None:
        self.at = math.inf

    def cut(self, at: float | None = None) -> None:
        """Set the moment to ``at`` (None: now), where that is earlier than the one set."""
        self.at = min(self.at, time.monotonic() if at is None else at)

    def left(self) -> float:
        """Seconds until the moment (infinity until cut; negative once past)."""
        return self.at - time.monotonic()


class Budget:
    """A deadline ``seconds`` (wall clock, seconds) from now, or the moment of ``cutoff``
    (:class:`Cutoff`) where that comes first."""

    def __init__(self, seconds: float, cutoff: Cutoff | None = None) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + seconds
        self.cutoff = cutoff

    def left(self) -> float:
        """Seconds left (negative once expired)."""
        deadline = self.deadline if self.cutoff is None else min(self.deadline, self.cutoff.at)
        return deadline - time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the budget started."""
        return time.monotonic() - self.start


def fingerprint(built: Built) -> str:
    """sha256 hex digest of a candidate's serialized model and feeds (sequence and optional
    feeds as :func:`fuzzer.execution.stage_driver.pack_values` lays them out)."""
    from fuzzer.execution.stage_driver import pack_values

    digest = hashlib.sha256(built.model.SerializeToString())
    feeds = pack_values(built.feeds)
    for name in sorted(feeds):
        value = feeds[name]
        digest.update(f"|{name}|{value.dtype}|{value.shape}|".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def is_valid(model: object) -> bool:
    """Whether onnx.checker (``full_check``: strict shape inference too) accepts ``model``.

    The checker can abort its process on hostile models: call it in a sandbox worker
    (:func:`sandboxed_validator`), never in a campaign's own process.
    """
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:
        return False
    return True


def valid_bytes(data: bytes) -> bool:
    """:func:`is_valid` of a serialized model (picklable, for ``Sandbox.call``)."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    return is_valid(model)


def sandboxed_validator(sandbox: Any) -> Callable[[Any], bool]:
    """A validity gate that runs the checker in ``sandbox``'s workers; a worker that dies
    or hangs on a candidate counts as invalid."""
    from fuzzer.execution.sandbox import SandboxError

    def validate(model: Any) -> bool:
        try:
            return sandbox.call(valid_bytes, model.SerializeToString())
        except SandboxError:
            return False

    return validate


def assume_valid(model: Any) -> bool:
    """A gate for predicates whose runs check validity themselves (in the worker)."""
    return True


class Predicate:
    """Base of the reducer's predicates: ``predicate(built) -> bool`` (True = still fails
    the same way).

    Args:
        budget: the reduction's :class:`Budget`.
        validate: the validity gate; a candidate it rejects is never run (default: the
            checker in this process, for tests and trusted models).
        parallel: checks that may run at once (threads calling :meth:`run`; 1 runs each
            check in the caller's thread). A subclass with ``parallel > 1`` must make
            :meth:`run` thread-safe.

    Raises (from ``__call__``, :meth:`submit`, :meth:`map`):
        OutOfTime: the budget expired before the candidate could be run.
    """

    def __init__(self, budget: Budget, validate: Callable[[Any], bool] = is_valid,
                 parallel: int = 1) -> None:
        self.budget = budget
        self.validate = validate
        self.parallel = max(1, parallel)
        self.runs = 0
        self._cache: dict[str, Future[bool]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._runs_lock = threading.Lock()

    def __call__(self, built: Built | None) -> bool:
        return self.submit(built).result()

    def submit(self, built: Built | None) -> Future[bool]:
        """Start checking ``built`` (None: a candidate that could not be built, False);
        a cached or invalid candidate, or any candidate when :attr:`parallel` is 1, comes
        back already decided."""
        if built is None:
            return decided(False)
        key = fingerprint(built)
        if key in self._cache:
            return self._cache[key]
        if self.parallel == 1:
            if not self.validate(built.model):
                future = self._cache[key] = decided(False)
                return future
            if self.budget.left() <= 0:
                raise OutOfTime
            self.runs += 1
            future = decided(self.run(built, key))
        else:  # the validity gate runs in the check's thread too, beside the other checks
            if self.budget.left() <= 0:
                raise OutOfTime
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.parallel + SPECULATIVE, "optfuzz-check")
            future = self._pool.submit(self._gated_run, built, key)
        self._cache[key] = future
        return future

    def _gated_run(self, built: Built, key: str) -> bool:
        """:meth:`run` of a candidate the validity gate accepts (False for one it rejects),
        counted in :attr:`runs`."""
        if not self.validate(built.model):
            return False
        with self._runs_lock:
            self.runs += 1
        return self.run(built, key)

    def map(self, builts: Sequence[Built | None]) -> list[bool]:
        """Verdicts of ``builts`` (in order), up to :attr:`parallel` checks at once."""
        futures = [self.submit(built) for built in builts]
        return [future.result() for future in futures]

    def busy(self) -> int:
        """Checks running or waiting for a thread now."""
        return sum(not f.done() for f in self._cache.values())

    def free(self) -> int:
        """Checks that could start now without waiting (at least 1)."""
        return max(1, self.parallel - self.busy())

    def speculate(self, builts: Sequence[Built | None]) -> None:
        """Start checking, in order, candidates that a later step will probably ask about,
        on the checks free now plus :data:`SPECULATIVE`; their verdicts wait in the cache
        for that step. Cached candidates take no check; a predicate that checks one
        candidate at a time (in the caller's thread) starts none.

        Raises:
            OutOfTime: the budget expired before a candidate could be started.
        """
        if self.parallel == 1:
            return
        room = self.parallel + SPECULATIVE - self.busy()
        for built in builts:
            if room <= 0:
                break
            known = len(self._cache)
            self.submit(built)
            room -= len(self._cache) > known  # a cached (or unbuilt) candidate takes none

    def run(self, built: Built, key: str) -> bool:
        """Run the check on a valid candidate; ``key`` is its fingerprint."""
        raise NotImplementedError

    def close(self) -> None:
        """Cancel the checks not yet started and wait for the running ones (speculative
        checks whose verdicts nobody asked for); no candidate may be submitted after it."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def decided(verdict: bool) -> Future[bool]:
    """A future already holding ``verdict``."""
    future: Future[bool] = Future()
    future.set_result(verdict)
    return future
