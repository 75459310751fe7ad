"""A preliminary root-cause key (taken on a found model before reduction) that led to a
bundle is kept in its meta, so that a later campaign on the folder (a resumed one, another
machine) sends the same finding to the bundle as a hit instead of reducing it again."""

from __future__ import annotations

import json

from fuzzer.findings.dedup import (
    MAX_PRELIMINARY_KEYS,
    PRELIMINARY_KEYS,
    find_root_cause,
    remember_preliminary,
)
from fuzzer.store.folder import BundleStore
from tests.bundle_files import bundle_files

KEY = "onnxoptimizer|fuse_bn_into_conv|output-mismatch|Conv+BatchNormalization"
FOUND = "onnxoptimizer|fuse_bn_into_conv|output-mismatch|Conv+BatchNormalization+Relu"
BID = "output-mismatch-0000000b"


def made(tmp_path) -> BundleStore:
    store = BundleStore(tmp_path)
    assert store.create(BID, bundle_files(BID, root_cause=KEY))
    return store


def test_a_remembered_preliminary_key_finds_its_bundle_in_a_new_store(tmp_path):
    store = made(tmp_path)
    assert find_root_cause(store, "output-mismatch", FOUND) is None
    remember_preliminary(store, BID, FOUND)
    again = BundleStore(tmp_path)  # a later campaign: nothing in memory
    assert find_root_cause(again, "output-mismatch", FOUND) == BID
    assert find_root_cause(again, "output-mismatch", KEY) == BID
    meta = json.loads((tmp_path / BID / "meta.json").read_text())
    assert meta[PRELIMINARY_KEYS] == [FOUND] and meta["root_cause"] == KEY


def test_preliminary_keys_are_kept_once_and_capped(tmp_path):
    store = made(tmp_path)
    remember_preliminary(store, BID, KEY)  # its own root cause: nothing to keep
    for i in range(MAX_PRELIMINARY_KEYS + 5):
        remember_preliminary(store, BID, f"{FOUND}|{i}")
        remember_preliminary(store, BID, f"{FOUND}|{i}")
    keys = json.loads((tmp_path / BID / "meta.json").read_text())[PRELIMINARY_KEYS]
    assert len(keys) == MAX_PRELIMINARY_KEYS == len(set(keys)) and KEY not in keys
