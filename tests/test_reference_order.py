"""The target runs before the reference run (:mod:`fuzzer.execution.pipeline`): a model the
target returns unchanged costs no onnxruntime session, and a worker that dies in a reference
run after the target is not taken for an unusable seed before the case ran again with its
reference run first (:func:`fuzzer.execution.sandbox.late_reference`)."""

from __future__ import annotations

import os
import signal

from fuzzer.execution import stage_driver
from fuzzer.execution.case import TestCase
from fuzzer.execution.pipeline import run_case
from fuzzer.execution.sandbox import Sandbox
from fuzzer.targets.fake import FakeTarget
from oracles import load_oracles
from tests.conftest import unary_chain_model

BROKEN = "OPTFUZZ_TEST_TARGET_RAN"


def _case(passes: list[str], **fields) -> TestCase:
    return TestCase("fake", {"passes": passes}, {"kind": "bytes"},
                    model_bytes=unary_chain_model().SerializeToString(), **fields)


def _count_sessions(monkeypatch) -> list[bytes]:
    made: list[bytes] = []
    real = stage_driver.make_session

    def counted(model_bytes, *args):
        made.append(model_bytes)
        return real(model_bytes, *args)

    monkeypatch.setattr(stage_driver, "make_session", counted)
    return made


def test_an_unchanged_model_runs_in_no_session(monkeypatch):
    load_oracles()
    made = _count_sessions(monkeypatch)
    result = run_case(_case(["clean"]))
    assert result.changed is False and result.unusable is None and not result.findings
    assert made == [] and "reference" not in result.timings


def test_a_kept_unchanged_case_still_has_its_reference_outputs(monkeypatch):
    load_oracles()
    made = _count_sessions(monkeypatch)
    result = run_case(_case(["clean"], keep=True))
    assert len(made) == 1 and result.artifacts.expected is not None
    assert list(result.artifacts.expected) == ["y"]


def test_a_changed_model_runs_the_original_after_the_target(monkeypatch):
    load_oracles()
    order: list[str] = []
    result = run_case(_case(["drop-node"]), hook=order.append)
    assert order[:3] == ["materialize", "optimize", "reference"]
    assert [f.symptom for f in result.findings] == ["output-mismatch"]
    first = run_case(_case(["drop-node"], reference_first=True), hook=order.append)
    assert order[len(order) - len(first.timings) - 1:][:3] == \
        ["materialize", "reference", "optimize"]
    assert first.findings[0].message == result.findings[0].message


def test_an_unusable_original_is_still_unusable_when_the_target_crashes(tmp_path):
    load_oracles()
    model = unary_chain_model()
    model.graph.node[0].domain = "optfuzz.nowhere"  # onnxruntime cannot load it
    case = TestCase("fake", {"passes": ["raise"]}, {"kind": "bytes"},
                    model_bytes=model.SerializeToString())
    result = run_case(case)
    assert result.unusable is not None and result.unusable.startswith("reference: ")
    assert not result.findings


def _break_the_heap_in_optimize(monkeypatch) -> None:
    """The fake target leaves its process broken: every later onnxruntime session in that
    process kills it with SIGSEGV (forked workers inherit the patches)."""
    real_optimize, real_session = FakeTarget.optimize, stage_driver.make_session

    def optimize(self, model, config):
        os.environ[BROKEN] = "1"
        return real_optimize(self, model, config)

    def session(model_bytes, *args):
        if os.environ.get(BROKEN):
            os.kill(os.getpid(), signal.SIGSEGV)
        return real_session(model_bytes, *args)

    monkeypatch.setattr(FakeTarget, "optimize", optimize)
    monkeypatch.setattr(stage_driver, "make_session", session)
    monkeypatch.delenv(BROKEN, raising=False)


def test_a_death_in_the_reference_run_after_the_target_is_the_targets(monkeypatch):
    _break_the_heap_in_optimize(monkeypatch)
    with Sandbox(jobs=1, timeout=20.0) as box:
        results = [box.run(_case(["drop-node"])),
                   *[f.result() for f in box.submit_many([_case(["drop-node"])] * 3)]]
    for result in results:  # run again with the reference first, it dies loading
        assert result.unusable is None, result.unusable
        assert [(f.symptom, f.stage) for f in result.findings] == [("load-failure", "load")]


def test_a_reference_run_that_kills_its_worker_makes_the_seed_unusable(monkeypatch):
    def session(model_bytes, *args):
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(stage_driver, "make_session", session)
    with Sandbox(jobs=1, timeout=20.0) as box:
        result = box.run(_case(["drop-node"]))
    assert result.unusable == f"reference: worker signal {int(signal.SIGSEGV)}"
    assert not result.findings
