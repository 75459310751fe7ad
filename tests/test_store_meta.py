"""The bundle metadata record: schema-1 folders read and upgraded without losing a field, and
damaged bundles skipped and counted by the store and by every command that lists bundles.

tests/data/wave1/ holds three bundles (meta.json schema 1, model.onnx, inputs.npz and the
output files) written by ``python -m fuzzer fuzz --target fake --passes raise,drop-node,bloat
--max-cases 60 --jobs 1 --reduce-seconds 5`` before schema 2 existed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fuzzer.store.folder import BundleStore, DamagedBundleError
from fuzzer.store.meta import (
    SCHEMA,
    SCHEMA1_REQUIRED,
    SCHEMA2_FIELDS,
    BundleMeta,
    MetaError,
    parse_meta,
    read_meta,
)
from tests.bundle_files import bundle_files, meta_dict
from tests.test_cli_check import assert_one_line_error
from tests.test_triage_status import optfuzz

WAVE1 = Path(__file__).parent / "data" / "wave1"
WHEN = "2030-01-01T00:00:00Z"  # later than every last_seen of the fixture
#: keys a later tool might add; a rewrite must keep them where they are.
UNKNOWN = {"triage_note": {"by": "someone", "tags": ["x"]}, "upstream_issue": 1234}


def raw(folder: Path, bundle_id: str) -> dict[str, Any]:
    """The meta.json of a bundle as plain JSON."""
    return json.loads((folder / bundle_id / "meta.json").read_text())


@pytest.fixture
def wave1(tmp_path: Path) -> Path:
    """A copy of the first-wave folder; one bundle gains unknown keys at three levels."""
    folder = tmp_path / "crashes"
    shutil.copytree(WAVE1, folder)
    path = folder / "bloat-ae41dcdd" / "meta.json"
    meta = json.loads(path.read_text())
    meta.update(UNKNOWN)
    meta["target"]["build"] = "debug"
    meta["nodes"]["initializers"] = 3
    path.write_text(json.dumps(meta, indent=2))
    return folder


def assert_superset(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Every key of ``before`` is in ``after`` with the same value (schema, hits and
    last_seen aside), in the same order, ahead of the schema-2 keys."""
    kept = [k for k in after if k in before]
    assert kept == list(before), "keys lost or reordered"
    for key, value in before.items():
        if key not in ("schema", "hits", "last_seen"):
            assert after[key] == value, key


def test_wave1_folder_is_read_and_upgraded_on_the_first_write_with_nothing_lost(
        wave1: Path) -> None:
    before = {p.name: raw(wave1, p.name) for p in wave1.iterdir()}
    assert {m["schema"] for m in before.values()} == {1}
    store = BundleStore(wave1)
    metas, damaged = store.read_all()
    assert sorted(m.id for m in metas) == sorted(before) and damaged == []
    assert all(m.schema == SCHEMA for m in metas)  # schema 2 in memory
    for bid, old in before.items():
        store.add_hit(bid, WHEN)
        new = raw(wave1, bid)
        assert_superset(old, new)
        assert new["schema"] == SCHEMA == 2
        assert (new["hits"], new["last_seen"]) == (old["hits"] + 1, WHEN)
        assert list(new)[:len(SCHEMA1_REQUIRED)] == list(SCHEMA1_REQUIRED)
        assert all(new[k] in (None, []) for k in SCHEMA2_FIELDS if k != "symptoms")
        assert new["symptoms"] == {new["symptom"]: new["hits"]}  # every hit its own symptom's
        assert BundleMeta.from_json(new).to_json() == new  # schema 2 reads back unchanged
    upgraded = raw(wave1, "bloat-ae41dcdd")
    assert list(upgraded)[-len(UNKNOWN):] == list(UNKNOWN)  # unknown keys last, verbatim
    assert {k: upgraded[k] for k in UNKNOWN} == UNKNOWN
    assert upgraded["target"]["build"] == "debug" and upgraded["nodes"]["initializers"] == 3
    for bundle in WAVE1.iterdir():  # no bundle and no other file lost or changed
        for file in bundle.iterdir():
            if file.name != "meta.json":
                assert (wave1 / bundle.name / file.name).read_bytes() == file.read_bytes()


def test_wave1_meta_values_through_the_typed_record() -> None:
    meta = read_meta(WAVE1 / "optimizer-error-8c320a9a" / "meta.json")
    assert meta.target.name == "fake" and meta.target.passes == ["raise", "drop-node", "bloat"]
    assert meta.localized and meta.passes_shown() == ["raise"]
    assert meta.involves("bloat") and not meta.involves("clean")
    assert meta.source["kind"] == "corpus" and meta.localization == {"runs": 2,
                                                                    "method": "bisect"}
    assert (meta.nodes.original, meta.nodes.minimized) == (40, 1)
    assert meta.found_versions()["target"] == "fake 1.0"
    meta.add_hits(4, "2000-01-01T00:00:00Z")  # an older sighting keeps last_seen
    assert meta.hits == 25 and meta.last_seen == "2026-11-23T08:12:44Z"


