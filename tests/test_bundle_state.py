"""A bundle's state as its maintainer keeps it (``optfuzz mark``): each state round-trips
through meta.json with its history, bad input is refused in one line, every update path of
the store keeps the state (what a ``--resume``d campaign writes), and a bundle marked fixed
that a later campaign hits becomes ``regressed``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzer.errors import InputError
from fuzzer.store.bundle_state import BundleState
from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta, parse_meta
from fuzzer.triage.marks import mark_bundle
from tests.bundle_files import bundle_files
from tests.schema2_bundles import write_bundle
from tests.test_triage_status import optfuzz, save_bundle, unary_model

BUNDLE = "output-mismatch-00000001"
OTHER = "optimizer-error-00000002"
URL = "https://github.com/onnx/optimizer/issues/123"
MARKED = "2026-02-01T00:00:00Z"
LATER = "2026-03-01T00:00:00Z"
#: (words, state, the JSON key of its argument, its value)
MARKS = [
    (["reported", URL], "reported", "url", URL),
    (["duplicate-of", OTHER], "duplicate", "duplicate_of", OTHER),
    (["invalid", "the", "model", "is", "out", "of", "spec"], "invalid", "reason",
     "the model is out of spec"),
    (["fixed", "0.3.20"], "fixed", "version", "0.3.20"),
    (["open"], "open", None, None),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of two schema-2 fake bundles, none marked."""
    root = tmp_path / "crashes"
    write_bundle(root, BUNDLE)
    write_bundle(root, OTHER)
    return root


def state_of(root: Path, bundle_id: str = BUNDLE) -> dict | None:
    return json.loads((root / bundle_id / "meta.json").read_text()).get("state")


def test_every_state_round_trips_and_keeps_the_earlier_ones(folder: Path) -> None:
    for number, (words, state, key, value) in enumerate(MARKS):
        record = mark_bundle(folder / BUNDLE, words, when=f"2026-01-0{number + 1}T00:00:00Z")
        written = state_of(folder)
        assert written["state"] == state and written["by"] == "optfuzz mark"
        assert written["time"] == f"2026-01-0{number + 1}T00:00:00Z"
        if key:
            assert written[key] == value
        assert [h["state"] for h in written["history"]] == [s for _, s, _, _ in MARKS[:number]]
        assert BundleState.from_json(written) == record
        meta = BundleStore(folder).read(BUNDLE)
        assert parse_meta(json.dumps(meta.to_json())).state == record
    reported = state_of(folder)["history"][0]
    assert reported == {"state": "reported", "url": URL, "time": "2026-01-01T00:00:00Z",
                        "by": "optfuzz mark"}
    assert state_of(folder, OTHER) is None  # the other bundle untouched


def test_unknown_keys_of_a_state_are_kept(folder: Path) -> None:
    mark_bundle(folder / BUNDLE, ["reported", URL])
    path = folder / BUNDLE / "meta.json"
    data = json.loads(path.read_text())
    data["state"]["tracker"] = "github"
    path.write_text(json.dumps(data))
    mark_bundle(folder / BUNDLE, ["fixed", "1.2"])
    assert state_of(folder)["history"][-1]["tracker"] == "github"


BAD = [
    ([], "say the state"),
    (["closed"], "unknown state 'closed'"),
    (["reported"], "reported needs URL"),
    (["reported", "github.com/onnx/optimizer/issues/1"], "malformed URL"),
    (["reported", "ftp://example.org/bug"], "malformed URL"),
    (["reported", "https://"], "malformed URL"),
    (["reported", URL, URL], "takes one URL"),
    (["duplicate-of", BUNDLE], "cannot be a duplicate of itself"),
    (["duplicate-of", "crash-0000abcd"], "no such bundle"),
    (["duplicate-of"], "duplicate-of needs OTHER"),
    (["invalid"], "invalid needs REASON"),
    (["fixed"], "fixed needs VERSION"),
    (["fixed", "1.0 beta"], "white space"),
    (["open", "now"], "open takes no argument"),
]


