"""The reducer's question, "does this candidate still fail the same way?", and its budget.

:class:`Predicate` holds what every check shares: a cache keyed by the hash of the model and
its feeds, a count of real runs, the time budget, and the validity gate (a candidate that
onnx.checker with ``full_check`` rejects is never run, so every accepted step is a valid
model). Concrete predicates live in :mod:`fuzzer.reduce.signature_check` (optfuzz's sandbox)
and :mod:`fuzzer.reduce.command_check` (an external ``--check`` command, as in Polygraphy).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from fuzzer.reduce.candidate import Built


class OutOfTime(Exception):
    """The reduction's time budget is spent; the caller keeps the best candidate so far."""


class Budget:
    """A deadline ``seconds`` (wall clock, seconds) from now."""

    def __init__(self, seconds: float) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + seconds

    def left(self) -> float:
        """Seconds left (negative once expired)."""
        return self.deadline - time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the budget started."""
        return time.monotonic() - self.start


def fingerprint(built: Built) -> str:
    """sha256 hex digest of a candidate's serialized model and feeds."""
    digest = hashlib.sha256(built.model.SerializeToString())
    for name in sorted(built.feeds):
        value = built.feeds[name]
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

    Raises (from ``__call__``):
        OutOfTime: the budget expired before the candidate could be run.
    """

    def __init__(self, budget: Budget, validate: Callable[[Any], bool] = is_valid) -> None:
        self.budget = budget
        self.validate = validate
        self.runs = 0
        self._cache: dict[str, bool] = {}

    def __call__(self, built: Built | None) -> bool:
        if built is None:
            return False
        key = fingerprint(built)
        if key in self._cache:
            return self._cache[key]
        if not self.validate(built.model):
            self._cache[key] = False
            return False
        if self.budget.left() <= 0:
            raise OutOfTime
        self.runs += 1
        verdict = self._cache[key] = self.run(built, key)
        return verdict

    def run(self, built: Built, key: str) -> bool:
        """Run the check on a valid candidate; ``key`` is its fingerprint."""
        raise NotImplementedError
