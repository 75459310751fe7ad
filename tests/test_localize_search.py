"""ddmin and bisection over ordered lists, with synthetic predicates (no processes)."""

from __future__ import annotations

import itertools

import pytest

from fuzzer.delta.ddmin import bisect_single, ddmin, split

ITEMS = tuple(f"p{i}" for i in range(39))


class Counting:
    """A predicate "contains every element of ``cause`` (in order)" that counts calls."""

    def __init__(self, cause: set[str]) -> None:
        self.cause, self.calls = cause, 0

    def __call__(self, subset: tuple[str, ...]) -> bool:
        self.calls += 1
        return self.cause <= set(subset)


def test_split_keeps_order_and_covers_everything() -> None:
    chunks = split(ITEMS, 4)
    assert len(chunks) == 4
    assert tuple(itertools.chain(*chunks)) == ITEMS
    assert max(map(len, chunks)) - min(map(len, chunks)) <= 1


@pytest.mark.parametrize("position", range(39))
def test_bisection_finds_any_single_cause_in_at_most_seven_tests(position: int) -> None:
    test = Counting({ITEMS[position]})
    assert bisect_single(ITEMS, test) == (ITEMS[position],)
    assert test.calls <= 7


def test_bisection_gives_up_on_an_interaction() -> None:
    assert bisect_single(ITEMS, Counting({"p3", "p30"})) is None


@pytest.mark.parametrize("cause", [{"p0", "p38"}, {"p19", "p20"}, {"p5", "p6", "p33"},
                                   {"p12"}])
def test_ddmin_returns_exactly_the_interacting_elements_in_order(cause: set[str]) -> None:
    found = ddmin(ITEMS, Counting(cause))
    assert set(found) == cause
    assert list(found) == sorted(found, key=ITEMS.index)


def test_ddmin_result_is_one_minimal_for_an_or_predicate() -> None:
    # reproduces with p4 or with p9+p10: the result may be either, but each element matters
    def test(subset: tuple[str, ...]) -> bool:
        return "p4" in subset or {"p9", "p10"} <= set(subset)

    found = ddmin(ITEMS, test)
    assert test(found)
    assert all(not test(tuple(x for x in found if x != drop)) for drop in found)


def test_a_time_budget_cuts_localization_short_and_keeps_its_best_answer(sandbox):
    """A localization past its time budget stops before its next run ("budget"), keeping the
    smallest list it saw reproduce; with no time at all it runs nothing."""
    from fuzzer.execution.case import TestCase
    from fuzzer.localize.search import localize
    from tests.conftest import unary_chain_model

    model = unary_chain_model(("Neg", "Exp", "Sigmoid")).SerializeToString()
    passes = [f"nop-{i}" for i in range(20)] + ["drop-node"]
    case = TestCase("fake", {"passes": passes, "fixed_point": False}, {"kind": "bytes"},
                    model_bytes=model)
    result = sandbox.run(case)
    cut = localize(sandbox, case, result, result.findings[0], max_seconds=0.0)
    assert (cut.method, cut.runs, cut.passes) == ("budget", 0, None)
    full = localize(sandbox, case, result, result.findings[0])
    assert full.passes == ["drop-node"] and full.method != "budget"


class Scripted:
    """A sandbox whose runs of each pass list show the slow finding or not, in a scripted
    order per pass list (one disturbed measurement each way), and that counts the runs."""

    def __init__(self, script: dict[tuple[str, ...], list[bool]]) -> None:
        self.script, self.submitted = {k: list(v) for k, v in script.items()}, []

    def submit(self, case):
        from concurrent.futures import Future

        from fuzzer.execution.case import CaseResult
        from oracles.base import Finding

        passes = tuple(case.config["passes"])
        self.submitted.append(passes)
        shows = self.script.get(passes, [False]).pop(0) if self.script.get(passes) else False
        future: Future = Future()
        future.set_result(CaseResult([Finding("slow", "optimize", "grows", {"growth": "passes"})]
                                     if shows else [], None, "optimize", {}))
        return future


def test_a_timing_symptom_is_judged_by_the_majority_of_three_runs_per_pass_list():
    """The quadratic pass measured quiet once, the filler pass disturbed once: the majority
    of three runs still blames the quadratic pass, where one run each (or "shown in either
    of two") blamed the filler."""
    from fuzzer.execution.case import TestCase
    from fuzzer.localize.search import localize
    from oracles.base import Finding

    passes = ("clean", "nop-1", "slow-quadratic")
    script = {(): [False, False], ("clean",): [False, False],
              ("nop-1", "slow-quadratic"): [True, True],
              ("slow-quadratic",): [False, True, True], ("nop-1",): [True, False, False]}
    box = Scripted(script)
    case = TestCase("fake", {"passes": list(passes), "fixed_point": False}, {"kind": "bytes"})
    found = CaseResultOf(Finding("slow", "optimize", "grows", {"growth": "passes"}))
    where = localize(box, case, found, found.findings[0])
    assert where.passes == ["slow-quadratic"]
    assert box.submitted.count(("slow-quadratic",)) == 3
    assert box.submitted.count(("clean",)) == 2  # two runs that agree need no third


def CaseResultOf(finding):  # noqa: N802 - reads as the constructor it stands for
    """A CaseResult holding ``finding`` and no artifacts."""
    from fuzzer.execution.case import CaseResult

    return CaseResult([finding], None, "optimize", {})
