"""``optfuzz triage --rebucket`` on a folder as the first campaigns wrote it (schema-1
bundles, one per wave-1 signature): three bundles of the fake target's ``fold.cc:41`` bug
under other ids, node names and pass lists, one of its ``fold.cc:97`` bug (same pass, another
crash site), one ``bump-ir`` bundle (documented behaviour ``fake-ir-upgrade``), one of a bug
the installed release fixed, one of a pass the installed target no longer has, and one
damaged bundle."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.store import folder as folder_module
from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import npz_bytes
from fuzzer.triage import rebucket as rebucket_module
from fuzzer.triage.rebucket import Keyed, choose_kept, rebucket
from tests.bundle_files import meta_dict
from tests.test_triage_status import optfuzz

FEEDS = {"x": np.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]], dtype=np.float32)}
SAME = ("optimizer-error-0000000a", "optimizer-error-0000000b", "optimizer-error-0000000c")
KEPT = SAME[0]  # the smallest model of the three
OTHER = "optimizer-error-0000000d"  # fold.cc:97: same pass, another crash site
IR = "metadata-change-0000000e"  # documented: fake-ir-upgrade
FIXED = "optimizer-error-0000000f"  # the raise pass, switched off by OPTFUZZ_FAKE_FIXED
GONE = "optimizer-error-00000010"  # its pass is not in the installed target: cannot run
DAMAGED = "output-mismatch-0000dead"
EXECUTION = ("--timeout", "20", "--jobs", "2")


def chain(ops: list[tuple[str, str]]) -> onnx.ModelProto:
    """x -> op -> ... -> y over float32[2, 3], each node ``(op type, node name)``."""
    nodes, prev = [], "x"
    for index, (op, name) in enumerate(ops):
        out = "y" if index == len(ops) - 1 else f"{name}_output_0"
        nodes.append(helper.make_node(op, [prev], [out], name=name))
        prev = out
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


#: id -> (model, original, passes, message, hits, first seen, last seen)
BUNDLES = {
    SAME[0]: ([("Neg", "n1")], [("Neg", "n1"), ("Cos", "c")], ["fold"],
              "fake/fold.cc:41: Assertion `rank <= 4` failed for node 'n1' (0x7f00a1)", 2,
              "2026-01-03T00:00:00Z", "2026-01-03T05:00:00Z"),
    SAME[1]: ([("Exp", "/m/Exp"), ("Neg", "/m/Neg")], [("Exp", "/m/Exp"), ("Neg", "/m/Neg"),
                                                        ("Abs", "a")], ["clean", "fold"],
              "fake/fold.cc:41: Assertion `rank <= 4` failed for node '/m/Neg' (0x7f00b2)", 3,
              "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"),
    SAME[2]: ([("Neg", "onnx::Neg_3"), ("Abs", "8"), ("Cos", "9")],
              [("Neg", "onnx::Neg_3"), ("Abs", "8"), ("Cos", "9"), ("Sin", "s")],
              ["fold", "nop-a", "clean"],
              "fake/fold.cc:41: Assertion `rank <= 4` failed for node 'onnx::Neg_3' (0x1)", 4,
              "2026-01-02T00:00:00Z", "2026-01-04T00:00:00Z"),
    OTHER: ([("Exp", "e")], [("Exp", "e"), ("Abs", "a")], ["fold"],
            "fake/fold.cc:97: unsupported input of 'e' with 3 dims", 5,
            "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
    IR: ([("Abs", "a")], [("Abs", "a"), ("Cos", "c")], ["bump-ir"],
         "IR version 8 became 9", 7, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
    FIXED: ([("Sin", "s")], [("Sin", "s"), ("Cos", "c")], ["raise"],
            "fake pass failed at node 's' (index 0x7f)", 1,
            "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
    GONE: ([("Cos", "c")], [("Cos", "c"), ("Sin", "s")], ["vanished"],
           "vanished failed at node 'c'", 1, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
}


def build_folder(root: Path, ids: tuple[str, ...] = tuple(BUNDLES)) -> Path:
    """Write the schema-1 bundles ``ids`` of :data:`BUNDLES` and the damaged one under
    ``root/crashes``; return that folder."""
    out = root / "crashes"
    for bid in ids:
        model, original, passes, message, hits, first, last = BUNDLES[bid]
        folder = out / bid
        folder.mkdir(parents=True)
        meta = meta_dict(bid, signature=f"fake|{','.join(passes)}|{bid}|{message}",
                         stage="compare" if bid == IR else "optimize", message=message,
                         target={"name": "fake", "version": "1.0",
                                 "config": {"passes": passes, "fixed_point": False}},
                         nodes={"original": len(original), "minimized": len(model)},
                         hits=hits, first_seen=first, last_seen=last)
        (folder / "meta.json").write_text(json.dumps(meta, indent=2))
        onnx.save(chain(model), folder / "model.onnx")
        onnx.save(chain(original), folder / "original.onnx")
        (folder / "inputs.npz").write_bytes(npz_bytes(FEEDS))
    broken = out / DAMAGED
    broken.mkdir(parents=True)
    (broken / "meta.json").write_text('{"schema": 1, "id": ')
    onnx.save(chain([("Tanh", "t")]), broken / "model.onnx")
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder`` but the lock files."""
    return {str(p.relative_to(folder)): digest(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in (".lock", ".campaign.lock")}


def models(folder: Path) -> set[str]:
    """sha256 of every model.onnx and original.onnx of the bundles directly under ``folder``."""
    return {digest(p) for name in ("model.onnx", "original.onnx")
            for p in folder.glob(f"*/{name}")}


def meta(folder: Path, bid: str) -> dict:
    return json.loads((folder / bid / "meta.json").read_text())


@pytest.fixture(scope="module")
def rebucketed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, set, object]:
    """The folder after one ``--rebucket``, its tree and models before, and the run."""
    out = build_folder(tmp_path_factory.mktemp("rebucket"))
    before, inputs = tree(out), models(out)
    proc = optfuzz("triage", "--rebucket", str(out), *EXECUTION, fixed="raise", timeout=300)
    return out, before, inputs, proc


