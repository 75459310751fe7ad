"""Code that runs inside a worker process: set-up once, then many test cases.

Imported by the campaign before workers fork, so onnx, onnxruntime and the optimizers are
imported once per pool, not once per worker or per case.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import resource
import signal
from dataclasses import dataclass
from typing import Any

import numpy  # noqa: F401  (preloaded for the workers)
import onnx  # noqa: F401
import onnxruntime

from fuzzer.builds.sanitizer import SanitizerRuntime
from fuzzer.edges.collector import features
from fuzzer.edges.kinds import edge_kind
from fuzzer.edges.setup import EdgeCollector, EdgeSetup
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import release_free_memory, rss_bytes
from fuzzer.execution.pipeline import run_case
from fuzzer.execution.scaling import ProbeAccount, use_account
from fuzzer.execution.slots import ENDED
from oracles import load_oracles
from oracles.base import STAGES

#: cases a worker runs before its resident size is taken as its own baseline (onnxruntime's
#: arenas and the imports' caches are warm by then).
WARMUP_CASES = 20
#: cases between two looks at the resident size after warm-up.
RSS_EVERY = 10

_stages: Any = None
_recycling: Recycling | None = None
_cases = 0
_rss_base: int | None = None
_edges: EdgeCollector | None = None


@dataclass
class Recycling:
    """What a worker knows of its limits beyond the address space.

    Attributes:
        timeout: the per-case timeout in seconds (bounds a case's scaling probe).
        rss_growth: resident-size growth in bytes past the warm-up baseline at which the
            worker asks to be replaced (None: never).
        retire: a shared flag (``multiprocessing.Value``) the worker sets to 1 to ask the
            sandbox to replace its pool (:meth:`fuzzer.execution.managed_pool.ManagedPool.recycle`).
        probes: the sandbox's account of scaling probes, shared by its workers
            (:class:`fuzzer.execution.scaling.ProbeAccount`; None: the worker's own).
    """

    timeout: float | None = None
    rss_growth: int | None = None
    retire: Any = None
    probes: ProbeAccount | None = None


def init_worker(stages: Any, memory_limit: int | None,
                recycling: Recycling | None = None, edges: EdgeSetup | None = None,
                sanitizer: SanitizerRuntime | None = None) -> None:
    """Worker initializer: remember the shared stage array and the recycling limits; cap the
    address space at ``memory_limit`` bytes (RLIMIT_AS); silence onnxruntime; leave Ctrl-C
    to the campaign; with ``edges``, import the coverage build and collect each case's
    edges; with ``sanitizer``, import the target's sanitize build. Everything the worker
    inherited or imported here is frozen (``gc.freeze``): the worker's full collections no
    longer traverse the campaign process's objects, nor write to (and so copy) their pages
    (on the throughput benchmark's cases, 0.025 ms of collection per case, now 0.001)."""
    global _stages, _recycling, _edges
    _stages, _recycling = stages, recycling
    if recycling is not None and recycling.probes is not None:
        use_account(recycling.probes)
    if sanitizer is not None:
        sanitizer.activate()
    if edges is not None:
        edges.activate()
        _edges = edge_kind(edges.kind).collector(edges)
    faulthandler.disable()  # a signal here is an outcome to record, not a crash to dump
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the campaign, not a case
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # a batch's case past its timeout
    if memory_limit:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    onnxruntime.set_default_logger_severity(4)  # fatal only: errors are findings
    load_oracles()
    gc.freeze()


def execute(case: TestCase, slot: int) -> CaseResult:
    """Run ``case``; announce each stage in ``stages[slot]`` (its index in STAGES)."""
    stages = _stages

    def hook(stage: str) -> None:
        if stages is not None:
            stages[slot] = STAGES.index(stage)

    if _edges is not None:
        _edges.start()
    timeout = _recycling.timeout if _recycling is not None else None
    result = run_case(case, hook, case.timeout or timeout)
    if _edges is not None:
        result.edges = features(_edges.collect())
    _watch_growth()
    return result


def execute_batch(cases: list[TestCase], slots: list[int],
                  limits: list[float]) -> list[CaseResult]:
    """Run ``cases`` one after the other, each announcing its stages in its own slot and
    marked ended there (:data:`fuzzer.execution.slots.ENDED`) once its result is made.
    Each case has its limit of ``limits`` (seconds): past them the kernel ends this worker
    by SIGALRM (an alarm with no handler, which fires inside native code too), and the
    sandbox reads from the slots which case it was."""
    results = []
    for case, slot, limit in zip(cases, slots, limits, strict=True):
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            results.append(execute(case, slot))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if _stages is not None:
            _stages[slot] = ENDED
    return results


def _watch_growth() -> None:
    """After warm-up, every :data:`RSS_EVERY` cases: ask for replacement where the resident
    size grew past the limit (a leak in the target must not grow without bound)."""
    global _cases, _rss_base
    limits = _recycling
    if limits is None or not limits.rss_growth or limits.retire is None:
        return
    _cases += 1
    if _cases == WARMUP_CASES:
        _rss_base = rss_bytes()
    elif _rss_base is not None and _cases % RSS_EVERY == 0:
        now = rss_bytes()
        if now is not None and now - _rss_base > limits.rss_growth:
            release_free_memory()  # a large model's free pages are no leak
            now = rss_bytes()
            if now is not None and now - _rss_base > limits.rss_growth:
                limits.retire.value = 1
