"""Deduplication: which bundle of a folder already records a finding's signature.

A bundle whose signature changed after it was made (``optfuzz localize`` on an old bundle keeps
its folder and id, records the new signature, and lists the old one under ``aliases``) is
still found, so later sightings count as hits on it instead of opening a second folder.
"""

from __future__ import annotations

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.graph_hash import MAX_GRAPH_VARIANTS, change_hash
from fuzzer.findings.signature import bundle_id, make_signature, signature_core
from fuzzer.store.folder import BundleStore
from oracles import symptom
from oracles.base import Finding


def finding_signature(case: TestCase, result: CaseResult, finding: Finding,
                      responsible: list[str] | None = None,
                      responsible_run: CaseResult | None = None) -> str:
    """The signature of ``finding`` (design.md): target, responsible passes (the configured
    list where not localized), symptom, normalized message, and, where the symptom's record
    asks for a footprint, the WL hash of the change region (:mod:`fuzzer.findings.graph_hash`)
    of the run with the responsible passes only (``responsible_run``, where localization made
    one), else of the case's own run."""
    passes = responsible if responsible is not None else case.config.get("passes")
    run = responsible_run if responsible_run is not None else result
    arts = run.artifacts
    graph = None
    if arts is not None and symptom(finding.symptom).footprint:
        graph = change_hash(arts.model, arts.optimized)
    return make_signature(case.target, passes, finding.symptom, finding.message, graph)


def find_bundle(store: BundleStore, symptom: str, signature: str) -> str | None:
    """The id of the bundle recording ``signature``: the one named after it, else one whose
    meta lists it as ``signature`` or among ``aliases``, else (where ``MAX_GRAPH_VARIANTS``
    bundles already share its core, the signature without the graph hash) the oldest of
    those; None when there is none."""
    direct = bundle_id(symptom, signature)
    if store.exists(direct):
        return direct
    core = signature_core(signature)
    variants: list[tuple[str, str]] = []
    for entry in store.index():
        if not entry.id.startswith(symptom + "-"):
            continue
        if entry.signature == signature or signature in (entry.aliases or ()):
            return entry.id
        if core != signature and signature_core(entry.signature) == core:
            variants.append((entry.first_seen, entry.id))
    if len(variants) >= MAX_GRAPH_VARIANTS:
        return min(variants)[1]
    return None


def find_root_cause(store: BundleStore, symptom_name: str, key: str) -> str | None:
    """The id of the bundle of root-cause ``key`` (:mod:`fuzzer.findings.rootcause`): the
    one named after it, else one whose meta records it as its root cause, else one whose
    meta lists it among its preliminary keys (:data:`fuzzer.store.meta.PRELIMINARY_KEYS`);
    None when there is none."""
    from fuzzer.findings.rootcause import root_cause_id
    from fuzzer.store.meta import PRELIMINARY_KEYS

    direct = root_cause_id(symptom_name, key)
    if store.exists(direct):
        return direct
    metas = store.index()
    return next((m.id for m in metas if m.root_cause == key), None) or \
        next((m.id for m in metas if key in (m.extra.get(PRELIMINARY_KEYS) or ())), None)