def test_one_bundle_per_root_cause_with_the_others_as_variants(rebucketed) -> None:
    out, _, _, proc = rebucketed
    assert proc.returncode == 0, proc.stderr
    assert not (out / SAME[1]).exists() and not (out / SAME[2]).exists()
    kept = meta(out, KEPT)
    assert kept["schema"] == 2
    assert kept["breaking_pass"] == "fold" and kept["enabling_passes"] == []
    assert kept["responsible_passes"] == ["fold"]
    assert "fold.cc:41" in kept["root_cause"] and kept["root_cause"].startswith("fake|fold|")
    assert kept["hits"] == 2 + 3 + 4
    assert (kept["first_seen"], kept["last_seen"]) == ("2026-01-01T00:00:00Z",
                                                       "2026-01-04T00:00:00Z")
    assert kept["variants"] == ["variants/1.onnx", "variants/2.onnx"]
    provenance = {json.loads((out / KEPT / "variants" / f"{n}.meta.json").read_text())["id"]
                  for n in (1, 2)}
    assert provenance == {SAME[1], SAME[2]}
    for n in (1, 2):
        assert {f"{n}.onnx", f"{n}.npz", f"{n}.original.onnx"} <= \
            {p.name for p in (out / KEPT / "variants").iterdir()}
    for bid in SAME[1:]:
        assert f"merged {bid} into {KEPT}" in proc.stdout


def test_kept_bundle_report_and_repro_name_the_breaking_pass(rebucketed) -> None:
    out, _, _, _ = rebucketed
    repro = (out / KEPT / "repro.py").read_text()
    assert "['fold']" in repro and "nop-a" not in repro and "'clean'" not in repro
    report = (out / KEPT / "report.md").read_text()
    assert report.splitlines()[0].startswith("# ") and "fold" in report.splitlines()[0]
    assert (out / KEPT / f"{KEPT}.zip").is_file()


def test_another_crash_site_of_the_same_pass_stays_apart(rebucketed) -> None:
    out, _, _, _ = rebucketed
    other = meta(out, OTHER)
    assert "fold.cc:97" in other["root_cause"] and other["breaking_pass"] == "fold"
    assert other["hits"] == 5 and other["variants"] == []
    assert meta(out, KEPT)["root_cause"] != other["root_cause"]


def test_documented_behaviour_moves_with_its_reason(rebucketed) -> None:
    out, before, _, proc = rebucketed
    assert not (out / IR).exists()
    moved = out / "documented" / IR
    reason = (moved / "REASON.txt").read_text()
    assert "fake-ir-upgrade" in reason and "fuzzer/targets/fake.py" in reason
    for name in ("meta.json", "model.onnx", "original.onnx", "inputs.npz"):
        assert digest(moved / name) == before[f"{IR}/{name}"]
    assert f"moved {IR} to documented/{IR} (fake-ir-upgrade)" in proc.stdout


