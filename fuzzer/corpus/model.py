"""CorpusModel: one real model of the corpus, as listed by a source (bundled, pypi, hub, dir)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Bytes read per chunk when hashing a model file.
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path`` (read in 1 MiB chunks).

    Raises:
        OSError: the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class CorpusModel:
    """One model of the corpus.

    Attributes:
        id: stable name, ``"<source>/<...>"`` (e.g. ``"bundled/light/light_resnet50"``,
            ``"pypi/magika/standard_v3_3/model"``).
        path: the ``.onnx`` file on disk.
        sha256: hex sha256 of that file.
        task: task category (``"classification"``, ``"detection"``, ``"segmentation"``,
            ``"text"``, ``"audio"``) or ``None`` where unknown.
        origin: the source kind that listed it (``"bundled"``, ``"pypi"``, ``"hub"``, ``"dir"``).
        inputs: folder holding ONNX backend test data (``input_0.pb``, ...), or ``None``.
        spec: per-input spec of realistic feeds (see :mod:`fuzzer.corpus.feeds`), or ``None``.
        facts: JSON-able facts shown by ``optfuzz corpus list`` (package, license, ...).
    """

    id: str
    path: Path
    sha256: str
    task: str | None = None
    origin: str = "dir"
    inputs: Path | None = None
    spec: dict[str, Any] | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def source(self) -> dict[str, Any]:
        """The TestCase source dict: ``{"kind": "corpus", "model", "sha256", "path", ...}``.

        ``inputs`` (a folder path) and ``spec`` are present only where the model has them.
        """
        src: dict[str, Any] = {"kind": "corpus", "model": self.id, "sha256": self.sha256,
                               "path": str(self.path), "origin": self.origin}
        if self.task:
            src["task"] = self.task
        if self.inputs is not None:
            src["inputs"] = str(self.inputs)
        if self.spec:
            src["spec"] = self.spec
        return src
