"""What a campaign does with a finding: localize, sign, deduplicate, reduce, store.

Deduplication: the bundle id is derived from the signature (``<symptom>-<8 hex>``). A bundle
whose signature changed after it was made (``optfuzz localize`` on an old bundle keeps its
folder and id, records the new signature, and lists the old one under ``aliases``) is found
by :func:`find_bundle`, so later sightings still count as hits on it instead of opening a
second folder.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.bundle import record
from fuzzer.case import CaseResult, TestCase
from fuzzer.graph_hash import GRAPH_SYMPTOMS, MAX_GRAPH_VARIANTS, change_hash
from fuzzer.localize import Localization, Prober, localize
from fuzzer.reduce import reduce_finding
from fuzzer.sandbox import Sandbox
from fuzzer.signature import bundle_id, make_signature, normalize_message, signature_core
from fuzzer.store import BundleStore
from oracles.base import Finding


@dataclass
class FindingPolicy:
    """Switches of finding handling: localization on/off, reduction time bound (seconds;
    0 turns reduction off)."""

    localize: bool = True
    reduce_seconds: float = 120.0


class LocalizationMemo:
    """Localizations already made in a campaign, keyed by what a finding looks like before
    localization: target, configured pass list, fixed_point, symptom, normalized message.

    A finding seen again with the same key costs one confirming run (the remembered
    responsible passes alone, which also gives the run the signature's graph hash is taken
    from) instead of a full search; where the confirmation fails, a full search runs.
    """

    def __init__(self) -> None:
        self._known: dict[tuple, list[str] | None] = {}
        self.saved_searches = 0

    @staticmethod
    def key(case: TestCase, finding: Finding) -> tuple:
        """The memo key of ``finding`` in ``case``."""
        return (case.target, tuple(case.config.get("passes") or ()),
                bool(case.config.get("fixed_point", False)), finding.symptom,
                normalize_message(finding.message))

    def localize(self, sandbox: Sandbox, case: TestCase, result: CaseResult,
                 finding: Finding) -> Localization:
        """Like :func:`fuzzer.localize.localize`, reusing earlier answers."""
        key = self.key(case, finding)
        if key in self._known:
            passes = self._known[key]
            if passes is None:
                self.saved_searches += 1
                return Localization(None, 0, "memo")
            probe = Prober(sandbox, case, finding, key[2])
            if probe.test(tuple(passes)):
                self.saved_searches += 1
                return Localization(list(passes), probe.runs, "memo", None,
                                    probe.result(tuple(passes)))
        where = localize(sandbox, case, result, finding)
        self._known[key] = where.passes
        return where


#: symptoms that depend on timing or load: recorded only when a second run shows them too
#: (AFL's hang confirmation), so that no bundle holds a repro that passes.
CONFIRMED_SYMPTOMS = frozenset({"hang"})


def confirmed(sandbox: Sandbox, case: TestCase, finding: Finding) -> bool:
    """Whether running ``case`` again shows ``finding``'s symptom."""
    again = sandbox.run(case)
    return any(f.symptom == finding.symptom for f in again.findings)


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
    meta lists it as ``signature`` or among ``aliases``, else (where ``MAX_GRAPH_VARIANTS``
    bundles already share its core, the signature without the graph hash) the oldest of
    those; None when there is none."""
    direct = bundle_id(symptom, signature)
    if store.exists(direct):
        return direct
    core = signature_core(signature)
    variants: list[tuple[str, str]] = []
    for entry in store.index():
        if not entry["id"].startswith(symptom + "-"):
            continue
        if entry["signature"] == signature or signature in entry["aliases"]:
            return entry["id"]
        if core != signature and signature_core(entry["signature"]) == core:
            variants.append((entry["first_seen"], entry["id"]))
    if len(variants) >= MAX_GRAPH_VARIANTS:
        return min(variants)[1]
    return None


def handle_finding(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
                   target_version: str, policy: FindingPolicy,
                   memo: LocalizationMemo | None = None) -> tuple[str, bool] | None:
    """Record the primary finding of ``result``; return ``(bundle id, created)``.

    A hang is first confirmed by a second run (None when it does not recur). Localization
    runs first (its runs go through ``sandbox``; ``memo`` reuses earlier answers of the same
    campaign); a known signature counts a hit (``hits`` + 1, ``last_seen``) and skips
    reduction.
    """
    finding = primary_finding(result)
    if finding is None or result.artifacts is None:
        return None
    if finding.symptom in CONFIRMED_SYMPTOMS and not confirmed(sandbox, case, finding):
        return None
    where = None
    if policy.localize:
        where = (memo.localize(sandbox, case, result, finding) if memo is not None
                 else localize(sandbox, case, result, finding))
    signature = finding_signature(case, result, finding, where)
    known = find_bundle(store, finding.symptom, signature)
    if known is not None:
        store.add_hit(known)
        return known, False
    minimized = None
    if policy.reduce_seconds > 0:
        minimized = reduce_finding(sandbox, case, result, finding, signature,
                                   policy.reduce_seconds)
    extra = {"localization": where.to_json()} if where else None
    responsible = where.passes if where else None
    return record(store, signature, finding, case, result.source, result.artifacts,
                  target_version, responsible, minimized, sandbox.timeout, extra)
