"""Turning a finding into a bundle (files and meta.json schema 1) and recording hits."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.case import Artifacts, TestCase
from fuzzer.issue_draft import render_issue_draft
from fuzzer.repro_script import render_repro, repro_context
from fuzzer.signature import bundle_id as make_bundle_id
from fuzzer.store import BundleStore, dump_json
from fuzzer.versions import environment_versions, utc_now
from oracles.base import Finding

SCHEMA = 1


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``np.savez`` of ``arrays`` into bytes."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@dataclass
class Minimized:
    """A reduced form of the failing test: model bytes and feeds, plus what it cost."""

    model: bytes
    feeds: dict[str, np.ndarray]
    optimized: bytes | None = None
    expected: dict[str, np.ndarray] | None = None
    actual: dict[str, np.ndarray] | None = None
    runs: int = 0
    seconds: float = 0.0


def node_count(model_bytes: bytes) -> int:
    """Nodes of the main graph of a serialized model."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(model_bytes)
    return len(model.graph.node)


def build_meta(bid: str, signature: str, finding: Finding, case: TestCase, source: dict,
               target_version: str, responsible: list[str] | None, nodes_original: int,
               nodes_minimized: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """meta.json (schema 1) for a new bundle."""
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
    return meta


def bundle_files(meta: dict[str, Any], original: Artifacts, minimized: Minimized | None,
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
    if meta["symptom"] == "output-mismatch" and use.expected is not None:
        files["expected.npz"] = npz_bytes(use.expected)
        if use.actual is not None:
            files["actual.npz"] = npz_bytes(use.actual)
    files["meta.json"] = dump_json(meta)
    return files


def bundle_case(folder: Path, meta: dict[str, Any],
                config: dict[str, Any] | None = None) -> TestCase:
    """The TestCase of a bundle folder: model.onnx bytes, inputs.npz feeds, and the target
    and configuration recorded in its meta.json (``config`` replaces the latter).

    Raises:
        OSError: model.onnx or inputs.npz is missing or unreadable.
        ValueError: inputs.npz is not an npz archive, or meta.json lacks the target.
    """
    model = (folder / "model.onnx").read_bytes()
    with np.load(io.BytesIO((folder / "inputs.npz").read_bytes()), allow_pickle=False) as npz:
        feeds = {name: npz[name] for name in npz.files}
    try:
        target = meta["target"]
    except (KeyError, TypeError):
        raise ValueError("meta.json names no target") from None
    return TestCase(target["name"], dict(config if config is not None else target["config"]),
                    {"kind": "bundle", "id": meta.get("id", folder.name),
                     "path": str(folder)},
                    model_bytes=model, feeds=feeds)


def hit(meta: dict[str, Any]) -> dict[str, Any]:
    """meta.json after one more sighting of its bug."""
    meta["hits"] = int(meta.get("hits", 0)) + 1
    meta["last_seen"] = utc_now()
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
