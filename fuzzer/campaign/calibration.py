"""The time limit of a campaign's generated cases, calibrated from the campaign's own case
times, so that a worker stuck in a hang is freed after seconds rather than after the whole
per-case timeout.

A generated case of most targets takes milliseconds (onnxslim: 35 ms on average, 0.3 s at the
99th percentile, 2.7 s at most over 1,500 cases of seed 0), while the per-case timeout
(``--timeout``, 30 s) must leave room for large corpus models. In a 10-minute onnxslim
campaign of two workers, ten cases of one hang held a worker for 30 s each: a quarter of the
campaign's worker time. So, as AFL++ calibrates its execution timeout from the run times of
its seeds and keeps the longer hang timeout for confirming a hang (LibAFL's
``VerifyTimeoutsStage`` runs a timed-out input again at a longer limit too):

- after :data:`WARMUP` generated cases, each generated case gets the limit
  ``clamp(ceil(FACTOR * p99), FLOOR, timeout)`` in whole seconds, where ``p99`` is the 99th
  percentile of the last :data:`WINDOW` generated cases' run times (seconds), kept where a
  new one is within :data:`STEADY` of it;
- a case past that limit is a hang candidate only: the slow finding thread runs it again at the
  whole timeout (:func:`fuzzer.handling.determinism.confirmed`), and only a case that hangs
  there too is a hang; one that finishes ends as ``unconfirmed``;
- corpus and mutated cases keep the whole timeout: their models differ too much in size for
  one limit.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import deque

import numpy as np

from fuzzer.execution.case import CaseResult, TestCase

#: generated cases whose times are seen before any case gets a calibrated limit.
WARMUP = 200
#: the run times the limit is computed from: those of the last this many generated cases.
WINDOW = 2000
#: the limit, in multiples of the window's 99th-percentile run time.
FACTOR = 10.0
#: the lowest calibrated limit, seconds: a generated case's load, a cold cache or a busy
#: machine must not make it a hang candidate.
FLOOR = 5.0
#: the limit is computed again after this many new run times.
EVERY = 50
#: a new limit within this share of the one in force leaves it as it is (a limit that
#: wavers around the floor would change, and be logged, every few seconds).
STEADY = 0.25
#: source kinds whose cases get the calibrated limit.
CALIBRATED_KINDS = frozenset({"generated"})


class CaseTimeLimit:
    """The calibrated time limit (seconds) of a campaign's generated cases.

    Thread-safe: results are observed and cases drawn on different threads.

    Args:
        timeout: the campaign's per-case timeout in seconds (``--timeout``): the limit never
            exceeds it.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._times: deque[float] = deque(maxlen=WINDOW)
        self._seen = 0
        self._limit: float | None = None
        self._lock = threading.Lock()

    @property
    def limit(self) -> float | None:
        """The calibrated limit in seconds; None before :data:`WARMUP` generated cases ran,
        or where it would not be below the whole timeout."""
        return self._limit

    def apply(self, case: TestCase) -> TestCase:
        """``case`` with the calibrated limit as its ``timeout`` where it is of a calibrated
        kind and a limit is known; else ``case`` itself."""
        limit = self._limit
        if limit is None or case.source.get("kind") not in CALIBRATED_KINDS:
            return case
        return dataclasses.replace(case, timeout=limit)

    def observe(self, case: TestCase, result: CaseResult) -> bool:
        """Count the run time of a finished ``case`` (the sum of ``result.timings``, seconds)
        where it is of a calibrated kind and ran to its end (usable; a worker's death or hang
        has no timings);
        whether the limit changed."""
        if case.source.get("kind") not in CALIBRATED_KINDS or result.unusable or \
                not result.timings:
            return False
        with self._lock:
            self._times.append(float(sum(result.timings.values())))
            self._seen += 1
            if self._seen < WARMUP or self._seen % EVERY:
                return False
            p99 = float(np.percentile(np.fromiter(self._times, float), 99))
            limit = min(self.timeout, max(FLOOR, math.ceil(round(FACTOR * p99, 6))))
            new = None if limit >= self.timeout else float(limit)
            if new is not None and self._limit is not None and \
                    abs(new - self._limit) < self._limit * STEADY:
                return False
            changed, self._limit = new != self._limit, new
            return changed
