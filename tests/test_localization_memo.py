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


def _listed(ops: tuple[str, ...], passes: list[str]) -> TestCase:
    return TestCase("fake", {"passes": passes, "fixed_point": False}, {"kind": "bytes"},
                    model_bytes=unary_chain_model(ops).SerializeToString())


def test_the_same_finding_under_another_pass_list_costs_one_run(sandbox):
    """A campaign draws a pass list per case: a known bug seen under a new list is
    recognised by running the remembered pass alone, and a list without that pass gets
    its own search."""
    memo = LocalizationMemo()
    first_case = _case(("Neg", "Exp"))
    first = sandbox.run(first_case)
    assert memo.localize(sandbox, first_case, first, first.findings[0]).passes == \
        ["drop-node"]

    other = [f"nop-{i}" for i in range(39, 9, -1)] + ["drop-node", "nop-3"]
    again_case = _listed(("Sin", "Neg", "Tanh"), other)
    again = sandbox.run(again_case)
    reused = memo.localize(sandbox, again_case, again, again.findings[0])
    assert (reused.passes, reused.method, reused.runs) == (["drop-node"], "memo", 1)

    without = [f"nop-{i}" for i in range(12)] + ["drop-middle"]
    third_case = _listed(("Sin", "Neg", "Tanh"), without)
    third = sandbox.run(third_case)
    assert third.findings[0].symptom == "output-mismatch"
    searched = memo.localize(sandbox, third_case, third, third.findings[0])
    assert searched.passes == ["drop-middle"] and searched.method != "memo"


def test_the_memory_of_exact_keys_is_bounded_least_recently_used_first(monkeypatch):
    """Past KNOWN (here 3) keys the least recently used answer is forgotten; a key looked
    up again is kept."""
    from fuzzer.localize import memo as memo_module

    monkeypatch.setattr(memo_module, "KNOWN", 3)
    memo = LocalizationMemo()
    for index in range(3):
        memo._know(("t", (f"p{index}",)), [f"p{index}"])
    memo._known.move_to_end(("t", ("p0",)))  # as a lookup of p0's key does
    memo._know(("t", ("p3",)), ["p3"])
    memo._know(("t", ("p4",)), None)
    assert list(memo._known) == [("t", ("p0",)), ("t", ("p3",)), ("t", ("p4",))]
