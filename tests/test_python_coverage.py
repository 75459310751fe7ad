"""Code coverage of the rewriters written in Python (coverage.py's arcs): the per-case collector
reports edges of the target's own rewrite sources only, and different models take different
ones; ``optfuzz coverage --code`` prints the per-file table for onnxslim; a guided campaign
on onnxslim measures its cases and keeps a seed pool; the target declares its coverage kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.edges.kinds import EDGE_KINDS, edge_kind, edge_setup
from fuzzer.edges.python_coverage import (
    ARCS_SUFFIX,
    CoverageCollector,
    edge_id,
    read_arcs,
    resolve_sources,
    unpack_arc,
)
from fuzzer.errors import InputError
from tests.conftest import unary_chain_model

pytest.importorskip("coverage")


def _transposes() -> onnx.ModelProto:
    """x -> Transpose -> Transpose -> y: onnxslim's EliminationTranspose folds the pair."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Transpose", ["t"], ["y"], perm=[1, 0])]
    graph = helper.make_graph(
        nodes, "pair", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _not_a_rewrite(n: int) -> int:
    """Python code outside the target's sources, run while tracing."""
    return sum(i for i in range(n) if i % 2)


@pytest.fixture(scope="module")
def onnxslim() -> object:
    pytest.importorskip("onnxslim")
    from fuzzer.targets import get_target

    return get_target("onnxslim")


def _logged(folder: Path) -> dict[str, set[tuple[int, int]]]:
    return read_arcs([folder])


def test_collector_reports_only_the_targets_own_files_and_each_model_its_own_edges(
        onnxslim: object, tmp_path: Path) -> None:
    sources = resolve_sources(onnxslim.coverage_modules)
    names = {s.path: s.name for s in sources}
    assert all(n.startswith("onnxslim/core/") for n in names.values())
    collector = CoverageCollector(sources, tmp_path)
    config = onnxslim.default_config()

    collector.start()
    _not_a_rewrite(100)
    onnxslim.optimize(unary_chain_model(), config)
    chain = collector.collect()
    after_chain = _logged(tmp_path)
    collector.start()
    onnxslim.optimize(_transposes(), config)
    pair = collector.collect()
    after_pair = _logged(tmp_path)

    assert chain and pair and set(chain) != set(pair)
    # every logged arc is one of the target's own files; this test file is not among them
    assert set(after_pair) <= set(names)
    # the edges of a case are exactly the ids of the arcs it took: those of the elimination
    # pattern only in the Transpose pair's case
    transpose = next(p for p, n in names.items()
                     if n == "onnxslim/core/pattern/elimination/transpose.py")
    assert transpose not in after_chain and after_pair[transpose]
    ids = {edge_id(names[transpose], arc) for arc in after_pair[transpose]}
    assert ids <= set(pair) and not ids & set(chain)
    assert set(chain.values()) == {1}  # coverage.py records whether an arc ran, not how often
    # a collect without a start is empty; the log holds each arc once per worker
    assert collector.collect() == {}
    lines = [json.loads(line) for log in tmp_path.glob(f"*{ARCS_SUFFIX}")
             for line in log.read_text().splitlines()]
    per_file = [(e["file"], tuple(a)) for e in lines for a in e["arcs"]]
    assert len(per_file) == len(set(per_file))


def test_the_tracers_own_arc_sets_and_coverage_pys_public_data_agree(
        onnxslim: object) -> None:
    sources = resolve_sources(onnxslim.coverage_modules)
    fast, public = CoverageCollector(sources), CoverageCollector(sources, public=True)
    for model in (_transposes(), unary_chain_model()):
        seen = []
        for collector in (fast, public):
            collector.start()
            onnxslim.optimize(model, onnxslim.default_config())
            seen.append(collector.collect())
        assert seen[0] == seen[1] and seen[0]


def test_packed_arcs_unpack_as_coverage_py_packs_them() -> None:
    def pack(a: int, b: int) -> int:  # coverage/ctracer/tracer.c, CTracer_record_pair
        return abs(a) | (abs(b) << 28) | ((a < 0) << 56) | ((b < 0) << 57)

    for arc in ((3, 4), (-12, 13), (40, -12), (-1, -1), (2**27, 5)):
        assert unpack_arc(pack(*arc)) == arc


def test_sources_resolve_packages_patterns_and_a_packages_own_file() -> None:
    pytest.importorskip("onnxscript")
    own = resolve_sources(["onnxscript.rewriter.__init__"])
    assert [s.name for s in own] == ["onnxscript/rewriter/__init__.py"]
    private = [s.name for s in resolve_sources(["onnxscript.rewriter._*"])]
    assert "onnxscript/rewriter/_rewrite_rule.py" in private
    assert "onnxscript/rewriter/pattern.py" not in private
    common = [s.name for s in resolve_sources(["onnxscript.rewriter.rules.common"])]
    assert common and not [n for n in common if n.endswith("_test.py")]  # shipped tests
    with pytest.raises(InputError, match="no module"):
        resolve_sources(["onnxscript.no_such_module"])


def test_targets_declare_their_coverage_kind() -> None:
    from fuzzer.targets import get_target

    assert edge_setup(get_target("fake"), Path("edges")).kind == "hits"
    assert set(EDGE_KINDS) >= {"gcov", "hits", "python"}
    with pytest.raises(InputError, match="unknown code coverage kind"):
        edge_kind("lcov")
    for name in ("onnxslim", "onnxscript", "onnxruntime-transformers"):
        try:
            target = get_target(name)
        except ImportError:
            continue
        setup = edge_setup(target, Path("edges"))
        assert setup.kind == "python" and setup.build is None and setup.sources


def _optfuzz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "COLUMNS": "160"})


@pytest.mark.slow
def test_code_coverage_of_onnxslim_prints_the_table_and_writes_the_plot(
        onnxslim: object, tmp_path: Path) -> None:
    out = tmp_path / "cov"
    proc = _optfuzz("coverage", "--code", "--target", "onnxslim", "--cases", "4",
                    "--source", "generated", "--jobs", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "line / branch coverage of onnxslim.core" in proc.stdout
    assert "pattern/elimination/transpose.py" in proc.stdout
    assert (out / "coverage.png").read_bytes()[:4] == b"\x89PNG"
    (row,) = json.loads((out / "coverage.json").read_text())
    assert row["cases"] == 4 and len(row["curve"]) == 4 and row["edge_features"] > 0
    total = row["files"][-1]
    assert total["path"] == "total"
    assert 0 < total["branches"][0] < total["branches"][1]
    assert 0 < total["lines"][0] < total["lines"][1]
    assert all(f["path"].startswith("onnxslim/core/") for f in row["files"][:-1])


@pytest.mark.slow
def test_a_guided_campaign_on_onnxslim_measures_cases_and_keeps_a_pool(
        onnxslim: object, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _optfuzz("fuzz", "--guided", "--target", "onnxslim", "--max-cases", "30",
                    "--jobs", "2", "--seed", "1", "--reduce-seconds", "5", "--quiet",
                    "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    guided = json.loads((out / "campaign.json").read_text())["guided"]
    assert guided["measured"] >= 1 and guided["edge_features"] > 0
    assert guided["seeds"] >= 1
    assert len((out / "queue.jsonl").read_text().splitlines()) == guided["seeds"]
    assert any(out.joinpath("edges").glob(f"*{ARCS_SUFFIX}"))
