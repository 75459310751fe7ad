"""Localization: the minimal pass subsequence of a configuration that still shows a finding.

"Shows the finding" means: a run of the case with that pass list (same model, feeds,
target and ``fixed_point`` setting) has a finding with the same symptom and core
(:class:`fuzzer.findings.signature.FindingCore`: the symptom's key detail, such as the rule
an invalid model breaks, else the normalized message). Every optimizer run goes through
the sandbox's workers and is counted in :attr:`Localization.runs`; results are cached, so no
pass list is run twice.

Stages, cheapest evidence first (each conclusion is verified by a real run):

1. **Framework**: one run with the empty pass list; where it reproduces, the bug is in the
   optimizer's own load/save round trip, not in a pass (``passes == []``; e.g. an optimizer
   raising IR version 3 to 4 whatever the passes). Then a list of one pass is its own answer.
2. **Screen suspects** (:mod:`fuzzer.localize.hints`): passes named by the message or by a source
   file in the traceback, then passes whose anchor op types vanished or appeared, at most
   :data:`MAX_SUSPECTS`, run alone *in parallel* (``sandbox.submit``). If none reproduces
   alone but the named ones do together, delta debugging runs over them only.
3. **Prune** passes that cannot act on this model (no anchor op type present): one run checks
   that the plausible ones alone still reproduce.
4. **Bisect** under the single-pass hypothesis (:func:`fuzzer.delta.ddmin.bisect_single`): about
   ``log2(n) + 1`` runs.
5. **ddmin** (Zeller & Hildebrandt 2002, :func:`fuzzer.delta.ddmin.ddmin`) over the ordered list
   where no single pass reproduces: a 1-minimal subsequence, e.g. both passes of an
   interaction (a fusion that leaves a dead end only ``eliminate_deadend`` trips over).
6. **fixed_point**: all runs use the case's setting; where it was on, one more run tells
   whether the responsible passes reproduce without it (:attr:`Localization.fixed_point`).

A run budget (:data:`MAX_RUNS`) bounds pathological searches; when it runs out, the smallest
reproducing list seen so far is returned.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fuzzer.delta.ddmin import bisect_single, ddmin
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import FindingCore
from fuzzer.localize.hints import Anchors, changed_anchor_passes, mentioned, plausible
from fuzzer.modelio.graphs import op_types
from oracles import symptom as symptom_record
from oracles.base import Finding

MAX_SUSPECTS = 2
MAX_RUNS = 120


@dataclass
class Localization:
    """Result of localization.

    Attributes:
        passes: the responsible passes in pass-list order (``[]``: the bug shows with an
            empty pass list), or None when they could not be determined.
        runs: optimizer runs (worker test cases) spent.
        method: the stage that concluded (``single``, ``screen``, ``framework``, ``bisect``,
            ``ddmin``, ``budget``, ``none``).
        fixed_point: where the case ran to a fixed point, whether the responsible passes
            still need it to reproduce; None where the case did not use it.
        result: the CaseResult of the responsible configuration, where one was run.
    """

    passes: list[str] | None
    runs: int = 0
    method: str = "none"
    fixed_point: bool | None = None
    result: CaseResult | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The JSON-able part recorded in meta.json under ``localization``."""
        data: dict[str, Any] = {"runs": self.runs, "method": self.method}
        if self.fixed_point is not None:
            data["fixed_point_needed"] = self.fixed_point
        return data


class _Budget(Exception):
    """The run budget is spent."""


