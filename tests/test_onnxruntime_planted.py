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

from fuzzer.campaign.record import key_of
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
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
    assert key.split("|")[2] == planted["symptom"]
    if "footprint" in planted:  # taken against what onnxruntime saves with no transformer
        assert key.endswith("|fp:" + planted["footprint"])
