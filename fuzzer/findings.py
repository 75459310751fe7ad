"""What a campaign does with a finding: localize, sign, deduplicate, reduce, store.

Deduplication: the bundle id is derived from the signature (``<symptom>-<8 hex>``). A bundle
whose signature changed after it was made (``optfuzz localize`` on an old bundle keeps its
folder and id, records the new signature, and lists the old one under ``aliases``) is found
by :func:`find_bundle`, so later sightings still count as hits on it instead of opening a
second folder.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.bundle import hit, record
from fuzzer.case import CaseResult, TestCase
from fuzzer.graph_hash import GRAPH_SYMPTOMS, change_hash
from fuzzer.localize import Localization, localize
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


def finding_signature(case: TestCase, result: CaseResult, finding: Finding,
                      where: Localization | None) -> str:
    """The signature of ``finding`` (design.md): target, responsible passes (the configured
    list where not localized), symptom, normalized message, and the WL hash of the change
    region (:mod:`fuzzer.graph_hash`, for its GRAPH_SYMPTOMS), computed on the run with the
    responsible passes only where localization made one, else on the case's own run."""
    responsible = where.passes if where is not None else None
    passes = responsible if responsible is not None else case.config.get("passes")
    run = where.result if where is not None and where.result is not None else result
    arts = run.artifacts
    graph = None
    if arts is not None and finding.symptom in GRAPH_SYMPTOMS:
        graph = change_hash(arts.model, arts.optimized)
    return make_signature(case.target, passes, finding.symptom, finding.message, graph)


def find_bundle(store: BundleStore, symptom: str, signature: str) -> str | None:
    """The id of the bundle recording ``signature``: the one named after it, else one whose
    meta lists it as ``signature`` or among ``aliases``; None when there is none."""
    direct = bundle_id(symptom, signature)
    if store.exists(direct):
        return direct
    for bid in store.ids():
        if not bid.startswith(symptom + "-"):
            continue
        try:
            meta = store.meta(bid)
        except (OSError, ValueError):
            continue
        if meta.get("signature") == signature or signature in meta.get("aliases", ()):
            return bid
    return None


def handle_finding(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
                   target_version: str, policy: FindingPolicy) -> tuple[str, bool] | None:
    """Record the primary finding of ``result``; return ``(bundle id, created)``.

    Localization runs first (its runs go through ``sandbox``); a known signature counts a
    hit (``hits`` + 1, ``last_seen``) and skips reduction.
    """
    finding = primary_finding(result)
    if finding is None or result.artifacts is None:
        return None
    where = localize(sandbox, case, result, finding) if policy.localize else None
    signature = finding_signature(case, result, finding, where)
    known = find_bundle(store, finding.symptom, signature)
    if known is not None:
        store.update(known, hit)
        return known, False
    minimized = None
    if policy.reduce_seconds > 0:
        minimized = reduce_finding(sandbox, case, result, finding, signature,
                                   policy.reduce_seconds)
    extra = {"localization": where.to_json()} if where else None
    responsible = where.passes if where else None
    return record(store, signature, finding, case, result.source, result.artifacts,
                  target_version, responsible, minimized, sandbox.timeout, extra)
