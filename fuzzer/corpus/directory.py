"""The ``dir`` source: every ``.onnx`` file under the user's folders (recursive).

A folder laid out like the ONNX backend test data (``model.onnx`` next to
``test_data_set_0/input_*.pb``) brings its stored feeds along.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from fuzzer.corpus.model import CorpusModel, sha256_file
from fuzzer.errors import InputError


def iter_dir(dirs: Sequence[str] = ()) -> Iterator[CorpusModel]:
    """Yield the ``.onnx`` files under each folder of ``dirs``, sorted by path.

    Ids are ``dir/<folder name>/<relative path without .onnx>``.

    Raises:
        InputError: a folder that does not exist, or no folder given.
    """
    if not dirs:
        raise InputError("the dir corpus needs a folder: --corpus DIR")
    for folder in dirs:
        base = Path(folder).expanduser()
        if not base.is_dir():
            raise InputError(f"corpus folder not found: {folder}")
        for path in sorted(base.rglob("*.onnx")):
            if not path.is_file():
                continue
            rel = path.relative_to(base).with_suffix("")
            data = path.parent / "test_data_set_0"
            yield CorpusModel(id=f"dir/{base.resolve().name}/{rel.as_posix()}", path=path,
                              sha256=sha256_file(path), origin="dir",
                              inputs=data if data.is_dir() else None)
