"""A campaign's memory of localizations, so that a repeat sighting costs one confirming run."""

from __future__ import annotations

from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import FindingCore
from fuzzer.localize.search import Localization, Prober, localize
from oracles.base import Finding


class LocalizationMemo:
    """Localizations already made in a campaign, keyed by what a finding looks like before
    localization: target, configured pass list, fixed_point, and the finding's core
    (:class:`fuzzer.findings.signature.FindingCore`).

    A finding seen again with the same key costs one confirming run (the remembered
    responsible passes alone, which also gives the run the signature's graph hash is taken
    from) instead of a full search; where the confirmation fails, a full search runs.
    """

    def __init__(self) -> None:
        self._known: dict[tuple, list[str] | None] = {}
        self.saved_searches = 0

    @staticmethod
    def key(case: TestCase, finding: Finding) -> tuple:
        """The memo key of ``finding`` in ``case``."""
        return (case.target, tuple(case.config.get("passes") or ()),
                bool(case.config.get("fixed_point", False)), FindingCore.of(finding))

    def localize(self, sandbox: Any, case: TestCase, result: CaseResult,
                 finding: Finding, max_seconds: float | None = None) -> Localization:
        """Like :func:`fuzzer.localize.search.localize`, reusing earlier answers; a search
        cut short by ``max_seconds`` is not remembered."""
        key = self.key(case, finding)
        if key in self._known:
            passes = self._known[key]
            if passes is None:
                self.saved_searches += 1
                return Localization(None, 0, "memo")
            probe = Prober(sandbox, case, finding, key[2])
            if probe.test(tuple(passes)):
                self.saved_searches += 1
                return Localization(list(passes), probe.runs, "memo", None,
                                    probe.result(tuple(passes)))
        where = localize(sandbox, case, result, finding, max_seconds=max_seconds)
        if where.method != "budget":
            self._known[key] = where.passes
        return where
