"""Reduction (shrinking) of failing models to minimal repros.

Polygraphy ``debug reduce``'s output and input cuts, then ddmin over nodes (Zeller &
Hildebrandt 2002), then simplification; see :mod:`fuzzer.reduce.reducer`. The predicate of a
campaign is "the same signature still reproduces" (:mod:`fuzzer.reduce.signature_check`);
``optfuzz reduce --check CMD`` uses an external command (:mod:`fuzzer.reduce.command_check`).
A candidate that reproduces is kept only where the ONNX reference evaluator runs it too, with
onnxruntime's output shapes (:mod:`fuzzer.reduce.reference_valid`): a repro must not rest on
onnxruntime's leniency, or it would still fail after the optimizer's real fix.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.reduce.minimized import Minimized
from oracles import symptom
from oracles.base import Finding

if TYPE_CHECKING:
    from fuzzer.reduce.predicate import Cutoff


def restricted_config(case: TestCase, passes: list[str] | None) -> dict[str, Any] | None:
    """The case's config running only ``passes`` (the responsible passes where localization
    found them), or None when that changes nothing or there are none."""
    from fuzzer.targets import get_target

    target = get_target(case.target)
    if not passes or list(passes) == target.passes_of(case.config):
        return None
    return target.with_passes(case.config, passes)


def control_config(case: TestCase, passes: list[str] | None,
                   culprit: str | None) -> dict[str, Any] | None:
    """The control of :func:`reduce_finding`'s first stage: the case's config running only
    ``passes`` (its own list where that changes nothing) less ``culprit``
    (:func:`fuzzer.reduce.signature_check.without_culprit`); None where there is none."""
    from fuzzer.reduce.signature_check import without_culprit

    config = restricted_config(case, passes) or case.config
    return without_culprit(case.with_config(config), culprit)


def reduce_finding(sandbox: Any, case: TestCase, result: CaseResult, finding: Finding,
                   passes: list[str] | None, time_limit: float,
                   cutoff: Cutoff | None = None, asked: bool = False,
                   culprit: str | None = None) -> Minimized | None:
    """A minimized model that still shows ``finding``; one with ``reduced`` False where the
    reduction ran to its end and nothing smaller keeps the finding (already minimal); None
    when nothing was shown.

    Args:
        sandbox: the campaign's :class:`fuzzer.execution.sandbox.Sandbox` (candidates run there).
        case: the failing test case; result: its CaseResult (artifacts required).
        finding: the primary finding; its symptom and normalized message must reproduce.
        passes: the responsible passes; candidates run with only these first (cheaper runs,
            and no other pass can change the finding), then with the case's own list.
        time_limit: seconds the reduction may take.
        cutoff: a :class:`fuzzer.reduce.predicate.Cutoff` whose moment also ends the
            reduction (None: none).
        asked: the reduction was asked for by name (``optfuzz reduce``), so a symptom a
            campaign leaves unreduced because each candidate may cost the whole per-case
            timeout (a hang; the user chose ``--timeout``) is reduced too.
        culprit: the pass the finding is blamed on (None: none): a candidate that shows the
            finding with that pass left out too is another fault, and does not count as
            reproducing (:func:`fuzzer.reduce.signature_check.without_culprit`).

    A candidate that reproduces must also pass the spec gate
    (:class:`fuzzer.reduce.reference_valid.ReferenceGate`: the reference evaluator runs it, in
    a sandbox worker, with the output shapes of its own onnxruntime run); one that does not
    counts as not reproducing, so the reduction keeps the last candidate that passes.

    Returns:
        :class:`fuzzer.reduce.minimized.Minimized` with model, feeds, and the optimized model and
        expected/actual outputs of the minimized run (``reduced`` False: the model as given
        is already minimal); None when the finding does not reproduce, the time ran out
        before a smaller model, or it is a hang and not ``asked``.
    """
    from fuzzer.modelio.load import parse_model
    from fuzzer.reduce.candidate import Built
    from fuzzer.reduce.predicate import Budget, fingerprint
    from fuzzer.reduce.reducer import NotReproducible, reduce_model
    from fuzzer.reduce.reference_valid import ReferenceGate
    from fuzzer.reduce.signature_check import SignatureCheck, without_culprit
    from fuzzer.reduce.values import record_sandboxed

    arts = result.artifacts
    if arts is None or not (asked or symptom(finding.symptom).reducible) or time_limit <= 0:
        return None
    model = parse_model(arts.model)
    budget = Budget(time_limit, cutoff)
    recorded = record_sandboxed(sandbox, model, arts.feeds)
    gate = ReferenceGate(sandbox, original=(Built(model, dict(arts.feeds)), arts.expected))
    configs = [c for c in (restricted_config(case, passes), case.config) if c is not None]
    for config in configs:
        check = SignatureCheck(sandbox, case.with_config(config), finding.symptom,
                               finding.message, budget, finding.detail, gate,
                               without_culprit(case.with_config(config), culprit))
        # no need to run it again, but for its control
        seen = config is case.config and check.control is None and check.matches(result)
        try:
            reduction = reduce_model(model, arts.feeds, check, recorded,
                                     partial(record_sandboxed, sandbox), verified=seen)
        except NotReproducible:
            continue
        except Exception:  # OutOfTime before the first check, or a bug of the reducer
            return None
        if reduction.nodes[1] >= reduction.nodes[0] and \
                reduction.built.model.ByteSize() >= model.ByteSize():
            if not reduction.complete:
                return None
            return Minimized(arts.model, dict(arts.feeds), arts.optimized, arts.expected,
                             arts.actual, runs=check.runs, seconds=reduction.seconds,
                             reduced=False, complete=True)
        if config is not case.config and not _reproduces(sandbox, case, finding, budget,
                                                          reduction.built, gate, culprit):
            continue  # narrowed passes found a different minimum; redo with the full list
        run = check.results.get(fingerprint(reduction.built))
        run_arts = run.artifacts if run is not None else None
        return Minimized(
            reduction.built.model.SerializeToString(), reduction.built.feeds,
            run_arts.optimized if run_arts else None,
            run_arts.expected if run_arts else None,
            run_arts.actual if run_arts else None,
            runs=check.runs, seconds=reduction.seconds, complete=reduction.complete)
    return None


def _reproduces(sandbox: Any, case: TestCase, finding: Finding, budget: Any,
                built: Any, gate: Any = None, culprit: str | None = None) -> bool:
    """Whether ``built`` shows the finding under the case's full configuration (and passes
    ``gate``, and not without ``culprit``: see
    :class:`fuzzer.reduce.signature_check.SignatureCheck`)."""
    from fuzzer.reduce.predicate import OutOfTime
    from fuzzer.reduce.signature_check import SignatureCheck, without_culprit

    try:
        return SignatureCheck(sandbox, case, finding.symptom, finding.message, budget,
                              finding.detail, gate, without_culprit(case, culprit))(built)
    except OutOfTime:
        return False
