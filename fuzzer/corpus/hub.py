"""The ``hub`` source: the ONNX Model Hub (the corpus DiTOX used), the way ``onnx.hub`` reads it.

The manifest (``ONNX_HUB_MANIFEST.json`` of a hub repository; a copy of ``onnx/models:main``
ships as package data) lists each model's path in the repository, opset, sha256, size, tags and
input/output ports. Models are cached where ``onnx.hub`` caches them -- ``$ONNX_HOME/hub``,
else ``$XDG_CACHE_HOME/onnx/hub``, else ``~/.cache/onnx/hub`` -- at
``<model path's folder>/<sha256>_<file name>``, so a cache filled by ``onnx.hub.load`` (onnx <
1.21) or by hand is used as is. Downloads come from ``https://github.com/<owner>/<repo>/raw/
<ref>/<model path>`` or from any base URL or local folder laid out like the repository, and a
file whose sha256 differs from the manifest is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fuzzer.corpus.catalog import Offer, offer_file
from fuzzer.corpus.model import CorpusModel
from fuzzer.corpus.pypi import Fetched
from fuzzer.errors import InputError

#: The hub repository of the packaged manifest, in onnx.hub's ``owner/repo:ref`` form.
DEFAULT_REPO = "onnx/models:main"
#: Seconds a download may stall before it is abandoned.
DOWNLOAD_TIMEOUT = 60.0
#: Size given to dynamic spatial dims of image inputs (pixels).
IMAGE_SIZE = 224

#: Manifest tag -> task category, first match wins (segmentation tags before the broader
#: "object detection segmentation").
TAG_TASKS: tuple[tuple[str, str], ...] = (
    ("fcn", "segmentation"),
    ("duc", "segmentation"),
    ("mask-rcnn", "segmentation"),
    ("object detection segmentation", "detection"),
    ("classification", "classification"),
    ("text", "text"),
)


@dataclass(frozen=True)
class HubEntry:
    """One manifest entry: ``model`` name, ``model_path`` in the repository, ``opset``,
    ``sha256``, ``bytes`` (size), ``tags`` and the declared ``inputs`` (io_ports)."""

    model: str
    model_path: str
    opset: int
    sha256: str
    bytes: int
    tags: tuple[str, ...] = ()
    inputs: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def task(self) -> str | None:
        """Task category from the tags (:data:`TAG_TASKS`), or ``None``."""
        tags = {t.lower() for t in self.tags}
        return next((task for tag, task in TAG_TASKS if tag in tags), None)


def hub_dir() -> Path:
    """The model cache folder of ``onnx.hub`` (see module docstring)."""
    if "ONNX_HOME" in os.environ:
        return Path(os.environ["ONNX_HOME"]) / "hub"
    if "XDG_CACHE_HOME" in os.environ:
        return Path(os.environ["XDG_CACHE_HOME"]) / "onnx" / "hub"
    return Path.home() / ".cache" / "onnx" / "hub"


def load_manifest(path: str | os.PathLike[str] | None = None) -> list[HubEntry]:
    """Entries of a hub manifest file (default: the packaged ``onnx/models:main`` copy).

    Raises:
        InputError: the file is missing or not a hub manifest.
    """
    try:
        if path is None:
            text = resources.files("fuzzer.corpus").joinpath("hub_manifest.json").read_text()
        else:
            text = Path(path).read_text("utf-8")
        raw = json.loads(text)
        return [HubEntry(model=e["model"], model_path=e["model_path"],
                         opset=int(e["opset_version"]), sha256=e["metadata"]["model_sha"],
                         bytes=int(e["metadata"].get("model_bytes", 0)),
                         tags=tuple(e["metadata"].get("tags", ())),
                         inputs=tuple(e["metadata"].get("io_ports", {}).get("inputs", ())))
                for e in raw]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a hub manifest: {path} ({type(exc).__name__}: {exc})") from None


def select(entries: Sequence[HubEntry], tags: Sequence[str] = (), opset: int | None = None,
           names: Sequence[str] = ()) -> list[HubEntry]:
    """Entries that carry any of ``tags`` (case-insensitive, as ``onnx.hub.list_models``),
    have exactly ``opset``, and whose name is in ``names`` (case-insensitive); an empty filter
    keeps everything."""
    want_tags = {t.lower() for t in tags}
    want_names = {n.lower() for n in names}
    return [e for e in entries
            if (not want_tags or want_tags & {t.lower() for t in e.tags})
            and (opset is None or e.opset == opset)
            and (not want_names or e.model.lower() in want_names)]


def cache_path(entry: HubEntry, root: Path | None = None) -> Path:
    """Where ``onnx.hub`` caches ``entry``: ``<root>/<folder of model_path>/<sha>_<name>``."""
    folder, _, name = entry.model_path.rpartition("/")
    return (root or hub_dir()) / folder / f"{entry.sha256}_{name}"


def base_url(repo: str) -> str:
    """Download base of ``repo``: ``owner/name[:ref]`` -> GitHub's raw (LFS-resolving) URL; a
    URL or a local folder is used as is (a folder becomes a ``file://`` URL)."""
    if "://" in repo:
        return repo.rstrip("/") + "/"
    if Path(repo).is_dir():
        return Path(repo).resolve().as_uri() + "/"
    owner_name, _, ref = repo.partition(":")
    return f"https://github.com/{owner_name}/raw/{ref or 'main'}/"


def download(entry: HubEntry, base: str, root: Path | None = None,
             timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """Download ``entry`` from ``base`` into the cache, verify its sha256, return its path.

    The file is written under a temporary name and renamed once verified.

    Raises:
        InputError: the source cannot be reached (offline), or the sha256 differs from the
            manifest (the download is deleted and refused).
    """
    target = cache_path(entry, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(base + entry.model_path, timeout=timeout) as response, \
                open(tmp, "wb") as out:
            for chunk in iter(lambda: response.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise InputError(f"cannot download {entry.model} from {base} ({reason}); offline, "
                         f"put {entry.model_path} at {target} by hand") from None
    if digest.hexdigest() != entry.sha256:
        tmp.unlink(missing_ok=True)
        raise InputError(f"hub model {entry.model}: sha256 {digest.hexdigest()} differs from "
                         f"the manifest's {entry.sha256}; refused")
    os.replace(tmp, target)
    return target


def fetch_hub(entries: Sequence[HubEntry], repo: str = DEFAULT_REPO,
              root: Path | None = None) -> Iterator[Fetched]:
    """Download each entry not yet cached; one :class:`Fetched` per entry (failures are
    reported, not raised). Offline, the first unreachable download stops the rest."""
    base = base_url(repo)
    for entry in entries:
        if cache_path(entry, root).is_file():
            yield Fetched(entry.model, "cached", 1)
            continue
        start = time.perf_counter()
        try:
            path = download(entry, base, root)
            yield Fetched(entry.model, "fetched", 1, time.perf_counter() - start,
                          path.stat().st_size)
        except InputError as exc:
            yield Fetched(entry.model, "failed", 0, time.perf_counter() - start,
                          error=str(exc))
            if "cannot download" in str(exc):
                return


def image_spec(entry: HubEntry) -> dict[str, Any] | None:
    """Feed spec for the 4-D float inputs with 3 channels (NCHW) of a vision model: natural
    photos, ImageNet mean/std; dynamic sizes become 1 (batch) and :data:`IMAGE_SIZE`."""
    if "vision" not in {t.lower() for t in entry.tags}:
        return None
    spec = {}
    for port in entry.inputs:
        shape = port.get("shape") or []
        if port.get("type") != "tensor(float)" or len(shape) != 4 or shape[1] != 3:
            continue
        dims = [d if isinstance(d, int) and d > 0 else (1 if i == 0 else IMAGE_SIZE)
                for i, d in enumerate(shape)]
        spec[port["name"]] = {"fill": "image", "shape": dims, "set": "photo",
                              "scale": 1 / 255, "mean": [0.485, 0.456, 0.406],
                              "std": [0.229, 0.224, 0.225]}
    return spec or None


def hub_id(entry: HubEntry) -> str:
    """Corpus id of a manifest entry: ``hub/<model>/opset<opset>``."""
    return f"hub/{entry.model}/opset{entry.opset}"


def offer_hub(dirs: Sequence[str] = (), manifest: str | None = None,
              root: Path | None = None) -> Iterator[Offer]:
    """Every entry of the manifest (default: the packaged one), fetched when its file is in the
    cache (``root``, default :func:`hub_dir`) with the manifest's size; no download.

    ``dirs`` is ignored.
    """
    folder = root or hub_dir()
    for entry in load_manifest(manifest):
        yield offer_file(hub_id(entry), "hub", cache_path(entry, folder), entry.sha256,
                         entry.bytes, task=entry.task,
                         facts={"opset": entry.opset, "tags": list(entry.tags),
                                "model_path": entry.model_path})


def iter_hub(dirs: Sequence[str] = (), manifest: str | None = None,
             root: Path | None = None) -> Iterator[CorpusModel]:
    """Yield the manifest's models that are in the cache (``root``, default :func:`hub_dir`).

    ``dirs`` is ignored. A model's sha256 is the manifest's (the materializer checks it).

    Raises:
        InputError: no model of the manifest is in the cache; the message names the folder to
            fill (by ``optfuzz corpus fetch --source hub`` or by hand, offline).
    """
    folder = root or hub_dir()
    found = False
    for entry in load_manifest(manifest):
        path = cache_path(entry, folder)
        if not path.is_file():
            continue
        found = True
        yield CorpusModel(id=hub_id(entry), path=path,
                          sha256=entry.sha256, task=entry.task, origin="hub",
                          spec=image_spec(entry),
                          facts={"tags": list(entry.tags), "model_path": entry.model_path})
    if not found:
        raise InputError(f"no ONNX Model Hub models in {folder}; run `optfuzz corpus fetch "
                         "--source hub`, or offline copy them there by hand as "
                         "<model path folder>/<sha256>_<file name>")
