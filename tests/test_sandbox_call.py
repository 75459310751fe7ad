"""Sandbox.call runs work on untrusted models in a worker: results, errors and deaths."""

from __future__ import annotations

import os

import pytest

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import SandboxError
from tests.conftest import unary_chain_model


def _node_count(data: bytes) -> int:
    import onnx

    return len(onnx.load_from_string(data).graph.node)


def _die() -> None:
    os.abort()


def _fail() -> None:
    raise ValueError("bad model")


def test_call_returns_the_result(sandbox):
    assert sandbox.call(_node_count, unary_chain_model().SerializeToString()) == 2


def test_call_reraises_exceptions_and_survives_deaths(sandbox):
    with pytest.raises(ValueError, match="bad model"):
        sandbox.call(_fail)
    with pytest.raises(SandboxError, match="worker died"):
        sandbox.call(_die)
    assert sandbox.call(_node_count, unary_chain_model().SerializeToString()) == 2


def test_require_valid_makes_an_invalid_original_unusable(sandbox):
    model = unary_chain_model()
    model.graph.node[1].input[0] = "undefined"
    case = TestCase("fake", {"passes": ["clean"]}, {"kind": "bytes"},
                    model_bytes=model.SerializeToString(), require_valid=True)
    result = sandbox.run(case)
    assert result.findings == [] and "invalid original" in result.unusable
