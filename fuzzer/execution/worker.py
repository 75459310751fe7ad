"""Code that runs inside a worker process: set-up once, then many test cases.

Imported by the campaign before workers fork, so onnx, onnxruntime and the optimizers are
imported once per pool, not once per worker or per case.
"""

from __future__ import annotations

import contextlib
import faulthandler
import resource
import signal
from typing import Any

import numpy  # noqa: F401  (preloaded for the workers)
import onnx  # noqa: F401
import onnxruntime

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.pipeline import run_case
from oracles import load_oracles
from oracles.base import STAGES

_stages: Any = None


def init_worker(stages: Any, memory_limit: int | None) -> None:
    """Worker initializer: remember the shared stage array; cap the address space at
    ``memory_limit`` bytes (RLIMIT_AS); silence onnxruntime; leave Ctrl-C to the campaign."""
    global _stages
    _stages = stages
    faulthandler.disable()  # a signal here is an outcome to record, not a crash to dump
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the campaign, not a case
    if memory_limit:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    onnxruntime.set_default_logger_severity(4)  # fatal only: errors are findings
    load_oracles()


def execute(case: TestCase, slot: int) -> CaseResult:
    """Run ``case``; announce each stage in ``stages[slot]`` (its index in STAGES)."""
    stages = _stages

    def hook(stage: str) -> None:
        if stages is not None:
            stages[slot] = STAGES.index(stage)

    return run_case(case, hook)
