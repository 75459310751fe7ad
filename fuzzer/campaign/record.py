"""What a campaign does with a finding: localize, sign, deduplicate, reduce, and write the
bundle (or count a hit on the bundle that already records it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import Artifacts, CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.dedup import find_bundle, finding_signature
from fuzzer.findings.signature import bundle_id as make_bundle_id
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.localize.search import localize
from fuzzer.modelio.graphs import node_count
from fuzzer.reduce import reduce_finding
from fuzzer.reduce.minimized import Minimized
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.repro import render_repro, repro_context
from fuzzer.store.folder import BundleStore, dump_json
from fuzzer.store.meta import SCHEMA, BundleMeta
from fuzzer.store.npz import npz_bytes
from fuzzer.store.versions import environment_versions, utc_now
from oracles import symptom
from oracles.base import Finding


@dataclass
class FindingPolicy:
    """Switches of finding handling: localization on/off, reduction time bound (seconds;
    0 turns reduction off)."""

    localize: bool = True
    reduce_seconds: float = 120.0


def confirmed(sandbox: Sandbox, case: TestCase, finding: Finding) -> bool:
    """Whether running ``case`` again shows ``finding``'s symptom."""
    again = sandbox.run(case)
    return any(f.symptom == finding.symptom for f in again.findings)


def primary_finding(result: CaseResult) -> Finding | None:
    """The most severe finding of a result (oracles report in severity order)."""
    return result.findings[0] if result.findings else None


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
    if symptom(finding.symptom).confirm and not confirmed(sandbox, case, finding):
        return None
    where = None
    if policy.localize:
        where = (memo.localize(sandbox, case, result, finding) if memo is not None
                 else localize(sandbox, case, result, finding))
    signature = finding_signature(case, result, finding, where and where.passes,
                                  where and where.result)
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


def build_meta(bid: str, signature: str, finding: Finding, case: TestCase, source: dict,
               target_version: str, responsible: list[str] | None, nodes_original: int,
               nodes_minimized: int, extra: dict[str, Any] | None = None) -> BundleMeta:
    """The meta of a new bundle; ``extra`` sets further fields by their meta.json name
    (e.g. ``localization``).

    Raises:
        MetaError: a value of ``extra`` has the wrong type for its field.
    """
    now = utc_now()
    meta = {
        "schema": SCHEMA,
        "id": bid,
        "signature": signature,
        "symptom": finding.symptom,
        "stage": finding.stage,
        "message": finding.message,
        "target": {"name": case.target, "version": target_version, "config": case.config},
        "responsible_passes": responsible,
        "source": {k: v for k, v in source.items() if k != "passes"},
        "versions": environment_versions(),
        "nodes": {"original": nodes_original, "minimized": nodes_minimized},
        "first_seen": now,
        "last_seen": now,
        "hits": 1,
    }
    meta.update(extra or {})
    return BundleMeta.from_json(meta)


def bundle_files(meta: BundleMeta, original: Artifacts, minimized: Minimized | None,
                 timeout: float) -> dict[str, bytes]:
    """Every file of a bundle: model/original/optimized .onnx, .npz feeds and outputs,
    repro.py, report.md and meta.json."""
    use = minimized or Minimized(original.model, original.feeds, original.optimized,
                                 original.expected, original.actual)
    repro = render_repro(timeout=timeout, **repro_context(meta))
    files = {
        "model.onnx": use.model,
        "original.onnx": original.model,
        "inputs.npz": npz_bytes(use.feeds),
        "repro.py": repro.encode(),
        "report.md": render_issue_draft(meta, repro).encode(),
    }
    if use.optimized is not None:
        files["optimized.onnx"] = use.optimized
    if meta.symptom == "output-mismatch" and use.expected is not None:
        files["expected.npz"] = npz_bytes(use.expected)
        if use.actual is not None:
            files["actual.npz"] = npz_bytes(use.actual)
    files["meta.json"] = dump_json(meta.to_json())
    return files


def hit(meta: BundleMeta) -> BundleMeta:
    """``meta`` after one more sighting of its bug (now)."""
    meta.add_hits(1, utc_now())
    return meta


def record(store: BundleStore, signature: str, finding: Finding, case: TestCase,
           source: dict, artifacts: Artifacts, target_version: str,
           responsible: list[str] | None, minimized: Minimized | None = None,
           timeout: float = 30.0, extra: dict[str, Any] | None = None) -> tuple[str, bool]:
    """Create the bundle for ``signature`` or count a hit on it; return ``(id, created)``."""
    bid = make_bundle_id(finding.symptom, signature)
    if store.exists(bid):
        store.add_hit(bid)
        return bid, False
    n_min = node_count(minimized.model) if minimized else node_count(artifacts.model)
    meta = build_meta(bid, signature, finding, case, source, target_version, responsible,
                      node_count(artifacts.model), n_min, extra)
    created = store.create(bid, bundle_files(meta, artifacts, minimized, timeout), on_exists=hit)
    return bid, created