def test_schema2_fields_round_trip_and_resign_keeps_the_old_signature() -> None:
    data = meta_dict("bloat-00000001", schema=2, breaking_pass="drop-node",
                     enabling_passes=[], root_cause="fake|drop-node|bloat|core",
                     variants=["v1.onnx"], trigger="a Neg before an Exp",
                     verified={"runs": 3}, aliases=["older"])
    meta = BundleMeta.from_json(data)
    assert (meta.breaking_pass, meta.enabling_passes, meta.variants) == (
        "drop-node", [], ["v1.onnx"])
    meta.resign("newer")
    assert meta.signature == "newer" and meta.aliases == ["older", data["signature"]]
    assert BundleMeta.from_json(meta.to_json()) == meta


@pytest.mark.parametrize(("change", "field"), [
    ({"hits": "many"}, "'hits'"),
    ({"hits": True}, "'hits'"),
    ({"target": "fake"}, "'target'"),
    ({"target": {"name": "fake", "version": "1.0"}}, "'target.config'"),
    ({"nodes": {"original": 3, "minimized": None}}, "'nodes.minimized'"),
    ({"responsible_passes": "drop-node"}, "'responsible_passes'"),
    ({"aliases": [1, 2]}, "'aliases'"),
    ({"variants": "v1.onnx"}, "'variants'"),
    ({"schema": 3}, "'schema'"),
])
def test_a_bad_field_is_named(change: dict[str, Any], field: str) -> None:
    with pytest.raises(MetaError, match=field):
        BundleMeta.from_json(meta_dict("bloat-00000001", **change))


def test_a_missing_field_is_named() -> None:
    data = meta_dict("bloat-00000001")
    del data["first_seen"]
    with pytest.raises(MetaError, match="missing field 'first_seen'"):
        BundleMeta.from_json(data)


@pytest.mark.parametrize(("text", "problem"), [
    (b"", "empty file"),
    (b"  \n", "empty file"),
    (b'{"schema": 1, "id": "bloat-0000', "not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[1, 2]", "not a JSON object"),
])
def test_an_unusable_file_says_why(text: bytes, problem: str, tmp_path: Path) -> None:
    with pytest.raises(MetaError, match=problem):
        parse_meta(text)
    (tmp_path / "meta.json").write_bytes(text)
    with pytest.raises(ValueError, match=f"^{tmp_path / 'meta.json'}: {problem}"):
        read_meta(tmp_path / "meta.json")


#: damaged bundles: folder name -> (files to write over a good bundle, expected reason).
DAMAGE = {
    "bloat-0000000a": ({"meta.json": b'{"schema": 1, "id": "bloat-0000000a", "sig'},
                       "meta.json: not JSON"),
    "bloat-0000000b": ({"meta.json": b""}, "meta.json: empty file"),
    "bloat-0000000c": ({"meta.json": json.dumps(meta_dict("bloat-0000000c", hits="7",
                                                          nodes=[1])).encode()},
                       "meta.json: field 'hits'"),
    "bloat-0000000d": ({"meta.json": json.dumps(meta_dict("bloat-000000ff")).encode()},
                       "names another bundle"),
}


def damage(folder: Path) -> dict[str, bytes]:
    """Add the :data:`DAMAGE` bundles, a bundle without model.onnx and a bundle-named
    folder without meta.json to ``folder``; return each damaged meta.json's bytes."""
    store = BundleStore(folder)
    for bid, (files, _) in DAMAGE.items():
        store.create(bid, dict(bundle_files(bid), **files))
    store.create("bloat-0000000e", bundle_files("bloat-0000000e"))
    (folder / "bloat-0000000e" / "model.onnx").unlink()
    (folder / "hang-0000000f").mkdir()
    (folder / "documented").mkdir()  # not a bundle: not counted
    return {bid: (folder / bid / "meta.json").read_bytes() for bid in DAMAGE}


