"""A case whose worker died or outlived its timeout, judged: the stage the worker had
announced says whose death it is (the seed's before the target ran, else the target's), and
the oracles judge the Outcome. The model of such a case is rebuilt for its bundle elsewhere
(:class:`fuzzer.execution.sandbox.Sandbox`).
"""

from __future__ import annotations

import dataclasses

from pebble import ProcessExpired

from fuzzer.builds.sanitizer import SanitizerRuntime
from fuzzer.execution.case import CaseResult, TestCase
from oracles import judge
from oracles.base import Outcome

#: stages that say the seed is unusable when its worker dies there: materialization, and
#: the reference run of a case that runs it before the target (``TestCase.reference_first``;
#: a death in a reference run after the target is run again that way first, see
#: :func:`late_reference`); a timeout there is retried once before it counts.
PRE_TARGET_STAGES = ("materialize", "reference")


def late_reference(case: TestCase, stage: str) -> bool:
    """Whether a worker that died or hung in ``stage`` of ``case`` was in a reference run
    made after the target (:mod:`fuzzer.execution.pipeline`). The target may have broken
    that process's heap, so the death is not yet the seed's: the case runs again with the
    reference run first (:func:`reference_first`)."""
    return stage == "reference" and not case.reference_first


def reference_first(case: TestCase) -> TestCase:
    """``case`` with its reference run before the target."""
    return dataclasses.replace(case, reference_first=True)


def unknown_death(error: BaseException | None) -> bool:
    """Whether ``error`` is the death of a worker whose exit code nobody saw (a task
    acknowledged by a worker pebble had already stopped: :mod:`fuzzer.execution.pool`); its
    cases run again rather than take a death that may not be theirs."""
    return isinstance(error, ProcessExpired) and error.exitcode is None


def expired(exc: ProcessExpired, stage: str, sanitizer: SanitizerRuntime | None) -> Outcome:
    """The Outcome of a case whose worker died in ``stage``: halted by a sanitizer where the
    worker left a report (taken from ``sanitizer``), else killed by a signal (or an exit)."""
    code = exc.exitcode
    report = sanitizer.take(exc.pid) if sanitizer is not None else None
    if report is not None:
        return Outcome("sanitizer", stage, error=f"exit code {code}",
                       extra={"sanitizer_report": report})
    return Outcome("signal", stage, signal=-code if code and code < 0 else None,
                   error=f"exit code {code}")


def judge_death(case: TestCase, outcome: Outcome) -> CaseResult:
    """Judge a case whose worker died or hung (its artifacts are left to the caller); an
    unusable seed if it happened before the target ran (during materialization or the
    reference run)."""
    source = dict(case.source)
    if outcome.stage in PRE_TARGET_STAGES:
        what = "timeout" if outcome.status == "timeout" else f"signal {outcome.signal}"
        return CaseResult([], f"{outcome.stage}: worker {what}", outcome.stage, source)
    from fuzzer.execution.pipeline import case_extra
    from fuzzer.targets import get_target

    outcome.extra.update(case_extra(get_target(case.target), case))
    return CaseResult(judge(outcome), None, outcome.stage, source)