@pytest.mark.parametrize(("words", "said"), BAD, ids=[" ".join(w) or "none" for w, _ in BAD])
def test_bad_words_are_refused_in_one_line_and_change_nothing(folder: Path, words: list[str],
                                                              said: str) -> None:
    before = (folder / BUNDLE / "meta.json").read_bytes()
    with pytest.raises(InputError) as caught:
        mark_bundle(folder / BUNDLE, words)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert (folder / BUNDLE / "meta.json").read_bytes() == before


def test_a_duplicate_of_a_bundle_in_another_folder_is_refused(folder: Path,
                                                              tmp_path: Path) -> None:
    write_bundle(tmp_path / "elsewhere", OTHER)
    with pytest.raises(InputError, match="not a bundle of"):
        mark_bundle(folder / BUNDLE, ["duplicate-of", str(tmp_path / "elsewhere" / OTHER)])
    mark_bundle(folder / BUNDLE, ["duplicate-of", str(folder / OTHER)])  # a path works
    assert state_of(folder)["duplicate_of"] == OTHER


@pytest.mark.parametrize(("args", "said"), [
    (("mark",), "usage: optfuzz mark BUNDLE"),
    (("mark", "{root}/crash-0000abcd", "open"), "not a bundle (no meta.json)"),
    (("mark", "{root}/" + BUNDLE, "reported", "not-a-url"), "malformed URL"),
    (("mark", "{root}/" + BUNDLE, "fixed"), "fixed needs VERSION"),
])
def test_the_command_says_bad_input_in_one_line_and_exits_2(folder: Path, args: tuple,
                                                            said: str) -> None:
    proc = optfuzz(*(a.format(root=folder) for a in args))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
    assert state_of(folder) is None


