"""A campaign localizes a bug once; seeing it again costs one confirming run."""

from __future__ import annotations

from fuzzer.execution.case import TestCase
from fuzzer.localize.memo import LocalizationMemo
from tests.conftest import unary_chain_model

PASSES = [f"nop-{i}" for i in range(20)] + ["drop-node"] + [f"nop-{i}" for i in range(20, 39)]


def _case(ops: tuple[str, ...]) -> TestCase:
    return TestCase("fake", {"passes": PASSES, "fixed_point": False}, {"kind": "bytes"},
                    model_bytes=unary_chain_model(ops).SerializeToString())


def test_second_sighting_reuses_the_localization(sandbox):
    memo = LocalizationMemo()
    first_case = _case(("Neg", "Exp"))
    first = sandbox.run(first_case)
    where = memo.localize(sandbox, first_case, first, first.findings[0])
    assert where.passes == ["drop-node"] and where.runs > 1

    again_case = _case(("Sin", "Neg", "Tanh"))
    again = sandbox.run(again_case)
    assert again.findings[0].symptom == "output-mismatch"
    reused = memo.localize(sandbox, again_case, again, again.findings[0])
    assert reused.passes == ["drop-node"]
    assert (reused.method, reused.runs) == ("memo", 1)
    assert reused.result is not None and reused.result.findings
    assert memo.saved_searches == 1
