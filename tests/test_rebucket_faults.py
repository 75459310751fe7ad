"""``optfuzz triage --rebucket`` applies one bundle per fault to a folder written by the
symptom-keyed main: the fake target's ``drop-transpose`` fault in three bundles (an invalid
model, wrong outputs, a run-time failure) becomes one bundle that counts the three symptoms
and keeps the other two models as variants; a bundle that blamed ``trust-shape`` for
``rank0-shape``'s damage now blames ``rank0-shape``; no model is lost."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from fuzzer.store.folder import BundleStore
from fuzzer.store.npz import npz_bytes
from tests.bundle_files import meta_dict
from tests.localize_models import chain
from tests.test_one_bundle_per_fault import _transposed
from tests.test_triage_status import optfuzz

#: bundle id -> (model tail of :func:`_transposed`, symptom, stage, hits)
TRANSPOSE = {
    "invalid-model-0000aaa1": ("declared", "invalid-model", "validate", 2),
    "output-mismatch-0000aaa2": ("square", "output-mismatch", "compare", 5),
    "runtime-failure-0000aaa3": ("added", "runtime-failure", "execute", 1),
}
RANK0 = "invalid-model-0000bbb1"


def _write(folder: Path, meta: dict, model: bytes, feeds: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    (folder / "model.onnx").write_bytes(model)
    (folder / "original.onnx").write_bytes(model)
    (folder / "inputs.npz").write_bytes(npz_bytes(feeds))


def _folder(root: Path) -> Path:
    out = root / "crashes"
    for bid, (tail, symptom, stage, hits) in TRANSPOSE.items():
        model, feeds = _transposed(tail)
        config = {"passes": ["drop-transpose"], "fixed_point": False}
        _write(out / bid, meta_dict(
            bid, symptom=symptom, stage=stage, hits=hits,
            signature=f"fake|drop-transpose|{symptom}|x", message=f"{symptom} message",
            target={"name": "fake", "version": "1.0", "config": config},
            responsible_passes=["drop-transpose"], breaking_pass="drop-transpose",
            root_cause=f"fake|drop-transpose|{symptom}|x"), model, feeds)
    model = chain(["Neg", "Exp"])
    feeds = {"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)}
    config = {"passes": ["rank0-shape", "trust-shape"], "fixed_point": False}
    _write(out / RANK0, meta_dict(
        RANK0, symptom="invalid-model", stage="validate", message="InferenceError: rank",
        target={"name": "fake", "version": "1.0", "config": config},
        responsible_passes=["rank0-shape", "trust-shape"], breaking_pass="trust-shape",
        enabling_passes=["rank0-shape"]), model, feeds)
    return out


def _models(folder: Path) -> set[str]:
    """sha256 of every .onnx model under ``folder``."""
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*.onnx")}


def test_rebucket_joins_one_faults_symptoms_and_blames_the_culprit(tmp_path):
    out = _folder(tmp_path)
    before = _models(out)
    proc = optfuzz("triage", "--rebucket", str(out), "--timeout", "20", "--jobs", "2",
                   timeout=300)
    assert proc.returncode == 0, proc.stderr
    store = BundleStore(out)
    ids = store.ids()
    assert len(ids) == 2, (ids, proc.stdout)
    assert _models(out) >= before  # every model kept: in its bundle or as a variant
    transpose = next(bid for bid in ids if bid != RANK0)
    meta = store.meta(transpose)
    assert transpose == "invalid-model-0000aaa1"  # the plainest symptom's model is kept
    assert meta.symptoms == {"invalid-model": 2, "output-mismatch": 5, "runtime-failure": 1}
    assert meta.hits == 8 and len(meta.variants) == 2
    assert meta.root_cause == "fake|drop-transpose|rewrite|fp:-Transpose"
    rank0 = store.meta(RANK0)
    assert (rank0.breaking_pass, rank0.exposed_by) == ("rank0-shape", "trust-shape")
    assert rank0.root_cause.startswith("fake|rank0-shape|rewrite|")
