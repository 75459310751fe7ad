"""The predicate of campaigns and of ``optfuzz reduce MODEL|BUNDLE``: the candidate, run
through optfuzz's sandbox with the finding's target configuration, still shows the primary
finding's symptom with the same core (:class:`fuzzer.findings.signature.FindingCore`: the
key detail where the symptom has one, else the normalized message). With a ``gate``
(:class:`fuzzer.reduce.reference_valid.ReferenceGate`), a candidate that reproduces must also
pass it (a valid model by the ONNX reference evaluator), or it counts as not reproducing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import FindingCore
from fuzzer.reduce.candidate import Built
from fuzzer.reduce.predicate import Budget, Predicate, assume_valid
from fuzzer.targets import get_target


class SignatureCheck(Predicate):
    """True when ``sandbox.run(case.with_model(candidate))`` reproduces the finding.

    Args:
        sandbox: a :class:`fuzzer.execution.sandbox.Sandbox` (the optimizer runs only in its
            workers).
        case: the failing TestCase (its target and config are reused).
        symptom: the primary finding's symptom.
        message: the primary finding's message.
        budget: the reduction's time budget.
        detail: the primary finding's detail; with it, the finding's core
            (:class:`fuzzer.findings.signature.FindingCore`) is compared, else the
            normalized message.
        gate: ``gate(candidate, expected) -> bool``, asked only about a candidate that
            reproduced, with its onnxruntime reference outputs (``{name: value}``, None
            where that run failed); False rejects the candidate like one that does not
            reproduce (:class:`fuzzer.reduce.reference_valid.ReferenceGate`). None: no gate.

    Attributes:
        results: ``{fingerprint: CaseResult}`` of every candidate that reproduced (and
            passed the gate), for the artifacts of the final bundle.
    """

    def __init__(self, sandbox: Any, case: TestCase, symptom: str, message: str,
                 budget: Budget, detail: dict | None = None,
                 gate: Callable[[Built, Mapping[str, Any] | None], bool] | None = None) -> None:
        super().__init__(budget, assume_valid)  # candidates run with require_valid=True
        self.sandbox = sandbox
        self.case = case
        self.wanted = FindingCore.of_parts(symptom, message, detail)
        self.target = get_target(case.target)
        self.gate = gate
        self.results: dict[str, CaseResult] = {}

    def matches(self, result: CaseResult) -> bool:
        """Whether ``result``'s primary finding has the wanted symptom and core and is no
        behaviour the target documents (a reduction must not drift from a bug to, say, a
        documented expansion that shows the same symptom)."""
        if result.unusable or not result.findings:
            return False
        first = result.findings[0]
        return self.wanted.matches(first) and \
            self.target.documented(first, self.case.config) is None

    def run(self, built: Built, key: str) -> bool:
        candidate = self.case.with_model(built.model.SerializeToString(), feeds=built.feeds,
                                         input_shapes=None, keep=False,
                                         require_valid=True)
        result = self.sandbox.run(candidate)
        if not self.matches(result):
            return False
        if self.gate is not None:
            expected = result.artifacts.expected if result.artifacts is not None else None
            if not self.gate(built, expected):
                return False
        self.results[key] = result
        return True
