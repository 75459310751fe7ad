"""What a campaign does with a finding: localize, sign, deduplicate, reduce, store."""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.bundle import record
from fuzzer.case import CaseResult, TestCase
from fuzzer.localize import localize
from fuzzer.reduce import reduce_finding
from fuzzer.sandbox import Sandbox
from fuzzer.signature import bundle_id, make_signature
from fuzzer.store import BundleStore
from oracles.base import Finding


@dataclass
class FindingPolicy:
    """Switches of finding handling: localization on/off, reduction time bound (seconds;
    0 turns reduction off)."""

    localize: bool = True
    reduce_seconds: float = 120.0


def primary_finding(result: CaseResult) -> Finding | None:
    """The most severe finding of a result (oracles report in severity order)."""
    return result.findings[0] if result.findings else None


def handle_finding(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
                   target_version: str, policy: FindingPolicy) -> tuple[str, bool] | None:
    """Record the primary finding of ``result``; return ``(bundle id, created)``."""
    finding = primary_finding(result)
    if finding is None or result.artifacts is None:
        return None
    where = localize(sandbox, case, result, finding) if policy.localize else None
    responsible = where.passes if where else None
    signature = make_signature(case.target, responsible or case.config.get("passes"),
                               finding.symptom, finding.message)
    minimized = None
    if policy.reduce_seconds > 0 and not store.exists(bundle_id(finding.symptom, signature)):
        minimized = reduce_finding(sandbox, case, result, finding, signature,
                                   policy.reduce_seconds)
    extra = {"localization": {"runs": where.runs}} if where else None
    return record(store, signature, finding, case, result.source, result.artifacts,
                  target_version, responsible, minimized, sandbox.timeout, extra)