def test_fixed_unrunnable_and_damaged_bundles_stay_untouched(rebucketed) -> None:
    out, before, _, proc = rebucketed
    after = tree(out)
    for bid in (FIXED, GONE, DAMAGED):
        mine = {k: v for k, v in before.items() if k.startswith(bid + "/")}
        assert mine and mine == {k: v for k, v in after.items() if k.startswith(bid + "/")}
    assert f"left {FIXED}: fixed" in proc.stdout
    assert f"left {GONE}: cannot run (passes missing in the installed target" in proc.stdout


def test_no_model_is_lost(rebucketed) -> None:
    out, _, inputs, _ = rebucketed
    assert inputs <= {digest(p) for p in out.rglob("*") if p.is_file()}


def test_summary_line_and_second_run_changes_nothing(rebucketed) -> None:
    out, _, _, proc = rebucketed
    assert ("rebucketed 4 bundles: 2 root causes (2 merged as variants), 1 moved to "
            "documented/, 1 fixed, 1 left in place, 1 damaged") in proc.stdout
    first = tree(out)
    again = optfuzz("triage", "--rebucket", str(out), *EXECUTION, fixed="raise", timeout=300)
    assert again.returncode == 0, again.stderr
    assert "0 merged as variants" in again.stdout and "nothing changed" in again.stdout
    assert not [line for line in again.stdout.splitlines()
                if line.startswith(("merged ", "moved ", "keyed "))]
    assert tree(out) == first


