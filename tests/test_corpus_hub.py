"""The hub corpus source with the real ONNX Model Hub manifest (the packaged copy of
onnx/models:main) and models served from a local folder: no network."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from importlib import resources
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.corpus.hub import (
    base_url,
    cache_path,
    download,
    fetch_hub,
    iter_hub,
    load_manifest,
    select,
)
from fuzzer.corpus.materialize import materialize
from fuzzer.errors import InputError


def _mnist_like() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["Input3"], ["f"]),
         helper.make_node("ReduceSum", ["f"], ["Plus214_Output_0"], keepdims=1)], "g",
        [helper.make_tensor_value_info("Input3", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("Plus214_Output_0", TensorProto.FLOAT, [1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=7)
    return model.SerializeToString()


def _served(tmp_path: Path) -> tuple[Path, onnx.ModelProto, dict]:
    """A local folder laid out like the hub repository, holding MNIST opset 8."""
    entry = select(load_manifest(), names=["MNIST"], opset=8)[0]
    repo = tmp_path / "repo"
    target = repo / entry.model_path
    target.parent.mkdir(parents=True)
    target.write_bytes(_mnist_like())
    return repo, entry


def test_real_manifest_filters_and_tasks() -> None:
    entries = load_manifest()
    assert len(entries) == 184
    vision12 = select(entries, tags=["Vision"], opset=12)
    assert vision12 and all(e.opset == 12 and "vision" in e.tags for e in vision12)
    tasks = {e.model: e.task for e in entries}
    assert tasks["ResNet50"] == "classification"
    assert tasks["FCN ResNet-50"] == "segmentation"
    assert tasks["YOLOv3"] == "detection"
    assert tasks["BERT-Squad"] == "text"
    mnist = select(entries, names=["mnist"], opset=8)[0]
    assert cache_path(mnist, Path("/c")).as_posix() == (
        "/c/validated/vision/classification/mnist/model/" + mnist.sha256 + "_mnist-8.onnx")
    assert base_url("onnx/models:main") == "https://github.com/onnx/models/raw/main/"


def test_download_refuses_a_sha_mismatch(tmp_path: Path) -> None:
    repo, entry = _served(tmp_path)  # the served bytes are not the real MNIST
    with pytest.raises(InputError, match="sha256 .* differs from the manifest's .*refused"):
        download(entry, base_url(str(repo)), tmp_path / "hub")
    assert not any((tmp_path / "hub").rglob("*.onnx*"))


def test_download_from_a_local_folder_then_list_and_materialize(tmp_path: Path) -> None:
    repo, entry = _served(tmp_path)
    data = (repo / entry.model_path).read_bytes()
    # the real manifest, with MNIST opset 8's sha256 and size set to the served file's
    raw = json.loads(resources.files("fuzzer.corpus").joinpath("hub_manifest.json").read_text())
    for item in raw:
        if item["model"] == "MNIST" and item["opset_version"] == 8:
            item["metadata"]["model_sha"] = hashlib.sha256(data).hexdigest()
            item["metadata"]["model_bytes"] = len(data)
    manifest = tmp_path / "ONNX_HUB_MANIFEST.json"
    manifest.write_text(json.dumps(raw))
    served = select(load_manifest(manifest), names=["MNIST"], opset=8)[0]
    assert served == dataclasses.replace(entry, sha256=served.sha256, bytes=len(data))
    (result,) = fetch_hub([served], str(repo), tmp_path / "hub")
    assert result.status == "fetched" and result.bytes == len(data)
    (again,) = fetch_hub([served], str(repo), tmp_path / "hub")
    assert again.status == "cached"
    (model,) = iter_hub(manifest=str(manifest), root=tmp_path / "hub")
    assert model.id == "hub/MNIST/opset8" and model.task == "classification"
    mat = materialize(model.source(), 0, None)
    assert mat.model.graph.input[0].name == "Input3" and mat.task == "classification"


def test_offline_gives_one_line_naming_the_folder(tmp_path: Path) -> None:
    entry = select(load_manifest(), names=["MNIST"], opset=8)[0]
    (result,) = fetch_hub([entry], "http://127.0.0.1:9/", tmp_path / "hub")
    assert result.status == "failed"
    assert "cannot download MNIST" in result.error and str(tmp_path / "hub") in result.error
    assert "\n" not in result.error
    with pytest.raises(InputError, match=f"no ONNX Model Hub models in {tmp_path / 'hub'}"):
        list(iter_hub(root=tmp_path / "hub"))
