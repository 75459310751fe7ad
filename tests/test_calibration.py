"""A campaign's generated cases get a time limit calibrated from their own run times: a case
past it frees its worker at once and is a hang candidate only, which the whole per-case
timeout confirms (a slow case that finishes there is no hang)."""

from __future__ import annotations

import pytest

from fuzzer.campaign import calibration
from fuzzer.campaign.calibration import CaseTimeLimit
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import FindingPolicy
from fuzzer.store.folder import BundleStore
from tests.conftest import unary_chain_model


def _generated(seconds: float) -> tuple[TestCase, CaseResult]:
    case = TestCase("fake", {"passes": ["clean"]}, {"kind": "generated", "seed": 0})
    return case, CaseResult([], None, "compare", {}, timings={"optimize": seconds})


def test_the_limit_is_ten_times_the_99th_percentile_between_floor_and_timeout():
    """In whole seconds, and steady against small changes."""
    limit = CaseTimeLimit(timeout=30.0)
    for _ in range(calibration.WARMUP - 1):
        limit.observe(*_generated(0.01))
    assert limit.limit is None  # warming up: the whole timeout
    case, _ = _generated(0.0)
    assert limit.apply(case) is case
    assert limit.observe(*_generated(0.01))
    assert limit.limit == calibration.FLOOR  # 10 * 0.01 s is below the floor
    assert limit.apply(case).timeout == calibration.FLOOR
    for _ in range(calibration.WINDOW):
        limit.observe(*_generated(0.55))
    assert limit.limit == calibration.FLOOR  # 6 s is within a quarter of 5 s: it stays
    for _ in range(calibration.WINDOW):
        limit.observe(*_generated(1.2))
    assert limit.limit == 12.0
    for _ in range(calibration.WINDOW):
        limit.observe(*_generated(4.0))
    assert limit.limit is None  # 40 s: no shorter than the whole timeout


def test_only_generated_cases_that_ran_to_their_end_count_and_get_the_limit():
    limit = CaseTimeLimit(timeout=30.0)
    corpus = TestCase("fake", {}, {"kind": "corpus", "model": "m"})
    for _ in range(calibration.WARMUP):
        limit.observe(corpus, CaseResult([], None, "compare", {}, timings={"optimize": 0.01}))
        limit.observe(_generated(0.0)[0], CaseResult([], None, "optimize", {}))  # a death
        limit.observe(_generated(0.0)[0],
                      CaseResult([], "reference: no model", "reference", {},
                                 timings={"reference": 0.01}))
    assert limit.limit is None
    for _ in range(calibration.WARMUP):
        limit.observe(*_generated(0.01))
    assert limit.limit == calibration.FLOOR
    assert limit.apply(corpus) is corpus


@pytest.mark.parametrize("batched", [False, True])
def test_a_case_of_its_own_limit_ends_at_it_as_a_hang(batched):
    """Single and batched submission: the worker's alarm and the hang's message take the
    case's own limit, not the sandbox's timeout."""
    model = unary_chain_model().SerializeToString()
    hang = TestCase("fake", {"passes": ["hang"]}, {"kind": "bytes"}, model_bytes=model,
                    timeout=1.0)
    clean = TestCase("fake", {"passes": ["clean"]}, {"kind": "bytes"}, model_bytes=model,
                     timeout=1.0)
    with Sandbox(jobs=1, timeout=60.0, batch=2 if batched else 1) as box:
        if batched:
            futures = box.submit_many([clean, hang])
            first, result = (future.result(timeout=120) for future in futures)
            assert not first.findings
        else:
            result = box.run(hang)
    (finding,) = result.findings
    assert finding.symptom == "hang" and finding.detail["timeout_s"] == 1.0
    assert finding.message.startswith("no result after 1 s")


def test_a_candidate_is_judged_at_the_whole_timeout(tmp_path):
    """A case past its calibrated limit: a real hang becomes a bundle whose message gives
    the whole timeout; a case that finishes within it (``pause``) is not recorded."""
    from fuzzer.handling.record import handle_finding

    model = unary_chain_model().SerializeToString()
    store = BundleStore(tmp_path)
    with Sandbox(jobs=1, timeout=2.5) as box:
        paused = TestCase("fake", {"passes": ["pause"]}, {"kind": "bytes"}, model_bytes=model,
                          timeout=0.5)
        found = box.run(paused)
        assert [f.symptom for f in found.findings] == ["hang"]
        handled = handle_finding(store, box, paused, found, "1.0", FindingPolicy())
        assert handled.status == "unconfirmed" and store.ids() == []
        hang = TestCase("fake", {"passes": ["hang"]}, {"kind": "bytes"}, model_bytes=model,
                        timeout=0.5)
        found = box.run(hang)
        handled = handle_finding(store, box, hang, found, "1.0",
                                 FindingPolicy(reduce_seconds=0))
    assert handled.status == "new" and handled.bundle_id.startswith("hang-")
    meta = (tmp_path / handled.bundle_id / "meta.json").read_text()
    assert "no result after 2.5 s" in meta and "no result after 0.5 s" not in meta