def test_bad_folder_and_bad_combination_exit_2_in_one_line(tmp_path: Path) -> None:
    missing = optfuzz("triage", "--rebucket", str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and missing.stderr.startswith("error:")
    both = optfuzz("triage", "--rebucket", "--json", str(tmp_path))
    assert both.returncode == 2 and "Traceback" not in both.stderr


class Killed(BaseException):
    """Stands for the signal that ends a run in the middle."""


def _kill_while_copying(monkeypatch: pytest.MonkeyPatch) -> None:
    """Die at the third variant file written: the kept meta.json is not written yet."""
    real, calls = rebucket_module.write_atomic, [0]

    def dying(path: Path, data: bytes) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise Killed
        real(path, data)

    monkeypatch.setattr(rebucket_module, "write_atomic", dying)
    monkeypatch.setattr(folder_module, "write_atomic", dying)  # keep_as_variant's copies


def _kill_before_removing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Die after the kept meta.json is written, before any merged folder is removed."""
    def dying(store: BundleStore, bundle_id: str) -> None:
        raise Killed

    monkeypatch.setattr(rebucket_module, "_discard", dying)


@pytest.mark.parametrize("kill", [_kill_while_copying, _kill_before_removing])
def test_a_killed_run_loses_nothing_and_the_next_one_finishes(tmp_path, sandbox, monkeypatch,
                                                               kill) -> None:
    out = build_folder(tmp_path, SAME)
    inputs = models(out)
    store = BundleStore(out)
    kill(monkeypatch)
    with pytest.raises(Killed):
        rebucket(store, sandbox, lambda line: None)
    assert inputs <= {digest(p) for p in out.rglob("*") if p.is_file()}
    monkeypatch.undo()
    lines: list[str] = []
    summary = rebucket(store, sandbox, lines.append)
    assert (summary.root_causes, summary.merged) == (1, 2)
    assert inputs <= {digest(p) for p in out.rglob("*") if p.is_file()}
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == \
        [KEPT, DAMAGED]
    kept = meta(out, KEPT)
    assert kept["hits"] == 9  # no bundle counted twice
    ids = [json.loads((out / KEPT / v.replace(".onnx", ".meta.json")).read_text())["id"]
           for v in kept["variants"]]
    assert sorted(ids) == list(SAME[1:])
    assert rebucket(store, sandbox, lines.append).changed == 0


def _keyed(bid: str, nodes: int, first_seen: str, key: str = "fake|p|optimizer-error|c") -> \
        Keyed:
    meta = BundleMeta.from_json(meta_dict(bid, first_seen=first_seen))
    return Keyed(meta, key, "p", [], ["p"], nodes=nodes, size=100)


def test_the_bundle_named_after_the_key_is_kept_else_the_smallest_then_the_oldest() -> None:
    from fuzzer.findings.rootcause import root_cause_id

    key = "fake|p|optimizer-error|c"
    named = _keyed(root_cause_id("optimizer-error", key), 9, "2026-02-01T00:00:00Z")
    small = _keyed("optimizer-error-00000001", 1, "2026-01-02T00:00:00Z")
    older = _keyed("optimizer-error-00000002", 1, "2026-01-01T00:00:00Z")
    big = _keyed("optimizer-error-00000003", 5, "2025-01-01T00:00:00Z")
    assert choose_kept([small, named, big]) is named
    assert choose_kept([small, big, older]) is older
    assert choose_kept([big, small]) is small


def test_a_new_variant_never_overwrites_a_file_of_sparse_or_unlisted_variants(tmp_path) -> None:
    store = BundleStore(tmp_path)
    bid = "optimizer-error-00000001"
    files = {"meta.json": json.dumps(meta_dict(bid, schema=2, variants=["variants/2.onnx"]))
             .encode(), "model.onnx": b"m", "inputs.npz": b"i"}
    assert store.create(bid, files)
    variants = store.path(bid) / "variants"
    variants.mkdir()
    (variants / "1.onnx").write_bytes(b"unlisted")  # left by an interrupted write
    (variants / "2.onnx").write_bytes(b"listed")
    assert store.add_variant(bid, {".onnx": b"new", ".npz": b"feeds"}, 10, "2026-01-05T00:00:00Z")
    assert (variants / "1.onnx").read_bytes() == b"unlisted"
    assert (variants / "2.onnx").read_bytes() == b"listed"
    assert (variants / "3.onnx").read_bytes() == b"new"
    assert store.meta(bid).variants == ["variants/2.onnx", "variants/3.onnx"]


def test_a_folder_a_campaign_is_running_in_is_refused_untouched(tmp_path: Path) -> None:
    from fuzzer.store.lock import CampaignLock

    out = build_folder(tmp_path, (OTHER,))
    before = tree(out)
    with CampaignLock(out):
        proc = optfuzz("triage", "--rebucket", str(out))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error:") and "a campaign is running in it" in proc.stderr
    assert tree(out) == before


def test_documented_with_the_minimal_passes_moves_too(tmp_path: Path, monkeypatch) -> None:
    """A bundle recorded with a longer pass list is checked again with the passes that
    localization keeps: documented behaviour that only that list shows still moves out."""
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.targets.base import DocumentedBehaviour
    from fuzzer.targets.fake import FakeTarget

    alone = DocumentedBehaviour(
        "bad-neg-alone", "a test's own claim",
        lambda finding, config: config.get("passes") == ["bad-neg"])
    monkeypatch.setattr(FakeTarget, "documented_behaviours", lambda self: (alone,))
    bid = "output-mismatch-000000aa"
    folder = tmp_path / "crashes" / bid
    folder.mkdir(parents=True)
    meta = meta_dict(bid, target={"name": "fake", "version": "1.0",
                                  "config": {"passes": ["nop-a", "bad-neg", "clean"],
                                             "fixed_point": False}})
    (folder / "meta.json").write_text(json.dumps(meta))
    onnx.save(chain([("Neg", "n1"), ("Exp", "e")]), folder / "model.onnx")
    (folder / "inputs.npz").write_bytes(npz_bytes(FEEDS))
    lines: list[str] = []
    with Sandbox(jobs=1, timeout=20) as sandbox:
        summary = rebucket(BundleStore(tmp_path / "crashes"), sandbox, lines.append)
    assert summary.documented == 1, lines
    assert (tmp_path / "crashes" / "documented" / bid / "model.onnx").is_file()
    assert f"moved {bid} to documented/{bid} (bad-neg-alone)" in lines


def test_a_bundle_only_a_sanitizer_shows_is_left_in_place(tmp_path: Path) -> None:
    out = tmp_path / "crashes"
    bid = "memory-error-0123abcd"
    (out / bid).mkdir(parents=True)
    meta = meta_dict(bid, stage="optimize", message="AddressSanitizer: heap-use-after-free",
                     target={"name": "fake", "version": "1.0",
                             "config": {"passes": ["double-free"], "fixed_point": False}})
    (out / bid / "meta.json").write_text(json.dumps(meta))
    onnx.save(chain([("Exp", "e")]), out / bid / "model.onnx")
    onnx.save(chain([("Exp", "e")]), out / bid / "original.onnx")
    (out / bid / "inputs.npz").write_bytes(npz_bytes(FEEDS))
    lines: list[str] = []
    summary = rebucket(BundleStore(out), None, lines.append)
    assert summary.left == 1 and summary.fixed == 0
    assert lines == [f"left {bid}: cannot run (memory-error shows only on the sanitize "
                     "build of fake)"]
