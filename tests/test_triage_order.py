"""``optfuzz triage`` ranks root causes the way a maintainer reads them: new first, then by
severity class, then by hits; it says how many sightings were merged into the bundles, and
counts nodes with their subgraphs."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from fuzzer.triage.rows import TriageFilter, make_row, merged_count, triage_rows
from fuzzer.triage.versions import installed_versions
from tests.conftest import unary_chain_model
from tests.schema2_bundles import if_model, write_bundle
from tests.test_triage_status import optfuzz

#: bundle id -> (hits, variants, breaking pass) of the bundles known before the last triage.
KNOWN = {
    "bloat-00000001": (50, ["v1.onnx", "v2.onnx"], "bloat"),
    "output-mismatch-00000002": (2, [], "drop-node"),
    "optimizer-error-00000003": (10, [], "raise"),
    "output-mismatch-00000004": (7, ["v1.onnx"], "drop-middle"),
}
#: bundles found after it.
NEWER = {
    "hang-00000005": (30, [], "hang"),
    "invalid-model-00000006": (1, [], "invalid"),
}
#: new first; then wrong-output > invalid-model > crash > hang > size > interface; then hits.
ORDER = ["invalid-model-00000006", "hang-00000005", "output-mismatch-00000004",
         "output-mismatch-00000002", "optimizer-error-00000003", "bloat-00000001"]
TRIGGER = "when the bias is a graph input whose shape is only known at run time"


def write(root: Path, bundles: dict[str, tuple[int, list[str], str]]) -> None:
    for bid, (hits, variants, breaking) in bundles.items():
        write_bundle(root, bid, hits=hits, variants=variants, breaking_pass=breaking,
                     enabling_passes=["nop-1"] if breaking == "drop-node" else [],
                     responsible_passes=[breaking], trigger=TRIGGER)


def test_triage_ranks_new_then_severity_then_hits(tmp_path: Path) -> None:
    root = tmp_path / "crashes"
    write(root, KNOWN)
    first = optfuzz("triage", str(root), "--json")
    assert first.returncode == 0, first.stderr
    state = (root / ".triage.json").read_bytes()  # what the next triage compares with
    write(root, NEWER)

    table = optfuzz("triage", str(root))
    assert table.returncode == 0, table.stderr
    everything = {**KNOWN, **NEWER}
    merged = sum(len(v) + hits - 1 for hits, v, _ in everything.values())
    assert f"6 root cause(s), {merged} more finding(s) merged into them (3 variant(s), " \
           f"{merged - 3} repeat hit(s))" in table.stdout
    lines = table.stdout.splitlines()
    listed = [next(i for i, ln in enumerate(lines) if bid in ln) for bid in ORDER]
    assert listed == sorted(listed)
    assert "drop-node + nop-1" in table.stdout
    assert TRIGGER not in table.stdout and TRIGGER[:20] in table.stdout  # truncated

    (root / ".triage.json").write_bytes(state)
    result = optfuzz("triage", str(root), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == ORDER
    assert [r["new"] for r in rows] == [True, True, False, False, False, False]
    by_id = {r["id"]: r for r in rows}
    assert by_id["bloat-00000001"]["variants"] == 2
    assert by_id["output-mismatch-00000002"]["enabling_passes"] == ["nop-1"]
    assert by_id["hang-00000005"]["severity_class"] == "hang"
    assert by_id["hang-00000005"]["trigger"] == TRIGGER

def test_merged_count_sums_variants_and_repeat_hits(tmp_path: Path) -> None:
    write(tmp_path, KNOWN)
    rows, damaged = triage_rows(tmp_path, {}, TriageFilter())
    assert not damaged
    assert merged_count(rows) == (2 + 49) + (0 + 1) + (0 + 9) + (1 + 6)


def test_node_counts_include_subgraphs(tmp_path: Path) -> None:
    meta = write_bundle(tmp_path, "invalid-model-0000000a", model=if_model(branch_ops=2),
                        nodes={"original": 1, "minimized": 1})
    folder = tmp_path / meta.id
    row = make_row(meta, installed_versions("fake"), {}, folder)
    assert (row.nodes_original, row.nodes_minimized) == (1, 5)  # no original.onnx yet
    onnx.save(if_model(branch_ops=4), folder / "original.onnx")
    onnx.save(unary_chain_model(("Exp",)), folder / "model.onnx")
    row = make_row(meta, installed_versions("fake"), {}, folder)
    assert (row.nodes_original, row.nodes_minimized) == (9, 1)

