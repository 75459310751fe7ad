"""Worker recycling: a worker is replaced after a bounded number of cases (pebble's
``max_tasks``) and its pool after a bounded growth of its resident size, so that a leak in
the target cannot grow without bound; no case is lost either way."""

from __future__ import annotations

import os

import pytest

from fuzzer.execution import worker
from fuzzer.execution.case import TestCase
from fuzzer.execution.memory import rss_bytes
from fuzzer.execution.sandbox import Sandbox
from fuzzer.targets.fake import LEAK_BYTES
from tests.conftest import unary_chain_model


def leak_cases(count: int) -> list[TestCase]:
    model = unary_chain_model().SerializeToString()
    return [TestCase("fake", {"passes": ["leak"]}, {"kind": "bytes"}, model_bytes=model)
            for _ in range(count)]


def test_a_worker_is_replaced_after_max_tasks_cases():
    with Sandbox(jobs=1, timeout=10.0, max_tasks=4) as box:
        pids = [box.call(os.getpid) for _ in range(12)]
        verdicts = [box.run(case) for case in leak_cases(3)]
    assert len(set(pids)) >= 3 and all(pids.count(p) <= 4 for p in set(pids))
    assert all(v.unusable is None and not v.findings for v in verdicts)


@pytest.fixture
def quick_watch(monkeypatch):
    """Workers look at their resident size from the second case on, after every case
    (forked workers inherit these settings)."""
    monkeypatch.setattr(worker, "WARMUP_CASES", 2)
    monkeypatch.setattr(worker, "RSS_EVERY", 1)


def test_a_leaking_target_gets_its_pool_replaced_and_no_case_is_lost(quick_watch):
    bound = 8 * LEAK_BYTES
    with Sandbox(jobs=1, timeout=10.0, max_tasks=0, max_rss_growth=bound) as box:
        futures = [box.submit(case) for case in leak_cases(40)]
        verdicts = [f.result(timeout=120) for f in futures]
        recycled = box.recycled
        rss = rss_bytes(box.call(os.getpid))
    assert len(verdicts) == 40
    assert all(v.unusable is None and not v.findings for v in verdicts)
    assert recycled >= 2  # 40 leaks of 2 MiB against a bound of 16 MiB past warm-up
    assert rss is not None


def test_without_the_bound_the_same_leak_keeps_one_worker(quick_watch):
    with Sandbox(jobs=1, timeout=10.0, max_tasks=0, max_rss_growth=None) as box:
        first = box.call(os.getpid)
        before = rss_bytes(first)
        for case in leak_cases(20):
            assert box.run(case).unusable is None
        assert box.call(os.getpid) == first and box.recycled == 0
        assert rss_bytes(first) - before >= 10 * LEAK_BYTES  # the leak is real
