"""A case whose reference run outlives its timeout (slowed by a loaded machine) runs once more
before its seed is called unusable: after the target, the reference run comes first in the
second run, and a timeout there is run once more again."""

from __future__ import annotations

import time

from fuzzer.execution import stage_driver
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from tests.conftest import unary_chain_model


def _case() -> TestCase:
    # a changed model: an unchanged one needs no reference run at all
    return TestCase("fake", {"passes": ["drop-node"]}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString())


def test_a_reference_run_that_stalls_once_is_run_again(monkeypatch, tmp_path):
    marker = tmp_path / "stalled-once"
    real = stage_driver.run_session

    def stall_the_first_time(session, feeds):  # inherited by the forked workers
        if not marker.exists():
            marker.touch()
            time.sleep(60)
        return real(session, feeds)

    monkeypatch.setattr(stage_driver, "run_session", stall_the_first_time)
    with Sandbox(jobs=1, timeout=2.0) as box:
        result = box.run(_case())
    assert marker.exists()
    assert result.unusable is None and result.stage == "compare"
    assert [f.symptom for f in result.findings] == ["output-mismatch"]


def test_a_reference_run_that_always_stalls_makes_the_seed_unusable(monkeypatch):
    def stall(session, feeds):
        time.sleep(60)

    monkeypatch.setattr(stage_driver, "run_session", stall)
    with Sandbox(jobs=1, timeout=1.0) as box:
        result = box.run(_case())
    assert result.unusable == "reference: worker timeout" and not result.findings
