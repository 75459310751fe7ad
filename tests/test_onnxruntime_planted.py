"""Models that onnxruntime mis-optimizes, one per symptom, as ``optfuzz fuzz --target
onnxruntime --minutes 10`` found and minimized them (tests/data/onnxruntime/*/case.json says
which bundle): the campaign's oracles detect each at its level with every transformer of the
level enabled, localization over ``disabled_optimizers`` finds the transformers it found,
and the root-cause key names the breaking one. A newer onnxruntime that no longer shows the
bug skips its test with that reason."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime
import pytest

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.rootcause import fault_kind
from fuzzer.handling.key import key_of
from fuzzer.localize.search import localize
from fuzzer.store.npz import read_npz

DATA = Path(__file__).parent / "data" / "onnxruntime"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "case.json").is_file())


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(jobs=2, timeout=30) as sb:
        yield sb


@pytest.mark.parametrize("name", CASES)
def test_detected_and_localized_to_its_transformer(name: str, sandbox: Sandbox) -> None:
    folder = DATA / name
    planted = json.loads((folder / "case.json").read_text())
    case = TestCase("onnxruntime", {"level": planted["level"], "passes": None},
                    {"kind": "bytes"}, model_bytes=(folder / "model.onnx").read_bytes(),
                    feeds=read_npz(folder / "inputs.npz"), keep=True)
    result = sandbox.run(case)
    shown = [f for f in result.findings if f.symptom == planted["symptom"]]
    if not shown and onnxruntime.__version__ != planted["onnxruntime"]:
        pytest.skip(f"onnxruntime {onnxruntime.__version__} no longer shows it (found with "
                    f"{planted['onnxruntime']}: {planted['message'][:80]})")
    assert shown, f"{planted['symptom']} not detected: {result.findings or result.unusable}"
    finding = shown[0]
    where = localize(sandbox, case, result, finding)
    assert where.passes is not None
    assert set(where.passes) == set(planted["responsible_passes"])
    key, breaking, _ = key_of(sandbox, case, finding, where.passes,
                              sandbox.run(case.with_config(
                                  {"level": planted["level"], "passes": where.passes})))
    assert breaking == planted["breaking_pass"]
    assert key.split("|")[2] == fault_kind(finding)  # the kind of fault, never the symptom
    if "footprint" in planted:  # taken against what onnxruntime saves with no transformer
        assert key.endswith("|fp:" + planted["footprint"])


@pytest.mark.parametrize("name", CASES)
def test_repro_py_exits_1_with_the_minimal_transformers(name: str, sandbox: Sandbox) -> None:
    """The bundle's own repro.py (minimal transformers enabled, the rest disabled) exits 1,
    also for a wrong output behind a documented invalid model."""
    from fuzzer.handling.verify import run_repro
    from fuzzer.report.repro import render_repro

    folder = DATA / name
    planted = json.loads((folder / "case.json").read_text())
    if onnxruntime.__version__ != planted["onnxruntime"]:
        pytest.skip(f"found with onnxruntime {planted['onnxruntime']}")
    config = {"level": planted["level"], "passes": planted["responsible_passes"]}
    repro = render_repro(f"{planted['symptom']}-planted", planted["symptom"], "onnxruntime",
                         config, planted["onnxruntime"], timeout=30)
    files = {"repro.py": repro.encode(), "model.onnx": (folder / "model.onnx").read_bytes(),
             "inputs.npz": (folder / "inputs.npz").read_bytes()}
    code, tail = sandbox.call(run_repro, files, 120.0, timeout=180)
    assert code == 1, tail
