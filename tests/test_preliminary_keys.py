"""A preliminary root-cause key (taken on a found model before reduction) that led to a
bundle is kept in its meta, so that a later campaign on the folder (a resumed one) sends the
same finding to the bundle as a hit instead of reducing it again; a cluster node's recorded
variant carries the key to the driver's store."""

from __future__ import annotations

import json

from fuzzer.cluster.recording import RecordingStore, apply
from fuzzer.findings.dedup import find_root_cause
from fuzzer.handling.outcome import Handled
from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import MAX_PRELIMINARY_KEYS, PRELIMINARY_KEYS
from tests.bundle_files import bundle_files

KEY = "onnxoptimizer|fuse_bn_into_conv|output-mismatch|Conv+BatchNormalization"
FOUND = "onnxoptimizer|fuse_bn_into_conv|output-mismatch|Conv+BatchNormalization+Relu"
BID = "output-mismatch-0000000b"
VARIANT = {".onnx": b"model", ".npz": b"inputs"}


def made(tmp_path) -> BundleStore:
    store = BundleStore(tmp_path)
    assert store.create(BID, bundle_files(BID, root_cause=KEY))
    return store


def keys(tmp_path) -> list[str]:
    return json.loads((tmp_path / BID / "meta.json").read_text()).get(PRELIMINARY_KEYS, [])


def test_a_merged_preliminary_key_finds_its_bundle_from_a_new_store(tmp_path):
    store = made(tmp_path)
    assert find_root_cause(store, "output-mismatch", FOUND) is None
    store.add_variant(BID, VARIANT, 0, "2026-11-27T00:00:00Z", key=FOUND)  # no variant kept
    again = BundleStore(tmp_path)  # a later campaign: nothing in memory
    assert find_root_cause(again, "output-mismatch", FOUND) == BID
    assert find_root_cause(again, "output-mismatch", KEY) == BID
    assert keys(tmp_path) == [FOUND]


def test_preliminary_keys_are_kept_once_and_capped(tmp_path):
    store = made(tmp_path)
    store.add_variant(BID, VARIANT, 0, "2026-11-27T00:00:00Z", key=KEY)  # its own key
    for i in range(MAX_PRELIMINARY_KEYS + 5):
        for _ in range(2):
            store.add_variant(BID, VARIANT, 0, "2026-11-27T00:00:00Z", key=f"{FOUND}|{i}")
    kept = keys(tmp_path)
    assert len(kept) == MAX_PRELIMINARY_KEYS == len(set(kept)) and KEY not in kept


def test_a_cluster_nodes_merge_carries_its_key_to_the_drivers_store(tmp_path):
    store = made(tmp_path)
    recording = RecordingStore({BID: KEY})
    assert find_root_cause(recording, "output-mismatch", FOUND) is None
    recording.add_variant(BID, VARIANT, 4, "2026-11-27T00:00:00Z", key=FOUND)
    apply(store, Handled("merged", BID), recording.ops)
    assert keys(tmp_path) == [FOUND]
    assert find_root_cause(BundleStore(tmp_path), "output-mismatch", FOUND) == BID
