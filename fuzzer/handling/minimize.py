"""Reduce and localize to a fixed point: shrink the model with the responsible passes, then
localize again on the *minimized* model (a smaller model often needs fewer passes), and shrink
again with that minimal pass list, within one time budget (DuoReduce, FSE'25, reduces the graph
and the pass list together; Igor, CCS'21, buckets only after shrinking).

In: a failing case, its result and finding, the passes localized on the found model. Out: a
:class:`Minimal` (the minimized case, its finding and run with the minimal passes, and those
passes), or the found case itself where nothing smaller reproduces.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import FindingCore
from fuzzer.localize.culprit import run_with_passes
from fuzzer.localize.search import localize
from fuzzer.reduce import control_config, reduce_finding
from fuzzer.reduce.minimized import Minimized
from fuzzer.reduce.predicate import Cutoff
from oracles.base import Finding

#: reduce <-> localize rounds at most (each round shrinks the model or the pass list).
MAX_ROUNDS = 3


@dataclass
class Minimal:
    """The smallest form of a finding that was shown to reproduce.

    Attributes:
        case: the case of the minimized model (the found case where nothing was reduced),
            with the original configuration.
        finding: its finding (same symptom and normalized message as the found one).
        passes: the minimal pass subsequence localized on it (None: not localized).
        run: the run of ``case`` with only ``passes`` (artifacts kept), or the found run.
        reduced: whether the model is smaller than the found one.
        minimal: whether the last reduction ran to its end (no edit of the model keeps the
            finding, even where it is the model as found).
        runs: sandbox runs spent; seconds: wall time.
        culprit: the pass the finding is blamed on, which every reduction keeps needed
            (None: none).
    """

    case: TestCase
    finding: Finding
    passes: list[str] | None
    run: CaseResult
    reduced: bool = False
    runs: int = 0
    seconds: float = 0.0
    minimal: bool = False
    culprit: str | None = None


def _matching(result: CaseResult, finding: Finding) -> Finding | None:
    wanted = FindingCore.of(finding)
    return next((f for f in result.findings if wanted.matches(f)), None)


def minimize(sandbox: Any, case: TestCase, result: CaseResult, finding: Finding,
             passes: list[str] | None, seconds: float, relocalize: bool = True,
             cutoff: Cutoff | None = None, culprit: str | None = None) -> Minimal:
    """Shrink ``case`` and its pass list to a fixed point (see the module docstring).

    The fault stays the one found: with ``culprit`` (the pass the finding on the found model
    is blamed on) each reduction rejects a smaller model that shows the finding with that
    pass left out too, and a pass list localized again without it is not taken (the model
    still shows the finding with the list it was reduced with). Where the found model itself
    shows the finding without the culprit (one run), the blame was wrong: the passes are
    searched again and the reduction keeps no pass needed.

    Args:
        sandbox: the :class:`fuzzer.execution.sandbox.Sandbox` the runs go through.
        case, result, finding: the found failing case, its result (artifacts kept) and the
            finding to keep.
        passes: the responsible passes localized on the found model (None: none known).
        seconds: the time budget of all reductions together (0: no reduction).
        relocalize: localize again on each minimized model.
        cutoff: a moment past which the reductions stop with what they have (a campaign
            that is ending sets it; None: only ``seconds`` bounds them).
        culprit: see above (None: no pass is kept needed).
    """
    start = time.monotonic()
    arts = result.artifacts
    current = case.with_model(arts.model, feeds=arts.feeds, input_shapes=None)
    runs = 0
    control = control_config(current, passes, culprit) if seconds > 0 else None
    if control is not None:
        runs += 1
        if _matching(sandbox.run(current.with_config(control)), finding) is not None:
            # the found model shows it without the culprit: the blame was wrong (a
            # remembered localization), so search again and let the final key name it
            where = localize(sandbox, current, result, finding)
            runs += where.runs
            passes, culprit = where.passes if where.passes is not None else passes, None
    best = Minimal(current, finding, passes, result, runs=runs, culprit=culprit)
    for _ in range(MAX_ROUNDS):
        left = seconds - (time.monotonic() - start)
        if cutoff is not None:
            left = min(left, cutoff.left())
        if left <= 1:
            break
        minimized: Minimized | None = reduce_finding(sandbox, best.case, best.run,
                                                     best.finding, best.passes, left, cutoff,
                                                     culprit=culprit)
        best.runs += minimized.runs if minimized else 0
        best.minimal = minimized is not None and minimized.complete
        if minimized is None or not minimized.reduced:
            break
        smaller = best.case.with_model(minimized.model, feeds=minimized.feeds)
        run = sandbox.run(smaller.with_model(minimized.model, keep=True))
        best.runs += 1
        found = _matching(run, best.finding)
        if found is None:
            break
        new_passes = best.passes
        if relocalize:
            where = localize(sandbox, smaller, run, found)
            best.runs += where.runs
            new_passes = where.passes if where.passes is not None else best.passes
            if culprit in (best.passes or ()) and culprit not in new_passes:
                new_passes = best.passes  # another route to the finding: not this fault's
        changed = new_passes != best.passes
        best = Minimal(smaller, found, new_passes, run, True, best.runs,
                       minimal=best.minimal, culprit=culprit)
        if not changed:
            break
    final = run_with_passes(sandbox, best.case, best.passes)
    best.runs += 1
    again = _matching(final, best.finding)
    if again is not None:
        best.run, best.finding = final, again
    best.seconds = time.monotonic() - start
    return best


def probe(sandbox: Any, minimal: Minimal, seconds: float,
          cutoff: Cutoff | None = None) -> tuple[str | None, Minimal]:
    """Trigger probes (:func:`fuzzer.reduce.probes.probe_triggers`) on the minimized model
    with its minimal passes: the sentence that says what the bug needs, and ``minimal`` with
    the neutral model (neutral tensor names, no value_info) in place of its model where the
    bug survives it. Every run, check and opset conversion goes through ``sandbox``, within
    ``seconds`` and before the moment of ``cutoff`` (where given)."""
    import onnx

    from fuzzer.reduce.predicate import Budget, OutOfTime, sandboxed_validator
    from fuzzer.reduce.probes import convert_opset, probe_triggers
    from fuzzer.reduce.reducer import NotReproducible
    from fuzzer.reduce.signature_check import SignatureCheck, without_culprit
    from fuzzer.targets import get_target

    config = minimal.case.config if minimal.passes is None else \
        get_target(minimal.case.target).with_passes(minimal.case.config, minimal.passes)
    probed = minimal.case.with_config(config)
    check = SignatureCheck(sandbox, probed, minimal.finding.symptom,
                           minimal.finding.message, Budget(seconds, cutoff),
                           minimal.finding.detail,
                           control=without_culprit(probed, minimal.culprit))

    def convert(data: bytes, opset: int) -> bytes | None:
        try:
            return sandbox.call(convert_opset, data, opset)
        except Exception:
            return None

    model = onnx.load_model_from_string(minimal.case.model_bytes)
    try:
        triggers = probe_triggers(model, dict(minimal.case.feeds or {}), check,
                                  sandboxed_validator(sandbox), convert)
    except (NotReproducible, OutOfTime):
        return None, minimal
    if triggers.neutral is None:
        return triggers.sentence, minimal
    neutral = minimal.case.with_model(triggers.neutral.model.SerializeToString(),
                                      feeds=triggers.neutral.feeds)
    run = run_with_passes(sandbox, neutral, minimal.passes)
    found = _matching(run, minimal.finding)
    if found is None:
        return triggers.sentence, minimal
    return triggers.sentence, Minimal(neutral, found, minimal.passes, run, True,
                                      minimal.runs + check.runs + 1, minimal.seconds,
                                      minimal=minimal.minimal,  # the same nodes, renamed
                                      culprit=minimal.culprit)
