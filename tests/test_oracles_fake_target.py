"""Every oracle fires on the fake target's matching bug, through real worker processes."""

from __future__ import annotations

import pytest

from fuzzer.execution.case import TestCase
from tests.conftest import unary_chain_model

EXPECTED = {
    "clean": None,
    "raise": ("optimizer-error", "optimize"),
    "abort": ("optimizer-abort", "optimize"),
    "segv": ("optimizer-abort", "optimize"),
    "hang": ("hang", "optimize"),
    "drop-node": ("output-mismatch", "compare"),
    "drop-middle": ("output-mismatch", "compare"),
    "invalid": ("invalid-model", "validate"),
    "bloat": ("bloat", "compare"),
}


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_fake_bug_fires_its_oracle(sandbox, bug):
    model = unary_chain_model().SerializeToString()
    result = sandbox.run(TestCase("fake", {"passes": [bug]}, {"kind": "bytes"},
                                  model_bytes=model))
    assert result.unusable is None
    if EXPECTED[bug] is None:
        assert result.findings == []
        return
    symptom, stage = EXPECTED[bug]
    assert result.findings, f"{bug} produced no finding"
    assert (result.findings[0].symptom, result.findings[0].stage) == (symptom, stage)
    assert result.artifacts is not None and result.artifacts.model == model


def test_signal_is_named(sandbox, chain_model):
    result = sandbox.run(TestCase("fake", {"passes": ["segv"]}, {"kind": "bytes"},
                                  model_bytes=chain_model.SerializeToString()))
    assert "SIGSEGV" in result.findings[0].message


def test_worker_replaced_after_death(sandbox, chain_model):
    data = chain_model.SerializeToString()
    sandbox.run(TestCase("fake", {"passes": ["abort"]}, {"kind": "bytes"}, model_bytes=data))
    after = sandbox.run(TestCase("fake", {"passes": ["clean"]}, {"kind": "bytes"},
                                 model_bytes=data))
    assert after.unusable is None and after.findings == []


def test_unrunnable_original_is_unusable_not_a_finding(sandbox, chain_model):
    chain_model.graph.node[0].op_type = "NoSuchOp"
    result = sandbox.run(TestCase("fake", {"passes": ["raise"]}, {"kind": "bytes"},
                                  model_bytes=chain_model.SerializeToString()))
    assert result.findings == []
    assert result.unusable and result.unusable.startswith("reference")


def test_real_onnxoptimizer_clean_on_simple_model(sandbox, chain_model):
    result = sandbox.run(TestCase("onnxoptimizer", {"passes": ["eliminate_identity"]},
                                  {"kind": "bytes"}, model_bytes=chain_model.SerializeToString()))
    assert result.unusable is None and result.findings == []


def test_an_exit_while_optimizing_is_an_abort_with_its_exit_code(sandbox):
    """A target that ends the process with status 0 (pebble alone would let the case wait
    out its timeout and call it a hang: fuzzer.execution.pool)."""
    result = sandbox.run(TestCase("fake", {"passes": ["exit"]}, {"kind": "bytes"},
                                  model_bytes=unary_chain_model().SerializeToString()))
    finding = result.findings[0]
    assert (finding.symptom, finding.stage) == ("optimizer-abort", "optimize")
    assert finding.message == "worker process ended (exit code 0)"
