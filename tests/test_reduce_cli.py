"""``optfuzz reduce`` end to end (real child processes): the Polygraphy-style --check mode,
bundles minimized during ``check --save`` and again by ``reduce BUNDLE``; every minimized
bundle's repro.py still exits 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.test_reduce import chain

CHECKER = """import sys, onnx
model = onnx.load(sys.argv[-1])
print("Neg present" if any(n.op_type == "Neg" for n in model.graph.node) else "clean")
"""


def optfuzz(*args: str, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300,
                          env=None if env is None else {**os.environ, **env})


@pytest.fixture
def chain_path(tmp_path: Path) -> Path:
    path = tmp_path / "chain.onnx"
    onnx.save(chain(60, 40), path)
    return path


def test_check_mode_with_an_external_script(tmp_path: Path, chain_path: Path) -> None:
    script = tmp_path / "checker.py"
    script.write_text(CHECKER)
    out, good, arts = tmp_path / "min.onnx", tmp_path / "good.onnx", tmp_path / "arts"
    temp = tmp_path / "temp"
    temp.mkdir()
    proc = optfuzz("reduce", str(chain_path), "--check", f"{sys.executable} {script}",
                   "--fail-regex", "Neg present", "--artifacts", str(arts),
                   "--min-good", str(good), "-o", str(out), "--time-limit", "60",
                   env={"TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr
    assert not list(temp.glob("optfuzz-reduce-*"))  # the candidates' folder is removed
    reduced = onnx.load(out)
    assert [n.op_type for n in reduced.graph.node] == ["Neg"]
    onnx.checker.check_model(reduced, full_check=True)
    assert "Neg" not in [n.op_type for n in onnx.load(good).graph.node]
    assert list((arts / "bad").glob("*.onnx")) and list((arts / "good").glob("*.onnx"))


def test_check_mode_on_a_model_that_passes_exits_1(tmp_path: Path, chain_path: Path) -> None:
    proc = optfuzz("reduce", str(chain_path), "--check", f"{sys.executable} -c pass")
    assert proc.returncode == 1


@pytest.mark.parametrize("mode", [[], ["--check", "true"]])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, mode: list[str]) -> None:
    proc = optfuzz("reduce", str(tmp_path / "missing.onnx"), *mode)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "missing.onnx: no such file or folder" in proc.stderr


@pytest.mark.parametrize("bug", ["drop-node", "invalid", "bloat"])
def test_minimized_bundles_still_reproduce(tmp_path: Path, chain_path: Path, bug: str) -> None:
    crashes = tmp_path / "crashes"
    proc = optfuzz("check", str(chain_path), "--target", "fake", "--passes", bug,
                   "--save", str(crashes))
    assert proc.returncode == 1, proc.stderr
    (bundle,) = [p for p in crashes.iterdir() if (p / "meta.json").is_file()]
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["nodes"] == {"original": 60, "minimized": meta["nodes"]["minimized"],
                             "minimal": True}
    assert meta["nodes"]["minimized"] <= 4
    assert len(onnx.load(bundle / "original.onnx").graph.node) == 60
    assert len(onnx.load(bundle / "model.onnx").graph.node) == meta["nodes"]["minimized"]
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                           text=True, timeout=120)
    assert repro.returncode == 1, repro.stdout + repro.stderr
    again = optfuzz("reduce", str(bundle), "--time-limit", "30")
    assert again.returncode == 0, again.stderr
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                           text=True, timeout=120)
    assert repro.returncode == 1, repro.stdout + repro.stderr


def test_reduce_bundle_replaces_model_and_keeps_original(tmp_path: Path,
                                                         chain_path: Path) -> None:
    """A bundle written without reduction is minimized in place by ``reduce BUNDLE``."""
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.findings.signature import make_signature
    from fuzzer.handling.bundle import record
    from fuzzer.store.folder import BundleStore

    config = {"passes": ["drop-node"], "fixed_point": False}
    case = TestCase("fake", config, {"kind": "file", "path": str(chain_path)},
                    model_bytes=chain_path.read_bytes())
    with Sandbox(jobs=1) as sandbox:
        result = sandbox.run(case)
    finding = result.findings[0]
    signature = make_signature("fake", ["drop-node"], finding.symptom, finding.message)
    store = BundleStore(tmp_path / "crashes")
    bid, _ = record(store, signature, finding, case, result.source, result.artifacts, "1.0",
                    ["drop-node"])
    bundle = store.path(bid)
    assert len(onnx.load(bundle / "model.onnx").graph.node) == 60
    proc = optfuzz("reduce", str(bundle), "--time-limit", "60")
    assert proc.returncode == 0, proc.stderr
    assert len(onnx.load(bundle / "model.onnx").graph.node) == 1
    assert len(onnx.load(bundle / "original.onnx").graph.node) == 60
    assert (store.meta(bid).nodes.original, store.meta(bid).nodes.minimized) == (60, 1)
    assert (bundle / "expected.npz").is_file() and (bundle / "optimized.onnx").is_file()
    assert not store.meta(bid).nodes.minimal
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                           text=True, timeout=120)
    assert repro.returncode == 1, repro.stdout + repro.stderr
    again = optfuzz("reduce", str(bundle), "--time-limit", "60")
    assert again.returncode == 0 and f"{bid}: already minimal (1 nodes)" in again.stdout, \
        again.stdout + again.stderr
    assert store.meta(bid).nodes.minimal  # a reduction ran to its end: nothing to suggest


def test_a_name_collision_with_the_value_counter_shrinks_to_one_node(tmp_path: Path) -> None:
    """``counter-clash`` fails where a tensor is named like the graph's value count (as an
    optimizer numbering its temporaries from onnx IR's counter does). Each deleted node moves
    the count, so the reducer must move the name with it to get below the found size."""
    from tests.conftest import unary_chain_model

    model = unary_chain_model(("Neg", "Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Abs", "Relu"))
    count = 1 + len(model.graph.node)  # the input and one output per node
    model.graph.node[4].output[0] = str(count)
    model.graph.node[5].input[0] = str(count)
    path = tmp_path / "clash.onnx"
    onnx.save(model, path)
    crashes = tmp_path / "crashes"
    proc = optfuzz("check", str(path), "--target", "fake", "--passes", "counter-clash",
                   "--save", str(crashes))
    assert proc.returncode == 1, proc.stderr
    (bundle,) = [p for p in crashes.iterdir() if (p / "meta.json").is_file()]
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["symptom"] == "optimizer-error"
    assert meta["nodes"] == {"original": 8, "minimized": 1, "minimal": True}
    repro = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                           text=True, timeout=120)
    assert repro.returncode == 1, repro.stdout + repro.stderr