class Prober:
    """Runs ``case`` with other pass lists and tells whether ``finding`` reproduces. A
    symptom that depends on timing (``Symptom.confirm``: slow, hang) is judged by the
    majority of three runs (:meth:`test_many`): on a loaded machine one quiet measurement
    kept a filler pass in a slow finding's minimal list, and one disturbed measurement
    blamed a filler pass for a quadratic one.

    Args:
        sandbox: a :class:`fuzzer.execution.sandbox.Sandbox` (anything with ``submit(case)``).
        case: the failing test case.
        finding: the finding to reproduce.
        fixed_point: the ``fixed_point`` setting of every run.
        max_runs: run budget; past it :meth:`test` raises ``_Budget``.
        max_seconds: time budget in seconds (None: none); past it :meth:`test` raises
            ``_Budget`` too.
    """

    def __init__(self, sandbox: Any, case: TestCase, finding: Finding, fixed_point: bool,
                 max_runs: int = MAX_RUNS, max_seconds: float | None = None) -> None:
        from fuzzer.targets import get_target

        self.sandbox, self.case, self.fixed_point = sandbox, case, fixed_point
        self.target = get_target(case.target)
        self.wanted = FindingCore.of(finding)
        self.confirm = symptom_record(finding.symptom).confirm
        self.cache: dict[tuple[tuple[str, ...], bool], CaseResult] = {}
        self.runs, self.max_runs = 0, max_runs
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.best: tuple[str, ...] | None = None

    def _case(self, passes: tuple[str, ...], fixed_point: bool) -> TestCase:
        config = self.target.with_passes(self.case.config, passes)
        if not fixed_point:
            config = self.target.relaxations(config).get("fixed_point", config)
        return self.case.with_config(config)

    def reproduces(self, result: CaseResult) -> bool:
        """Whether ``result`` has a finding with the wanted symptom and core
        (:class:`fuzzer.findings.signature.FindingCore`)."""
        return any(self.wanted.matches(f) for f in result.findings)

    def test_many(self, lists: Sequence[tuple[str, ...]],
                  fixed_point: bool | None = None) -> list[bool]:
        """Run the uncached ``lists`` in parallel; return whether each reproduces.

        For a timing symptom (``Symptom.confirm``) a verdict is the majority of
        :data:`oracles.base.VOTES` (three) runs: two at once, a third where they disagree.
        One disturbed measurement on a loaded machine can make a pass that adds nothing
        look slow, or hide the pass that is.
        """
        fp = self.fixed_point if fixed_point is None else fixed_point
        todo = list(dict.fromkeys(p for p in lists if (p, fp) not in self.cache))
        each = 2 if self.confirm else 1
        if self.runs + each * len(todo) > self.max_runs or (
                todo and self.deadline is not None and time.monotonic() > self.deadline):
            raise _Budget
        runs = self._run([p for p in todo for _ in range(each)], fp)
        if self.confirm:
            split = [p for p in todo if len({self.reproduces(r) for r in runs[p]}) > 1]
            for passes, more in self._run(split, fp).items():
                runs[passes] += more
        for passes in todo:
            shown = [r for r in runs[passes] if self.reproduces(r)]
            hidden = [r for r in runs[passes] if not self.reproduces(r)]
            self.cache[(passes, fp)] = shown[0] if len(shown) > len(hidden) else hidden[0]
        verdicts = [self.reproduces(self.cache[(p, fp)]) for p in lists]
        if fp == self.fixed_point:
            for passes, ok in zip(lists, verdicts, strict=True):
                if ok and (self.best is None or len(passes) < len(self.best)):
                    self.best = passes
        return verdicts

    def _run(self, lists: Sequence[tuple[str, ...]],
             fp: bool) -> dict[tuple[str, ...], list[CaseResult]]:
        """Submit one run per entry of ``lists`` (repeats allowed) at once; their results
        per pass list."""
        futures = [(p, self.sandbox.submit(self._case(p, fp))) for p in lists]
        self.runs += len(futures)
        out: dict[tuple[str, ...], list[CaseResult]] = {}
        for passes, future in futures:
            out.setdefault(passes, []).append(future.result())
        return out

    def test(self, passes: tuple[str, ...]) -> bool:
        """Whether the case with pass list ``passes`` reproduces the finding."""
        return self.test_many([passes])[0]

    def result(self, passes: tuple[str, ...]) -> CaseResult | None:
        """The cached result of ``passes`` (with the case's fixed_point setting)."""
        return self.cache.get((passes, self.fixed_point))


