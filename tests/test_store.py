"""The bundle store: atomic bundles, readable files, hits under the lock."""

from __future__ import annotations

import json
import os

from fuzzer.store.folder import BundleStore, write_atomic
from tests.bundle_files import bundle_files


def test_bundles_and_meta_are_readable_by_others(tmp_path):
    store = BundleStore(tmp_path)
    assert store.create("bloat-00000001", bundle_files("bloat-00000001"))
    write_atomic(tmp_path / "campaign.json", b"{}")
    mask = os.umask(0)
    os.umask(mask)
    for path in (tmp_path / "bloat-00000001" / "meta.json", tmp_path / "campaign.json"):
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    assert os.stat(tmp_path / "bloat-00000001").st_mode & 0o777 == 0o777 & ~mask


def test_second_create_updates_instead_of_overwriting(tmp_path):
    store = BundleStore(tmp_path)
    store.create("hang-00000002", dict(bundle_files("hang-00000002"), **{"model.onnx": b"first"}))

    def bump(meta):
        meta.hits += 1

    assert not store.create("hang-00000002", dict(bundle_files("hang-00000002"),
                                                  **{"model.onnx": b"second"}), on_exists=bump)
    assert json.loads((tmp_path / "hang-00000002" / "meta.json").read_text())["hits"] == 2
    assert (tmp_path / "hang-00000002" / "model.onnx").read_bytes() == b"first"
    assert store.ids() == ["hang-00000002"]


def test_batched_hits_reach_meta_on_flush(tmp_path):
    store = BundleStore(tmp_path, batch_hits=True)
    store.create("bloat-00000003", bundle_files("bloat-00000003"))
    for _ in range(5):
        store.add_hit("bloat-00000003", "2026-11-21T10:00:00Z")
    assert store.meta("bloat-00000003").hits == 1 and store.pending_hits() == 5
    store.flush_hits()
    meta = store.meta("bloat-00000003")
    assert (meta.hits, meta.last_seen) == (6, "2026-11-21T10:00:00Z")
    assert store.pending_hits() == 0


def test_index_sees_a_bundle_made_by_another_store(tmp_path):
    first, second = BundleStore(tmp_path), BundleStore(tmp_path)
    assert first.index() == []
    second.create("hang-00000004", bundle_files("hang-00000004", signature="s"))
    assert [e.signature for e in first.index()] == ["s"]


def test_unusable_reasons_group_by_what_failed():
    from fuzzer.campaign.stats import reason_key

    a = reason_key("reference: NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : "
                   "Could not find an implementation for AveragePool(1) node with name 'n3'")
    b = reason_key("reference: NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : "
                   "Could not find an implementation for AveragePool(1) node with name 'x'")
    assert a == b and "AveragePool" in a and "ONNXRuntimeError" not in a