def test_store_skips_and_counts_damaged_bundles_and_never_writes_them(tmp_path: Path) -> None:
    store = BundleStore(tmp_path)
    store.create("bloat-00000001", bundle_files("bloat-00000001", signature="good"))
    untouched = damage(tmp_path)
    metas, damaged = store.read_all()
    assert [m.id for m in metas] == ["bloat-00000001"]
    reasons = dict(damaged)
    assert sorted(reasons) == sorted([*DAMAGE, "bloat-0000000e", "hang-0000000f"])
    for bid, (_, reason) in DAMAGE.items():
        assert reason in reasons[bid], reasons[bid]
    assert reasons["bloat-0000000e"] == "missing model.onnx"
    assert reasons["hang-0000000f"] == "no meta.json"
    assert [m.signature for m in store.index()] == ["good"]
    assert store.damaged() == damaged

    for bid in DAMAGE:  # hits and create-or-hit on a damaged bundle: dropped, no error
        store.add_hit(bid)
        assert not store.create(bid, bundle_files(bid), on_exists=lambda m: m.add_hits(1, WHEN))
    batching = BundleStore(tmp_path, batch_hits=True)
    for bid in DAMAGE:
        batching.add_hit(bid)
    batching.flush_hits()
    assert {bid: (tmp_path / bid / "meta.json").read_bytes() for bid in DAMAGE} == untouched
    assert sorted(dict(batching.damaged())) == sorted(DAMAGE)
    with pytest.raises(DamagedBundleError, match="not JSON"):
        store.update("bloat-0000000a", lambda m: None)


@pytest.fixture(scope="module")
def damaged_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wave-1 bundles plus the damaged ones of :func:`damage`."""
    folder = tmp_path_factory.mktemp("damaged") / "crashes"
    shutil.copytree(WAVE1, folder)
    damage(folder)
    return folder


def test_triage_lists_the_good_bundles_and_counts_the_damaged(damaged_folder: Path) -> None:
    result = optfuzz("triage", str(damaged_folder), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert sorted(r["id"] for r in rows) == sorted(p.name for p in WAVE1.iterdir())
    assert result.stderr.strip().startswith("skipped 6 damaged bundle(s): ")
    assert result.stderr.count("\n") == 1
    table = optfuzz("triage", str(damaged_folder))
    assert table.returncode == 0 and "skipped 6 damaged bundle(s)" in table.stdout


def test_replay_skips_damaged_bundles_and_upgrades_the_good_ones(damaged_folder: Path) -> None:
    before = {p.name: json.loads((p / "meta.json").read_text()) for p in WAVE1.iterdir()}
    result = optfuzz("replay", str(damaged_folder))
    assert result.returncode == 1, result.stdout + result.stderr  # the fake bugs still fail
    assert "Traceback" not in result.stderr
    assert "replayed 3 bundle(s): 3 still fails" in result.stdout
    assert "skipped 6 damaged bundle(s)" in result.stdout
    for bid, old in before.items():
        new = raw(damaged_folder, bid)
        assert_superset(old, new)
        assert new["schema"] == 2 and new["replay"]["status"] == "fails"


def test_replay_fails_while_a_damaged_bundle_cannot_be_checked(damaged_folder: Path,
                                                               tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(damaged_folder, folder)
    every_bug = "raise,abort,segv,hang,drop-node,drop-middle,invalid,bloat"
    result = optfuzz("replay", str(folder), fixed=every_bug)
    assert "replayed 3 bundle(s): 3 fixed" in result.stdout, result.stdout
    assert "skipped 6 damaged bundle(s)" in result.stdout
    assert result.returncode == 1  # the good bundles are fixed; the damaged ones unchecked


@pytest.mark.parametrize("bid", ["bloat-0000000a", "bloat-0000000b", "bloat-0000000c",
                                 "bloat-0000000e", "hang-0000000f"])
def test_report_on_a_damaged_bundle_is_one_line_and_exit_2(damaged_folder: Path, bid: str,
                                                           tmp_path: Path) -> None:
    assert_one_line_error(optfuzz("report", str(damaged_folder / bid), "--out",
                                  str(tmp_path)))


def test_report_on_a_truncated_model_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bundle = tmp_path / "output-mismatch-1a1ac4c2"
    shutil.copytree(WAVE1 / bundle.name, bundle)
    data = (bundle / "model.onnx").read_bytes()
    (bundle / "model.onnx").write_bytes(data[:len(data) // 2])
    assert_one_line_error(optfuzz("report", str(bundle), "--out", str(tmp_path / "out")))


def test_resume_counts_hits_past_a_damaged_bundle(tmp_path: Path) -> None:
    out = tmp_path / "crashes"
    args = ("fuzz", "--target", "fake", "--source", "generated", "--passes", "raise",
            "--fixed-passes", "--max-cases", "4", "--jobs", "1", "--reduce-seconds", "0",
            "--out", str(out), "--quiet")
    first = optfuzz(*args)
    assert first.returncode == 0, first.stderr
    (bundle,) = [p for p in out.iterdir() if p.name.startswith("optimizer-error-")]
    meta = bundle / "meta.json"
    half = meta.read_bytes()[:100]
    meta.write_bytes(half)  # a half-written meta.json
    resumed = optfuzz(*args, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"skipped 1 damaged bundle(s): {bundle.name} (meta.json: not JSON" in resumed.stdout
    assert meta.read_bytes() == half
    assert json.loads((out / "campaign.json").read_text())["cases"] == 8
