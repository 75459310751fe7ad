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
    """A sandbox stand-in whose runs reproduce ``finding`` only with ``culprit`` in the
    pass list (with any list, the empty one too, where ``culprit`` is None); counts its
    runs."""

    finding = Finding("invalid-model", "validate", "rule x", {"rule": "x"})

    def __init__(self) -> None:
        self.culprit = "pair-a"
        self.runs: list[tuple[str, ...]] = []

    def submit(self, case: TestCase):
        from concurrent.futures import Future

        passes = tuple(case.config["passes"])
        self.runs.append(passes)
        done: Future = Future()
        found = [self.finding] if self.culprit is None or self.culprit in passes else []
        done.set_result(CaseResult(found, None, self.finding.stage, {}))
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


def test_an_answer_of_no_pass_is_tried_before_the_passes_remembered(monkeypatch):
    """Where a finding has shown with no pass at all (the target's own load and save), that
    answer is tried first: a remembered pass would reproduce it too and take the blame."""
    def search(sandbox, case, result, finding, max_seconds=None):
        return Localization([] if sandbox.culprit is None else [sandbox.culprit], 5,
                            "framework" if sandbox.culprit is None else "bisect")

    monkeypatch.setattr(memo_module, "localize", search)
    memo, sandbox = LocalizationMemo(), _Probe()
    finding = _Probe.finding
    result = CaseResult([finding], None, "validate", {})
    listed = TestCase("fake", {"passes": ["pair-a", "clean"]}, {"kind": "bytes"})
    assert memo.localize(sandbox, listed, result, finding).passes == ["pair-a"]
    sandbox.culprit = None  # the same finding, made by no pass, under another list
    other = TestCase("fake", {"passes": ["clean", "pair-b"]}, {"kind": "bytes"})
    assert memo.localize(sandbox, other, result, finding).passes == []
    sandbox.runs.clear()
    where = memo.localize(sandbox, listed, result, finding)  # its exact key says pair-a
    assert (where.passes, where.method) == ([], "memo")
    assert sandbox.runs == [()]


def test_a_folders_bundles_are_recognised_without_a_search(monkeypatch):
    """A memo of a folder's bundles tries their passes first: a known hang costs the runs
    that confirm it, not a search whose every hanging run waits out the timeout. A bundle
    keyed on a detail meta.json does not keep (an invalid model's rule), or without passes,
    teaches nothing."""
    from types import SimpleNamespace

    from fuzzer.store.meta import TargetInfo

    searches: list[str] = []

    def search(sandbox, case, result, finding, max_seconds=None):
        searches.append(sandbox.culprit)
        return Localization([sandbox.culprit], 5, "bisect")

    class _Hangs(_Probe):
        finding = Finding("hang", "optimize", "no result after 30 s in stage optimize")

    monkeypatch.setattr(memo_module, "localize", search)
    config = TargetInfo(name="fake", version="1", config={"passes": ["clean", "pair-b"]})
    metas = [SimpleNamespace(target=config, symptom="hang", responsible_passes=["pair-b"],
                             message="no result after 30 s in stage optimize"),
             SimpleNamespace(target=config, symptom="invalid-model", message="rule x",
                             responsible_passes=["pair-a"]),
             SimpleNamespace(target=config, symptom="hang", responsible_passes=None,
                             message="no result after 30 s in stage optimize")]
    memo, sandbox = LocalizationMemo.of_bundles(metas), _Hangs()
    sandbox.culprit = "pair-b"
    case = TestCase("fake", {"passes": ["pair-a", "pair-b", "clean"]}, {"kind": "bytes"})
    finding = Finding("hang", "optimize", "no result after 5 s in stage optimize")
    where = memo.localize(sandbox, case, CaseResult([finding], None, "optimize", {}), finding)
    assert where.passes == ["pair-b"] and where.method == "memo"
    # the passes alone, run until most runs agree (a hang must recur), and no search
    assert set(sandbox.runs) == {("pair-b",)} and len(sandbox.runs) <= 3 and searches == []
    # the invalid model's bundle taught nothing: its finding is searched
    sandbox.culprit = "pair-a"
    rule = Finding("invalid-model", "validate", "rule x", {"rule": "x"})
    memo.localize(sandbox, case, CaseResult([rule], None, "validate", {}), rule)
    assert searches == ["pair-a"]
