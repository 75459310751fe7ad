"""The version-converter target: adapters named by op type and opset pair as onnx keys
them, the table read from onnx's convert.h, generated models at the configuration's
``from`` opset, step-wise conversions that stop before a disabled adapter would act,
repro.py's copy of them, documented behaviour from onnx's sources, and the models in
tests/data/version_converter that onnx 1.23.2's converter mishandles (one per symptom, from
``optfuzz fuzz --target version-converter --minutes 10``): detected, localized to the
adapter, repro.py exits 1."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, version_converter

from fuzzer.execution.sandbox import Sandbox
from fuzzer.targets import get_target
from fuzzer.targets.version_converter.adapters import all_adapters, step_adapters, table
from fuzzer.targets.version_converter.read_convert_h import read
from generators.generate import generate
from generators.hints import GenerationHints
from generators.inputs import synthesize_inputs
from generators.motifs import MOTIFS
from generators.versions import ir_version_for
from oracles.base import Finding
from tests.planted_cases import cases, check_detected_and_localized, check_repro_exits_1

DATA = Path(__file__).parent / "data" / "version_converter"
CONVERT_H = Path(onnx.__file__).parent / "version_converter" / "convert.h"


@pytest.fixture(scope="module")
def target():
    return get_target("version-converter")


def test_adapters_are_keyed_like_onnx(target) -> None:
    step = {a.name: a for a in step_adapters(9, 10)}
    assert step["Upsample 9->10"].kind == "Upsample_9_10"
    assert step["Slice 9->10"].kind == "Slice_9_10"
    assert {"TopK 9->10", "Dropout 9->10"} <= set(step)
    assert all(a.op in {"Upsample", "Slice", "TopK", "Dropout", "AveragePool", "MaxPool"}
               for a in step.values())
    down = {a.name: a for a in step_adapters(10, 9)}
    assert down["Resize 10->9"].kind == "NoPreviousVersionAdapter"
    assert all_adapters()["LogSoftmax 12->13"].kind == ""  # convert.h registers none
    assert "no adapter" in target.unreachable()["LogSoftmax 12->13"]
    assert "CompatibleAdapter" in target.unreachable()["Relu 13->14"]
    assert "Resize 10->11" not in target.unreachable()
    assert target.accepts_pass("Clip 10->11") and not target.accepts_pass("Clip 10->12")


@pytest.mark.skipif(not CONVERT_H.is_file(), reason="the installed onnx ships no convert.h")
def test_table_is_the_installed_convert_h() -> None:
    if table()["source"] != f"onnx {onnx.__version__}: onnx/version_converter/convert.h":
        pytest.skip(f"adapters.json was read from {table()['source']}")
    assert read(CONVERT_H)["adapters"] == table()["adapters"]
    assert "Upsample" in table()["missing"]["6->7"]


def test_generated_models_declare_the_from_opset(target) -> None:
    rng = random.Random(5)
    for seed in range(20):
        config = target.configurations(rng, None)
        assert 7 <= config["from"] <= 21 and abs(config["to"] - config["from"]) <= 4
        gm = generate(seed, passes=target.generation_hints(config))
        assert gm.opset == config["from"]
        assert gm.model.ir_version == ir_version_for(gm.opset)  # VERSION_TABLE's pairing
    small = generate(3, passes=GenerationHints(("Upsample 9->10",), opset=9, steps=(0, 0)))
    assert small.opset == 9 and set(small.motifs) == {"oc-upsample"}
    # Cast: a draw that takes a schema plan row brings another element type in and out
    assert {n.op_type for n in small.model.graph.node} <= {"Upsample", "Constant", "Reshape",
                                                           "Cast"}


def _upsample_model(opset: int = 9) -> onnx.ModelProto:
    scales = helper.make_tensor("scales", onnx.TensorProto.FLOAT, [4], [1, 1, 2, 2])
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    relu = helper.make_node("Relu", ["y"], ["z"])
    graph = helper.make_graph(
        [node, relu], "g", [helper.make_tensor_value_info("x", 1, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("z", 1, [1, 1, 4, 4])], [scales])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=4)


def test_named_adapters_convert_step_by_step(target) -> None:
    model = _upsample_model()
    every = {"from": 9, "to": 11, "passes": None}
    whole = target.optimize(model, every)
    assert whole.opset_import[0].version == 11
    listed = target.optimize(model, target.with_passes(every, target.passes_of(every)))
    assert listed.SerializeToString() == whole.SerializeToString()
    # Resize 10->11 off: the conversion stops at opset 10, after Upsample 9->10 made a Resize
    half = target.optimize(model, dict(every, passes=["Upsample 9->10"]))
    assert half.opset_import[0].version == 10
    assert [n.op_type for n in half.graph.node if n.op_type != "Constant"] == ["Resize", "Relu"]
    # nothing named: no step at which an adapter acts runs
    assert target.optimize(model, dict(every, passes=[])).SerializeToString() == \
        model.SerializeToString()


def test_repro_snippet_replays_the_conversion(target) -> None:
    model = _upsample_model()
    for config in ({"from": 9, "to": 11, "passes": None},
                   {"from": 9, "to": 11, "passes": ["Upsample 9->10"]},
                   {"from": None, "to": None, "passes": None}):
        namespace = {"model": model, "onnx": onnx}
        exec(target.repro_snippet(config), namespace)
        assert namespace["optimized"].SerializeToString() == \
            target.optimize(model, config).SerializeToString()


def test_one_step_from_the_models_own_opset(target) -> None:
    model = _upsample_model(9)
    up = target.optimize(model, target.default_config())
    assert up.SerializeToString() == version_converter.convert_version(model, 10) \
        .SerializeToString()
    down = target.optimize(model, {"from": None, "to": None, "passes": ["Upsample 9->8"]})
    assert down.opset_import[0].version == 8


def test_documented_behaviour_is_onnxs_own(target) -> None:
    config = {"from": 9, "to": 11, "passes": None}
    documented = {
        "opset-converted": Finding("metadata-change", "compare", "default opset 9 became 11"),
        "no-adapter": Finding("optimizer-error", "optimize",
                              "RuntimeError: /project/onnx/version_converter/BaseConverter.h:66:"
                              " adapter_lookup: Assertion `false` failed: No Adapter From "
                              "Version $12 for LogSoftmax"),
        "no-previous-version": Finding("optimizer-error", "optimize",
                                       "RuntimeError: no_previous_version.h:23: adapt: "
                                       "Assertion `false` failed: No Previous Version of "
                                       "Expand exists"),
        "unsupported-by-adapter": Finding("optimizer-error", "optimize",
                                          "RuntimeError: maxpool_8_7.h:21: Assertion failed: "
                                          "Opset version 7 of MaxPool cannot include Indices "
                                          "output"),
        "converts-not-optimizes": Finding("bloat", "compare", "node count grew from 1 to 2"),
    }
    for name, finding in documented.items():
        assert target.documented(finding, config).name == name
    assert target.documented(Finding("metadata-change", "compare",
                                     "default opset 9 became 12"), config) is None
    assert target.documented(Finding("optimizer-error", "optimize",
                                     "IndexError: vector index out of range"), config) is None
    assert target.shared_cause(Finding("load-failure", "load", "Fail: local:F_0(-1) is not a "
                                       "registered function/op")) == "functions-not-converted"


@pytest.mark.parametrize("motif", sorted(m for m in MOTIFS if m.startswith("oc-")))
def test_opset_change_motifs_are_valid_where_they_exist(motif: str) -> None:
    ort.set_default_logger_severity(3)
    spec = MOTIFS[motif]
    opsets = sorted({max(spec.since, 7), min(spec.until, 21)})
    made = 0
    for seed, opset in enumerate(opsets * 3):
        gm = generate(seed, motifs=[motif], opset=opset)
        made += motif in gm.motifs
        onnx.checker.check_model(gm.model, full_check=True)
        onnx.shape_inference.infer_shapes(gm.model, check_type=True, strict_mode=True)
        feeds = synthesize_inputs(gm.model, seed, gm.input_shapes or {})
        outputs = ort.InferenceSession(gm.model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, feeds)
        assert all(np.isfinite(o).all() for o in outputs if o.dtype.kind == "f")
    assert made >= 2


@pytest.mark.parametrize("name", cases(DATA))
def test_planted_detected_and_localized(name: str, sandbox: Sandbox) -> None:
    check_detected_and_localized(DATA / name, sandbox)


@pytest.mark.parametrize("name", cases(DATA))
def test_planted_repro_py_exits_1(name: str, sandbox: Sandbox) -> None:
    check_repro_exits_1(DATA / name, sandbox)
