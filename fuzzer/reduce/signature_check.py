"""The predicate of campaigns and of ``optfuzz reduce MODEL|BUNDLE``: the candidate, run
through optfuzz's sandbox with the finding's target configuration, still shows the primary
finding's symptom with the same normalized message (so its signature is the same)."""

from __future__ import annotations

from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import normalize_message
from fuzzer.reduce.candidate import Built
from fuzzer.reduce.predicate import Budget, Predicate, assume_valid


class SignatureCheck(Predicate):
    """True when ``sandbox.run(case.with_model(candidate))`` reproduces the finding.

    Args:
        sandbox: a :class:`fuzzer.execution.sandbox.Sandbox` (the optimizer runs only in its
            workers).
        case: the failing TestCase (its target and config are reused).
        symptom: the primary finding's symptom.
        message: the primary finding's message (compared after normalize_message).
        budget: the reduction's time budget.

    Attributes:
        results: ``{fingerprint: CaseResult}`` of every candidate that reproduced, for the
            artifacts of the final bundle.
    """

    def __init__(self, sandbox: Any, case: TestCase, symptom: str, message: str,
                 budget: Budget) -> None:
        super().__init__(budget, assume_valid)  # candidates run with require_valid=True
        self.sandbox = sandbox
        self.case = case
        self.symptom = symptom
        self.message = normalize_message(message)
        self.results: dict[str, CaseResult] = {}

    def matches(self, result: CaseResult) -> bool:
        """Whether ``result``'s primary finding has the wanted symptom and message."""
        if result.unusable or not result.findings:
            return False
        first = result.findings[0]
        return first.symptom == self.symptom and normalize_message(first.message) == \
            self.message

    def run(self, built: Built, key: str) -> bool:
        candidate = self.case.with_model(built.model.SerializeToString(), feeds=built.feeds,
                                         input_shapes=None, keep=False,
                                         require_valid=True)
        result = self.sandbox.run(candidate)
        if self.matches(result):
            self.results[key] = result
            return True
        return False
