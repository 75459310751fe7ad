"""A bundle's contents: its meta (:func:`build_meta`) and files (:func:`bundle_files`:
models, inputs and outputs, repro.py, report.md, meta.json), one more sighting of it
(:func:`hit`), whether a finding shows its fault at an earlier stage than the bundle's own
model (:func:`is_plainer`), and :func:`record`, which creates the bundle of a signature or
counts a hit on it.
"""

from __future__ import annotations

from typing import Any

from fuzzer.execution.case import Artifacts, TestCase
from fuzzer.findings.signature import bundle_id as make_bundle_id
from fuzzer.handling.growth import handling_of
from fuzzer.modelio.graphs import node_count
from fuzzer.reduce.minimized import Minimized
from fuzzer.report.expected_actual import Observation
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.repro import render_repro, repro_context
from fuzzer.store.folder import BundleStore, dump_json
from fuzzer.store.meta import SCHEMA, BundleMeta
from fuzzer.store.npz import npz_bytes
from fuzzer.store.versions import environment_versions, utc_now
from oracles import symptom
from oracles.base import STAGES, Finding


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
                 timeout: float, observed: Observation | None = None) -> dict[str, bytes]:
    """Every file of a bundle: model/original/optimized .onnx, .npz feeds and outputs,
    repro.py, report.md (with model.onnx inline as ONNX text, and "Actual" worded from
    ``observed``, the run of model.onnx with the minimal passes, where given) and
    meta.json."""
    use = minimized or Minimized(original.model, original.feeds, original.optimized,
                                 original.expected, original.actual)
    repro = render_repro(timeout=timeout, **repro_context(meta))
    files = {
        "model.onnx": use.model,
        "original.onnx": original.model,
        "inputs.npz": npz_bytes(use.feeds),
        "repro.py": repro.encode(),
        "report.md": render_issue_draft(meta, repro, observed=observed, model=use.model,
                                        optimized=use.optimized, feeds=use.feeds).encode(),
    }
    if use.optimized is not None:
        files["optimized.onnx"] = use.optimized
    if symptom(meta.symptom).outputs and use.expected is not None:
        files["expected.npz"] = npz_bytes(use.expected)
        if use.actual is not None:
            files["actual.npz"] = npz_bytes(use.actual)
    if (handling := handling_of(meta.symptom)) is not None:
        files.update(handling.files(meta, use.model))
    files["meta.json"] = dump_json(meta.to_json())
    return files


def hit(meta: BundleMeta) -> BundleMeta:
    """``meta`` after one more sighting of its bug (now), as its own symptom."""
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


def is_plainer(store: BundleStore, bundle_id: str, finding: Finding,
               unseen: bool = False) -> bool:
    """Whether ``finding`` shows its fault at an earlier stage (:data:`oracles.base.STAGES`)
    than the model bundle ``bundle_id`` keeps (with ``unseen``: and with a symptom the
    bundle has not counted yet): an invalid model says more of a wrong rewrite than wrong
    outputs far downstream, so its minimized model is the one to forward. False where the
    bundle's meta cannot be read (a cluster handler sees none)."""
    try:
        kept = store.meta(bundle_id)
    except (OSError, ValueError):
        return False
    if unseen and finding.symptom in kept.symptoms:
        return False
    order = {stage: index for index, stage in enumerate(STAGES)}
    return order.get(finding.stage, len(order)) < order.get(kept.stage, len(order))
