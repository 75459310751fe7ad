"""What each corpus source can offer, fetched or not, read from local files only.

``optfuzz corpus list`` shows this catalogue: the ``bundled`` models (always present), every
pinned ``pypi`` model, every ``hub`` manifest entry and the ``dir`` files, each marked fetched
(in the cache) or not. Nothing here downloads, runs pip or opens a socket, and a source whose
models are not fetched yet is listed, not refused (contrast :func:`fuzzer.corpus.iter_models`,
which yields only usable models).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.corpus.model import CorpusModel

#: source kind -> "module:function" of an offer lister ``(dirs) -> Iterator[Offer]``, for the
#: sources whose models may be missing from the cache. Every other source of
#: :data:`fuzzer.corpus.SOURCES` offers exactly the models its lister yields, all fetched.
OFFERS: dict[str, str] = {
    "pypi": "fuzzer.corpus.pypi:offer_pypi",
    "hub": "fuzzer.corpus.hub:offer_hub",
}

#: source kind -> the command that fetches its missing models (shown in the summary line).
FETCH_HINTS: dict[str, str] = {
    "pypi": "optfuzz corpus fetch --source pypi",
    "hub": "optfuzz corpus fetch --source hub --model NAME",
}


@dataclass(frozen=True)
class Offer:
    """One model a source can offer.

    Attributes:
        id: the model id the source gives it once fetched (as :class:`CorpusModel` ``id``).
        origin: the source kind (``"bundled"``, ``"pypi"``, ``"hub"``, ``"dir"``).
        fetched: whether the model file is on disk, ready to use.
        path: where the file is, or where fetching puts it.
        sha256: expected hex sha256 (the pin's or manifest's), or the file's; ``None`` if unknown.
        bytes: the expected size, else the size of the file on disk; ``None`` if unknown.
        task: task category, or ``None``.
        facts: JSON-able facts (package, version, license, tags, ...).
    """

    id: str
    origin: str
    fetched: bool
    path: Path
    sha256: str | None = None
    bytes: int | None = None
    task: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """The JSON row of ``optfuzz corpus list --json``."""
        return {"id": self.id, "origin": self.origin, "fetched": self.fetched,
                "task": self.task, "sha256": self.sha256, "bytes": self.bytes,
                "path": str(self.path), **self.facts}


def offer_file(name: str, origin: str, path: Path, sha256: str | None, size: int | None,
               **details: Any) -> Offer:
    """The :class:`Offer` ``name`` of a file that may or may not be on disk at ``path``.

    It counts as fetched when the file exists and, where ``size`` is known, has that size
    (so a half-written or foreign file is not taken for the model). ``details`` are the
    remaining :class:`Offer` fields (``task``, ``facts``).
    """
    present = path.is_file()
    actual = path.stat().st_size if present else None
    fetched = present and (not size or actual == size)
    return Offer(name, origin, fetched, path, sha256, size or actual, **details)


def from_model(model: CorpusModel) -> Offer:
    """The (fetched) :class:`Offer` of a model a source lists from disk."""
    return Offer(model.id, model.origin, True, model.path, model.sha256,
                 model.path.stat().st_size, model.task, dict(model.facts))


def iter_offers(kind: str, dirs: Sequence[str] = ()) -> Iterator[Offer]:
    """Every model the source ``kind`` can offer, fetched or not, without network access.

    Unlike :func:`fuzzer.corpus.iter_models`, files with the same content are all listed.

    Raises:
        InputError: an unknown kind, or a ``dir`` folder that is missing or not given.
    """
    from fuzzer.corpus import check_sources, lister

    check_sources([kind])
    if kind in OFFERS:
        module, attr = OFFERS[kind].split(":")
        yield from getattr(importlib.import_module(module), attr)(dirs)
        return
    for model in lister(kind)(dirs):
        yield from_model(model)


def summary(kind: str, offers: Sequence[Offer]) -> str:
    """One line per source, e.g. ``pypi: 3 of 21 models fetched (run: optfuzz corpus fetch
    --source pypi)``; the hint appears only while models are missing. A pypi catalogue whose
    missing models are all opt-in pins (``default: false``) hints at ``--all``."""
    missing = [o for o in offers if not o.fetched]
    line = f"{kind}: {len(offers) - len(missing)} of {len(offers)} models fetched"
    if missing and kind in FETCH_HINTS:
        hint = FETCH_HINTS[kind]
        if kind == "pypi" and all(o.facts.get("default") is False for o in missing):
            hint += " --all"
        line += f" (run: {hint})"
    return line