def _models(result: CaseResult) -> tuple[Any, Any]:
    """``(original, optimized)`` ModelProtos from the artifacts (None where absent)."""
    import onnx

    out: list[Any] = []
    arts = result.artifacts
    for data in (arts.model if arts else None, arts.optimized if arts else None):
        model = None
        if data is not None:
            try:
                model = onnx.ModelProto()
                model.ParseFromString(data)
            except Exception:
                model = None
        out.append(model)
    return out[0], out[1]


def suspects(anchors: Anchors, passes: Sequence[str], result: CaseResult,
             finding: Finding) -> tuple[list[str], list[str], set[str] | None]:
    """``(named, ranked suspects, op types present)`` from evidence that costs no run.

    ``named`` are passes that the message names (or a source file of the traceback); the
    ranked suspects start with them and continue with passes whose anchor op types changed.
    Op types are those of the original and optimized graphs together (None when the
    original is unavailable).
    """
    named = mentioned(passes, finding.message,
                      locations=str(finding.detail.get("traceback", "")))
    original, optimized = _models(result)
    if original is None:
        return named, named, None
    before = op_types(original)
    after = op_types(optimized) if optimized is not None else set(before)
    ranked = list(dict.fromkeys(named + changed_anchor_passes(anchors, passes, before, after)))
    return named, ranked, before | after


def _search(probe: Prober, anchors: Anchors, passes: tuple[str, ...], result: CaseResult,
            finding: Finding) -> tuple[tuple[str, ...] | None, str]:
    if passes and probe.test(()):
        return (), "framework"
    if len(passes) <= 1:
        return passes, "single"
    named, ranked, present = suspects(anchors, passes, result, finding)
    screen = [(p,) for p in ranked[:max(MAX_SUSPECTS, len(named))]]
    for single, ok in zip(screen, probe.test_many(screen), strict=True):
        if ok:
            return single, "screen"
    if len(named) > 1:
        together = tuple(p for p in passes if p in named)
        if probe.test(together):
            return ddmin(together, probe.test), "screen"
    items = passes
    if present is not None:
        able = tuple(plausible(anchors, passes, present))
        if able and len(able) < len(passes) and probe.test(able):
            items = able
    found = bisect_single(items, probe.test)
    if found is not None:
        return found, "bisect"
    return ddmin(items, probe.test), "ddmin"


def localize(sandbox: Any, case: TestCase, result: CaseResult, finding: Finding,
             max_runs: int = MAX_RUNS, max_seconds: float | None = None) -> Localization:
    """The responsible passes of ``finding`` (see the module docstring for the algorithm).

    Args:
        sandbox: the :class:`fuzzer.execution.sandbox.Sandbox` whose workers run the optimizer.
        case: the failing case; its ``config["passes"]`` (the target's default list when
            absent) is searched, in order.
        result: the case's result (its artifacts give the evidence for screening).
        finding: the finding to reproduce.
        max_runs: run budget.
        max_seconds: time budget in seconds (None: none); a run already started finishes.

    Returns:
        A :class:`Localization`; ``passes`` is None when the configuration has no pass list
        or nothing smaller than the full list was shown to reproduce within the budget.
    """
    from fuzzer.targets import get_target

    target = get_target(case.target)
    passes = target.passes_of(case.config)
    fixed_point = "fixed_point" in target.relaxations(case.config)
    probe = Prober(sandbox, case, finding, fixed_point, max_runs, max_seconds)
    try:
        found, method = _search(probe, target.anchors(), tuple(passes), result, finding)
    except _Budget:
        found, method = probe.best, "budget"
    if found is None:
        return Localization(None, probe.runs, "budget" if method == "budget" else "none")
    where = Localization(list(found), probe.runs, method, None, probe.result(found))
    if fixed_point and method != "budget":
        try:
            where.fixed_point = not probe.test_many([found], fixed_point=False)[0]
        except _Budget:
            pass
        where.runs = probe.runs
    return where
