"""Reduction (shrinking) of failing models to minimal repros.

Polygraphy ``debug reduce``'s output and input cuts, then ddmin over nodes (Zeller &
Hildebrandt 2002), then simplification; see :mod:`fuzzer.reduce.reducer`. The predicate of a
campaign is "the same signature still reproduces" (:mod:`fuzzer.reduce.signature_check`);
``optfuzz reduce --check CMD`` uses an external command (:mod:`fuzzer.reduce.command_check`).
"""

from __future__ import annotations

from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.reduce.minimized import Minimized
from oracles import symptom
from oracles.base import Finding


def restricted_config(case: TestCase, signature: str) -> dict[str, Any] | None:
    """The case's config with its pass list narrowed to the signature's passes (the
    responsible passes where localization found them), or None when that changes nothing."""
    fields = signature.split("|")
    passes = [p for p in fields[1].split(",") if p] if len(fields) > 1 else []
    if not passes or passes == list(case.config.get("passes") or []):
        return None
    return dict(case.config, passes=passes)


def reduce_finding(sandbox: Any, case: TestCase, result: CaseResult, finding: Finding,
                   signature: str, time_limit: float) -> Minimized | None:
    """A minimized model that still shows ``signature``, or None when nothing was reduced.

    Args:
        sandbox: the campaign's :class:`fuzzer.execution.sandbox.Sandbox` (candidates run there).
        case: the failing test case; result: its CaseResult (artifacts required).
        finding: the primary finding; its symptom and normalized message must reproduce.
        signature: the finding's signature (its pass field narrows the pass list).
        time_limit: seconds the reduction may take.

    Returns:
        :class:`fuzzer.reduce.minimized.Minimized` with model, feeds, and the optimized model and
        expected/actual outputs of the minimized run; None when the finding does not
        reproduce, cannot be reduced, or is a hang.
    """
    from fuzzer.modelio.load import parse_model
    from fuzzer.reduce.predicate import Budget, fingerprint
    from fuzzer.reduce.reducer import NotReproducible, reduce_model
    from fuzzer.reduce.signature_check import SignatureCheck
    from fuzzer.reduce.values import record_sandboxed

    arts = result.artifacts
    if arts is None or not symptom(finding.symptom).reducible or time_limit <= 0:
        return None
    model = parse_model(arts.model)
    budget = Budget(time_limit)
    recorded = record_sandboxed(sandbox, model, arts.feeds)
    configs = [c for c in (restricted_config(case, signature), case.config) if c is not None]
    for config in configs:
        check = SignatureCheck(sandbox, case.with_config(config), finding.symptom,
                               finding.message, budget)
        try:
            reduction = reduce_model(model, arts.feeds, check, recorded)
        except NotReproducible:
            continue
        except Exception:  # OutOfTime before the first check, or a bug of the reducer
            return None
        if reduction.nodes[1] >= reduction.nodes[0] and \
                reduction.built.model.ByteSize() >= model.ByteSize():
            return None
        if config is not case.config and not _reproduces(sandbox, case, finding, budget,
                                                          reduction.built):
            continue  # narrowed passes found a different minimum; redo with the full list
        run = check.results.get(fingerprint(reduction.built))
        run_arts = run.artifacts if run is not None else None
        return Minimized(
            reduction.built.model.SerializeToString(), reduction.built.feeds,
            run_arts.optimized if run_arts else None,
            run_arts.expected if run_arts else None,
            run_arts.actual if run_arts else None,
            runs=check.runs, seconds=reduction.seconds)
    return None


def _reproduces(sandbox: Any, case: TestCase, finding: Finding, budget: Any,
                built: Any) -> bool:
    """Whether ``built`` shows the finding under the case's full configuration."""
    from fuzzer.reduce.predicate import OutOfTime
    from fuzzer.reduce.signature_check import SignatureCheck

    try:
        return SignatureCheck(sandbox, case, finding.symptom, finding.message, budget)(built)
    except OutOfTime:
        return False
