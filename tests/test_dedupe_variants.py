"""Graph-hash variants of one message are capped: the output folder cannot flood."""

from __future__ import annotations

from fuzzer.findings.dedup import find_bundle
from fuzzer.findings.graph_hash import MAX_GRAPH_VARIANTS
from fuzzer.findings.signature import bundle_id
from fuzzer.store.folder import BundleStore
from tests.bundle_files import bundle_files

CORE = "onnxoptimizer|fuse_bn_into_conv|output-mismatch|output <n> <name>: values differ"


def _make(store: BundleStore, signature: str, first_seen: str) -> str:
    bid = bundle_id("output-mismatch", signature)
    store.create(bid, bundle_files(bid, signature=signature, first_seen=first_seen))
    return bid


def test_variants_beyond_the_cap_count_on_the_oldest(tmp_path):
    store = BundleStore(tmp_path)
    made = [_make(store, f"{CORE}|g:{i}", f"2026-11-21T10:0{i}:00Z")
            for i in range(MAX_GRAPH_VARIANTS)]
    assert find_bundle(store, "output-mismatch", f"{CORE}|g:0") == made[0]
    assert find_bundle(store, "output-mismatch", f"{CORE}|g:new") == made[0]


def test_below_the_cap_a_new_variant_is_new(tmp_path):
    store = BundleStore(tmp_path)
    _make(store, f"{CORE}|g:0", "2026-11-21T10:00:00Z")
    assert find_bundle(store, "output-mismatch", f"{CORE}|g:1") is None
