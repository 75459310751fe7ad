"""The ``bundled`` source: models shipped in the installed onnx wheel's backend test data.

Found at run time under ``<onnx package>/backend/test/data/{light,pytorch-converted,
pytorch-operator,simple}``. Layouts: ``<dir>/<case>/model.onnx`` with
``<case>/test_data_set_0/input_*.pb`` (stored feeds), and ``light/light_<name>.onnx``
(ImageNet classifiers whose weights are ConstantOfShape nodes; only the output is stored,
so their feeds are natural photos).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from fuzzer.corpus.model import CorpusModel, sha256_file

#: Sub-folders of the backend test data that hold models (``real/`` only has download stubs).
FOLDERS: tuple[str, ...] = ("light", "pytorch-converted", "pytorch-operator", "simple")

#: Feed spec of the ``light/`` ImageNet classifiers: one 224x224 RGB photo, ImageNet mean/std.
LIGHT_SPEC: dict = {"*": {"fill": "image", "layout": "NCHW", "size": [224, 224],
                          "scale": 1 / 255, "mean": [0.485, 0.456, 0.406],
                          "std": [0.229, 0.224, 0.225]}}


def data_root() -> Path:
    """``<onnx package>/backend/test/data`` of the installed onnx."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def iter_bundled(dirs: Sequence[str] = ()) -> Iterator[CorpusModel]:
    """Yield every model of the installed onnx wheel's backend test data, sorted by id.

    ``dirs`` is ignored (the source takes no folders).
    """
    root = data_root()
    for folder in FOLDERS:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.onnx")):
            rel = path.relative_to(base)
            if folder == "light":
                yield CorpusModel(id=f"bundled/light/{path.stem}", path=path,
                                  sha256=sha256_file(path), task="classification",
                                  origin="bundled", spec=LIGHT_SPEC)
                continue
            case_dir = path.parent
            data = case_dir / "test_data_set_0"
            name = "/".join(rel.parent.parts) if path.name == "model.onnx" else rel.with_suffix("")
            yield CorpusModel(id=f"bundled/{folder}/{name}", path=path,
                              sha256=sha256_file(path), origin="bundled",
                              inputs=data if data.is_dir() else None)
