"""The localization memo tries every remembered answer of a finding before a search: two
passes that break models alike, met with the same pass list, are each recognised in one run
instead of a search whenever the other was seen last."""

from __future__ import annotations

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.localize import memo as memo_module
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.localize.search import Localization
from oracles.base import Finding


class _Probe:
    """A sandbox stand-in whose runs reproduce the finding only with ``culprit`` in the
    pass list; counts its runs."""

    def __init__(self) -> None:
        self.culprit = "pair-a"
        self.runs: list[tuple[str, ...]] = []

    def submit(self, case: TestCase):
        from concurrent.futures import Future

        passes = tuple(case.config["passes"])
        self.runs.append(passes)
        done: Future = Future()
        found = [Finding("invalid-model", "validate", "rule x", {"rule": "x"})] \
            if self.culprit in passes else []
        done.set_result(CaseResult(found, None, "validate", {}))
        return done


def test_the_other_answer_of_an_exact_key_is_tried_before_a_search(monkeypatch):
    searches: list[str] = []

    def search(sandbox, case, result, finding, max_seconds=None):
        searches.append(sandbox.culprit)
        return Localization([sandbox.culprit], 5, "bisect")

    monkeypatch.setattr(memo_module, "localize", search)
    memo, sandbox = LocalizationMemo(), _Probe()
    case = TestCase("fake", {"passes": ["pair-a", "pair-b", "clean"]}, {"kind": "bytes"})
    finding = Finding("invalid-model", "validate", "rule x", {"rule": "x"})
    result = CaseResult([finding], None, "validate", {})
    assert memo.localize(sandbox, case, result, finding).passes == ["pair-a"]
    sandbox.culprit = "pair-b"
    assert memo.localize(sandbox, case, result, finding).passes == ["pair-b"]
    assert searches == ["pair-a", "pair-b"]
    # each answer is recognised by runs of the memo's own
    for culprit in ["pair-a", "pair-b", "pair-a", "pair-b"]:
        sandbox.culprit = culprit
        sandbox.runs.clear()
        where = memo.localize(sandbox, case, result, finding)
        assert where.passes == [culprit] and where.method == "memo"
        assert len(sandbox.runs) <= 2
    assert searches == ["pair-a", "pair-b"]
