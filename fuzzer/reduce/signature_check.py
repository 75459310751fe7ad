"""The predicate of campaigns and of ``optfuzz reduce MODEL|BUNDLE``: the candidate, run
through optfuzz's sandbox with the finding's target configuration, still shows the primary
finding's symptom with the same core (:class:`fuzzer.findings.signature.FindingCore`: the
key detail where the symptom has one, else the normalized message). With a ``gate``
(:class:`fuzzer.reduce.reference_valid.ReferenceGate`), a candidate that reproduces must also
pass it (a valid model by the ONNX reference evaluator), or it counts as not reproducing.

With a *control* configuration (:func:`without_culprit`: the same passes less the one the
finding is blamed on), a candidate that reproduces must not reproduce under the control too:
the reduction keeps the fault, not only its symptom and message. Without it a reduction
slips (C-Reduce's term) onto another fault with the same symptom and message that a smaller
model reaches more easily: in a 10-minute onnxslim campaign, findings of 27 preliminary keys
that blamed a pass (subexpression_elimination merging two Splits, several fusions) were
reduced to one-node models that onnxslim's own load and save breaks alike (an output of
unknown dims written as a scalar), and every later finding of those keys counted as a hit
on that one bundle."""

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
        control: a configuration of the target under which a candidate that reproduces
            must not reproduce too (:func:`without_culprit`); one more run per candidate
            that reproduces. None: no control.

    Attributes:
        results: ``{fingerprint: CaseResult}`` of every candidate that reproduced (and
            passed the gate), for the artifacts of the final bundle.
        slipped: candidates that reproduced under the control as well (rejected).
    """

    def __init__(self, sandbox: Any, case: TestCase, symptom: str, message: str,
                 budget: Budget, detail: dict | None = None,
                 gate: Callable[[Built, Mapping[str, Any] | None], bool] | None = None,
                 control: dict[str, Any] | None = None) -> None:
        super().__init__(budget, assume_valid)  # candidates run with require_valid=True
        self.sandbox = sandbox
        self.case = case
        self.wanted = FindingCore.of_parts(symptom, message, detail)
        self.target = get_target(case.target)
        self.gate = gate
        self.control = control
        self.slipped = 0
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
        if self.control is not None:
            with self._runs_lock:  # checks of a parallel predicate run in threads
                self.runs += 1
            if self.matches(self.sandbox.run(candidate.with_config(self.control))):
                self.slipped += 1
                return False
        self.results[key] = result
        return True


def without_culprit(case: TestCase, culprit: str | None) -> dict[str, Any] | None:
    """The control configuration of a reduction of a finding blamed on pass ``culprit``
    (:class:`SignatureCheck`): ``case``'s configuration with that pass left out, down to no
    pass at all (the target's own load and save, which onnxslim's and onnxoptimizer's runs
    make too). None where there is no control: no culprit, or one that is not among the
    configuration's passes (``(framework)``, a handling's own steps)."""
    target = get_target(case.target)
    passes = target.passes_of(case.config)
    if culprit is None or culprit not in passes:
        return None
    return target.with_passes(case.config, [p for p in passes if p != culprit])