def test_the_command_marks_and_says_the_state(folder: Path) -> None:
    proc = optfuzz("mark", str(folder / BUNDLE), "reported", URL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{folder / BUNDLE}: reported {URL}"
    assert state_of(folder)["url"] == URL


def _sight(store: BundleStore, how: str, when: str) -> None:
    """One sighting of BUNDLE through the store's path ``how``, at ``when``."""
    if how == "add_hit":
        store.add_hit(BUNDLE, when)
    elif how == "flush_hits":
        batching = BundleStore(store.root, batch_hits=True)
        batching.add_hit(BUNDLE, when, symptom="invalid-model")
        assert batching.flush_hits() == [BUNDLE]
    elif how == "add_variant":
        store.add_variant(BUNDLE, {".onnx": b"model", ".npz": b"inputs"}, 5, when)
    elif how == "create":  # another worker created the bundle meanwhile
        assert not store.create(BUNDLE, bundle_files(BUNDLE),
                                on_exists=lambda meta: meta.add_hits(1, when))
    elif how == "promote":
        files = bundle_files(BUNDLE, schema=2, symptom="output-mismatch")
        store.promote(BUNDLE, files, when)
    else:
        store.update(BUNDLE, lambda meta: setattr(meta, "replay", {"status": "fails"}))


PATHS = ["add_hit", "flush_hits", "add_variant", "create", "promote", "update"]


@pytest.mark.parametrize("how", PATHS)
def test_every_update_of_a_resumed_campaign_keeps_the_state(folder: Path, how: str) -> None:
    """A ``--resume``d campaign only updates meta.json through the store: hits (at once or
    batched), variants, a bundle created meanwhile, a plainer model promoted, any other
    change; none drops or changes a state other than fixed."""
    mark_bundle(folder / BUNDLE, ["reported", URL], when=MARKED)
    mark_bundle(folder / BUNDLE, ["invalid", "out of spec"], when=MARKED)
    before = state_of(folder)
    _sight(BundleStore(folder), how, LATER)
    assert state_of(folder) == before


@pytest.mark.parametrize("how", PATHS[:-1])
def test_a_fixed_bundle_hit_again_is_flagged_a_regression(folder: Path, how: str,
                                                          monkeypatch) -> None:
    monkeypatch.delenv("OPTFUZZ_FAKE_FIXED", raising=False)  # the fake target's 1.0
    mark_bundle(folder / BUNDLE, ["reported", URL], when=MARKED)
    mark_bundle(folder / BUNDLE, ["fixed", "0.9"], when=MARKED)
    hits = BundleStore(folder).read(BUNDLE).hits
    _sight(BundleStore(folder), how, LATER)
    state = state_of(folder)
    assert {k: state[k] for k in ("state", "version", "fixed", "by")} == {
        "state": "regressed", "version": "1.0", "fixed": "0.9", "by": "campaign"}
    assert state["time"] >= LATER
    assert [h["state"] for h in state["history"]] == ["reported", "fixed"]
    assert BundleStore(folder).read(BUNDLE).hits > hits
    _sight(BundleStore(folder), how, "2026-04-01T00:00:00Z")  # stays regressed, once
    assert state_of(folder)["history"] == state["history"]


def test_no_regression_from_an_older_version_or_an_earlier_sighting(folder: Path,
                                                                    monkeypatch) -> None:
    monkeypatch.delenv("OPTFUZZ_FAKE_FIXED", raising=False)
    mark_bundle(folder / BUNDLE, ["fixed", "1.1"], when=MARKED)  # the campaign runs 1.0
    BundleStore(folder).add_hit(BUNDLE, LATER)
    assert state_of(folder)["state"] == "fixed"
    mark_bundle(folder / BUNDLE, ["fixed", "abc123"], when=MARKED)  # not comparable
    BundleStore(folder).add_hit(BUNDLE, "2026-01-15T00:00:00Z")  # seen before the mark
    assert state_of(folder)["state"] == "fixed"
    BundleStore(folder).add_hit(BUNDLE, LATER)
    assert state_of(folder)["state"] == "regressed"


def test_a_malformed_state_makes_the_bundle_damaged_not_the_folder(folder: Path) -> None:
    path = folder / BUNDLE / "meta.json"
    data = json.loads(path.read_text())
    data["state"] = {"state": "closed", "time": MARKED, "by": "me"}
    path.write_text(json.dumps(data))
    metas, damaged = BundleStore(folder).read_all()
    assert [m.id for m in metas] == [OTHER]
    assert damaged[0].id == BUNDLE and "field 'state': unknown state 'closed'" in \
        damaged[0].reason


def test_a_later_check_of_the_fixed_bug_flags_the_bundle_regressed(tmp_path: Path) -> None:
    """The campaign's own recording path: ``optfuzz check --save`` of the planted drop-node
    bug into a folder whose bundle of it is marked fixed in 0.9 (fake 1.0 runs)."""
    model = unary_model(tmp_path / "m.onnx", ["Exp", "Neg", "Cos"])
    out = tmp_path / "crashes"
    save_bundle(model, "drop-node", out)
    (bundle,) = [p for p in out.iterdir() if p.is_dir()]
    assert optfuzz("mark", str(bundle), "fixed", "0.9").returncode == 0
    save_bundle(model, "drop-node", out)
    state = state_of(out, bundle.name)
    assert (state["state"], state["version"], state["fixed"]) == ("regressed", "1.0", "0.9")


def test_a_schema_1_bundle_takes_a_state(tmp_path: Path) -> None:
    root = tmp_path / "crashes"
    (root / BUNDLE).mkdir(parents=True)
    for name, data in bundle_files(BUNDLE).items():
        (root / BUNDLE / name).write_bytes(data)
    mark_bundle(root / BUNDLE, ["fixed", "2.0"])
    meta: BundleMeta = BundleStore(root).read(BUNDLE)
    assert meta.schema == 2 and meta.state is not None and meta.state.value == "2.0"
