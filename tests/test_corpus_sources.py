"""The bundled and dir corpus sources and the corpus materializer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzzer.corpus import iter_models
from fuzzer.corpus.bundled import FOLDERS, data_root
from fuzzer.corpus.materialize import materialize
from fuzzer.errors import InputError


def _relu_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_bundled_lists_every_model_of_the_onnx_wheel() -> None:
    models = list(iter_models(["bundled"]))
    on_disk = sum(len(list((data_root() / f).rglob("*.onnx"))) for f in FOLDERS)
    assert len(models) == on_disk > 100
    assert len({m.id for m in models}) == len(models)
    light = [m for m in models if m.id.startswith("bundled/light/")]
    assert len(light) == 9 and all(m.task == "classification" for m in light)
    with_data = [m for m in models if m.inputs is not None]
    assert len(with_data) > 100


def test_bundled_stored_feeds_match_graph_inputs() -> None:
    model = next(m for m in iter_models(["bundled"]) if m.id.endswith("test_AvgPool2d"))
    mat = materialize(model.source(), 0, None)
    stored = numpy_helper.to_array(onnx.load_tensor(str(model.inputs / "input_0.pb")))
    (name, value), = mat.feeds.items()
    assert name == mat.model.graph.input[0].name
    np.testing.assert_array_equal(value, stored)


def test_light_classifier_gets_a_normalized_photo() -> None:
    model = next(m for m in iter_models(["bundled"]) if m.id == "bundled/light/light_resnet50")
    mat = materialize(model.source(), 3, None)
    (value,) = mat.feeds.values()
    assert value.shape == (1, 3, 224, 224) and value.dtype == np.float32
    # ImageNet normalization of a natural photo: roughly zero mean, unit spread, not noise
    assert -2.5 < value.mean() < 2.5 and 0.3 < value.std() < 2.0
    assert np.abs(np.diff(value[0, 0], axis=1)).mean() < 0.5  # neighbouring pixels agree
    assert mat.task == "classification"


def test_dir_source_recurses_and_brings_test_data(tmp_path: Path) -> None:
    case = tmp_path / "models" / "sub" / "relu"
    (case / "test_data_set_0").mkdir(parents=True)
    onnx.save(_relu_model(), case / "model.onnx")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    onnx.save_tensor(numpy_helper.from_array(x), case / "test_data_set_0" / "input_0.pb")
    other = _relu_model()
    other.doc_string = "another"
    onnx.save(other, tmp_path / "models" / "plain.onnx")
    onnx.save(other, tmp_path / "models" / "sub" / "copy.onnx")  # same bytes: listed once
    models = list(iter_models(["dir"], [str(tmp_path / "models")]))
    assert [m.id for m in models] == ["dir/models/plain", "dir/models/sub/relu/model"]
    mat = materialize(models[1].source(), 0, None)
    np.testing.assert_array_equal(mat.feeds["x"], x)
    assert materialize(models[0].source(), 0, None).feeds is None  # worker synthesizes


def test_dir_source_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        list(iter_models(["dir"], [str(tmp_path / "nope")]))
    with pytest.raises(InputError, match="unknown corpus source"):
        list(iter_models(["zoo"]))


def test_materialize_refuses_a_changed_file(tmp_path: Path) -> None:
    onnx.save(_relu_model(), tmp_path / "m.onnx")
    (model,) = iter_models(["dir"], [str(tmp_path)])
    (tmp_path / "m.onnx").write_bytes((tmp_path / "m.onnx").read_bytes() + b"\x00")
    with pytest.raises(InputError, match="sha256"):
        materialize(model.source(), 0, None)


def test_materialize_refuses_external_data_outside_the_folder(tmp_path: Path) -> None:
    model = _relu_model()
    weight = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="../secret.bin")
    model.graph.initializer.append(weight)
    (tmp_path / "secret.bin").write_bytes(b"\x00" * 24)
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "m.onnx").write_bytes(model.SerializeToString())
    (listed,) = iter_models(["dir"], [str(inner)])
    with pytest.raises(InputError, match="outside"):
        materialize(listed.source(), 0, None)
