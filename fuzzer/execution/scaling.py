"""The scaling probe, run inside a worker: the target's time on the same model at three sizes
a factor 2 apart, for the ``slow`` oracle (:mod:`oracles.slow`, which documents the
threshold and the series layout).

The sizes come from the model's longest run of repeated blocks
(:mod:`fuzzer.modelio.repeat`), three a factor 2 apart: the smallest is the largest of 4,
8, 16, ... blocks on which the optimizer (the least of three runs) takes at least three times
the oracle's smallest time and whose probe fits half the budget (larger sizes show the
growth more clearly), and the largest stays within double the model's own size (four
times where the case asks for the probe). Each size runs :data:`oracles.slow.REPEATS`
times, the sizes interleaved, so that a burst of load on a shared machine touches every
size alike, and that many times again, up to twice, while the minima do not pass the
oracle's threshold (more repeats bring the minima closer to the undisturbed times, whichever
way they lead). Each repeat also times a reference session build and run of that size and,
for a pass list that is not empty, the same size with no pass (the target's own load and
save). Timings that outrun the budget stop the probe (a first batch cut short judges
nothing); the workers of a sandbox spend at most :data:`PROBE_SHARE` of their time on probes
no case asked for (asked ones count too), in one :class:`ProbeAccount` they share, so that a
worker replaced after its bounded number of cases does not start with a fresh allowance.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from fuzzer.execution.reference import make_session, run_session
from fuzzer.modelio.repeat import Run, find_run, rescale
from oracles.slow import MIN_TIMED, REPEATS, growth, superlinear

#: most seconds a probe may spend (also bounded by half the time a case has left); a probe
#: that outruns it stops and judges nothing.
PROBE_SECONDS = 60.0
#: share of the workers' time that probes no case asked for may take, so that a target slow
#: on every model (a constant start-up cost) cannot stall a campaign.
PROBE_SHARE = 0.1
#: how much longer than the oracle's :data:`oracles.slow.MIN_TIMED` the smallest size must
#: take in the search, so that the minimum of its repeats stays above it.
_TIMED_MARGIN = 3.0
#: the block count the search for the smallest size starts from.
_FIRST_COUNT = 4
#: more batches of repeats where the first does not pass the threshold (a noisy machine):
#: the minima over more repeats come closer to the undisturbed times, whichever way.
_MORE_BATCHES = 2


class ProbeAccount:
    """Seconds that ``workers`` processes spent on scaling probes, against the time since
    the account was opened: they may probe unasked while those seconds are at most
    :data:`PROBE_SHARE` of ``workers`` times that time (asked probes always run, and leave
    less room for unasked ones).

    Made by a sandbox before its workers start and handed to each of them (and to those
    that replace them), so the share holds across worker replacement (a worker lives about
    ten seconds of a campaign, about one probe). With ``context`` None the account is this
    process's own (a run outside a sandbox).

    Args:
        workers: the processes that share the account (a sandbox's ``jobs``).
        context: a ``multiprocessing`` context whose shared memory holds the account, or
            None.
    """

    def __init__(self, workers: int = 1, context: Any = None) -> None:
        self.workers = max(1, workers)
        self.opened = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process
        self._spent = context.Array("d", [0.0]) if context is not None else [0.0]
        self._lock = self._spent.get_lock() if context is not None else \
            contextlib.nullcontext()

    @property
    def spent(self) -> float:
        """Seconds spent on probes so far, by every process of the account."""
        return float(self._spent[0])

    def may_probe(self) -> bool:
        """Whether the processes are within their share now."""
        return self._spent[0] <= PROBE_SHARE * self.workers * (time.monotonic() - self.opened)

    def spend(self, seconds: float) -> None:
        """Count ``seconds`` of a probe."""
        with self._lock:
            self._spent[0] += seconds


_account = ProbeAccount()


def use_account(account: ProbeAccount) -> None:
    """Count this process's probes in ``account`` (a worker's initializer passes its
    sandbox's)."""
    global _account
    _account = account


def smallest_count(run: Run, top: int, time_count: Any, budget: float) -> int | None:
    """The block count of the smallest size: of 4, 8, 16, ... blocks (four times it within
    ``top`` blocks), the largest on which the optimizer (``time_count(count)``, seconds)
    takes at least :data:`_TIMED_MARGIN` times :data:`oracles.slow.MIN_TIMED` and whose
    probe, predicted by quadratic growth, fits half of ``budget`` seconds (the other half
    is for more batches), else the first that takes that long; None where none does.
    Larger sizes show the growth more clearly (a linear part weighs less); each doubling
    of the search costs about a quarter of the one after it."""
    count, chosen = min(_FIRST_COUNT, run.count), None
    while count * 4 <= top:
        seconds = time_count(count)
        if seconds >= _TIMED_MARGIN * MIN_TIMED:
            if chosen is not None and _predicted(seconds) > budget / 2:
                break
            chosen = count
            if _predicted(4 * seconds) > budget / 2:  # the next doubling would not fit
                break
        count *= 2
    return chosen


def _predicted(seconds: float) -> float:
    """Seconds of one batch of a probe whose smallest size takes ``seconds``: three sizes
    at quadratic growth, each also with no pass, :data:`oracles.slow.REPEATS` times."""
    return REPEATS * 2 * seconds * (1 + 4 + 16)


def _timed(function: Any, *args: Any) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def _reference(model_bytes: bytes, feeds: dict[str, Any]) -> None:
    run_session(make_session(model_bytes), feeds)


def may_probe(asked: bool) -> bool:
    """Whether this process may probe now: always where the case asks, else while the
    probes of its :class:`ProbeAccount` are within :data:`PROBE_SHARE`."""
    return asked or _account.may_probe()


def scaling_series(target: Any, config: dict[str, Any], model: Any, feeds: dict[str, Any],
                   budget: float, asked: bool,
                   nodes: int | None = None) -> list[dict[str, Any]] | None:
    """The series :func:`oracles.slow.judge_growth` judges (layout in :mod:`oracles.slow`),
    or None where the model has no run of repeated blocks, no size is slow enough to time,
    or the timings outran ``budget`` seconds.

    Args:
        target: the target adapter; config: its configuration.
        model: the case's ``onnx.ModelProto``; feeds: its input feeds (every size takes
            them: the graph inputs do not change).
        budget: seconds the probe may take.
        asked: the case asked for the probe (the sizes may then reach four times the
            model's).
        nodes: where the case asked, the main-graph node count the sizes may reach
            instead, where that is more (``TestCase.growth_nodes``).

    Raises:
        Exception: whatever the target or onnxruntime raise on a scaled model.
    """
    started = time.monotonic()
    try:
        return _series(target, config, model, feeds, budget, asked, started, nodes)
    finally:
        _account.spend(time.monotonic() - started)


def _series(target: Any, config: dict[str, Any], model: Any, feeds: dict[str, Any],
            budget: float, asked: bool, started: float,
            nodes: int | None) -> list[dict[str, Any]] | None:
    run = find_run(model.graph)
    if run is None:
        return None
    top = run.count * (4 if asked else 2)
    if asked and nodes:  # the run's blocks alone may reach the node count
        top = max(top, nodes // run.period)
    empty = target.with_passes(config, [])
    no_passes = not target.passes_of(config)

    def one_round(scaled: Any, data: bytes) -> tuple[float, float, float]:
        optimize = _timed(target.optimize, scaled, config)
        baseline = optimize if no_passes else _timed(target.optimize, scaled, empty)
        return optimize, baseline, _timed(_reference, data, feeds)

    def time_count(count: int) -> float:  # the least of three: load only ever adds time
        scaled = rescale(model, run, count)
        return min(_timed(target.optimize, scaled, config) for _ in range(3))

    first = smallest_count(run, top, time_count, budget)
    if first is None:
        return None
    sizes = []
    for count in (first, 2 * first, 4 * first):
        scaled = rescale(model, run, count)
        sizes.append((count, scaled, scaled.SerializeToString()))
    rows = [{"blocks": c, "nodes": len(m.graph.node), "optimize_s": [], "reference_s": [],
             "baseline_s": []} for c, m, _ in sizes]
    for batch in range(1 + _MORE_BATCHES):
        begun = time.monotonic()
        for _ in range(REPEATS):
            for row, (_, scaled, data) in zip(rows, sizes, strict=True):
                if time.monotonic() - started > budget:
                    return rows if batch else None
                optimize, baseline, reference = one_round(scaled, data)
                row["optimize_s"].append(optimize)
                row["baseline_s"].append(baseline)
                row["reference_s"].append(reference)
        took = time.monotonic() - begun
        if superlinear(growth(rows)) or time.monotonic() - started + took > budget:
            break
    return rows
