"""Bundle files for store tests: a complete schema-1 meta.json and the files a bundle needs."""

from __future__ import annotations

import json
from typing import Any


def meta_dict(bundle_id: str, **changes: Any) -> dict[str, Any]:
    """A valid schema-1 meta.json object of the fake target for ``bundle_id``; ``changes``
    replace or add top-level keys."""
    symptom = bundle_id.rsplit("-", 1)[0]
    meta = {
        "schema": 1, "id": bundle_id, "signature": f"fake|drop-node|{symptom}|message",
        "symptom": symptom, "stage": "compare", "message": "message",
        "target": {"name": "fake", "version": "1.0",
                   "config": {"passes": ["drop-node"], "fixed_point": False}},
        "responsible_passes": None,
        "source": {"kind": "generated", "seed": 1, "motifs": []},
        "versions": {"onnx": "1.23.2", "onnxruntime": "1.31.1"},
        "nodes": {"original": 5, "minimized": 1},
        "first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-01T00:00:00Z", "hits": 1,
    }
    meta.update(changes)
    return meta


def bundle_files(bundle_id: str, **changes: Any) -> dict[str, bytes]:
    """``{file name: bytes}`` of a bundle with :func:`meta_dict` and placeholder
    model.onnx and inputs.npz (present, as the store requires; never run)."""
    return {"meta.json": json.dumps(meta_dict(bundle_id, **changes)).encode(),
            "model.onnx": b"model", "inputs.npz": b"inputs"}
