"""The output folder of a campaign: one bundle per distinct signature (design.md, "Bundle
layout").

A bundle is written to a temporary folder and renamed into place, so a killed campaign never
leaves half a bundle; meta.json updates (hits, last_seen) are read-modify-write under an
exclusive ``fcntl`` lock on ``<root>/.lock`` and replaced atomically, so several processes may
share one folder. A campaign batches its hits (:meth:`BundleStore.add_hit`,
:meth:`BundleStore.flush_hits`): a bug seen thousands of times costs one meta.json write per
flush, not one per sighting. Lookups by signature use an index of every bundle's meta, rebuilt
when a bundle appears (the folder's mtime changes) or after :data:`INDEX_SECONDS`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

META = "meta.json"
INDEX_SECONDS = 30.0  # rebuild the signature index at least this often (other processes)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``; the file gets
    the mode a plain ``open`` would give it (0666 less the umask)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def dump_json(data: Any) -> bytes:
    """Indented, key-ordered JSON bytes with a final newline."""
    return (json.dumps(data, indent=2, sort_keys=False, default=str) + "\n").encode()


class BundleStore:
    """Bundles under ``root`` (created on first use).

    Raises:
        OSError: the folder cannot be created or written.
    """

    def __init__(self, root: str | os.PathLike[str], batch_hits: bool = False) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._batch = batch_hits
        self._pending: dict[str, tuple[int, str]] = {}
        self._pending_lock = threading.Lock()
        self._index: list[dict[str, Any]] = []
        self._index_key: tuple[int, int] | None = None

    def index(self) -> list[dict[str, Any]]:
        """``[{"id", "signature", "aliases", "first_seen"}]`` of every bundle,
        cached until a bundle appears or :data:`INDEX_SECONDS` pass."""
        key = (self.root.stat().st_mtime_ns, int(time.monotonic() // INDEX_SECONDS))
        if key != self._index_key:
            entries = []
            for bid in self.ids():
                try:
                    meta = self.meta(bid)
                except (OSError, ValueError):
                    continue
                entries.append({"id": bid, "signature": meta.get("signature", ""),
                                "aliases": list(meta.get("aliases", ())),
                                "first_seen": meta.get("first_seen", "")})
            self._index, self._index_key = entries, key
        return self._index

    def add_hit(self, bundle_id: str, when: str | None = None) -> None:
        """Count one more sighting of a bundle's bug (``when``: ISO time, default now);
        written at once, or at the next :meth:`flush_hits` for a batching store."""
        from fuzzer.store.versions import utc_now

        when = when or utc_now()
        if not self._batch:
            self.update(bundle_id, lambda meta: _add_hits(meta, 1, when))
            return
        with self._pending_lock:
            count, _ = self._pending.get(bundle_id, (0, when))
            self._pending[bundle_id] = (count + 1, when)

    def flush_hits(self) -> None:
        """Write the batched hits into their bundles' meta.json (one write per bundle)."""
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        with self.locked():
            for bundle_id, (count, when) in pending.items():
                if self.exists(bundle_id):
                    self._update_locked(bundle_id,
                                        lambda meta, n=count, w=when: _add_hits(meta, n, w))

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's exclusive lock (blocking)."""
        with open(self.root / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def pending_hits(self) -> int:
        """Sightings counted but not yet written."""
        with self._pending_lock:
            return sum(count for count, _ in self._pending.values())

    def path(self, bundle_id: str) -> Path:
        """Folder of a bundle."""
        return self.root / bundle_id

    def exists(self, bundle_id: str) -> bool:
        """Whether a complete bundle (with meta.json) is there."""
        return (self.path(bundle_id) / META).is_file()

    def meta(self, bundle_id: str) -> dict[str, Any]:
        """The parsed meta.json of a bundle."""
        return json.loads((self.path(bundle_id) / META).read_text())

    def ids(self) -> list[str]:
        """Ids of every complete bundle, sorted."""
        return sorted(p.parent.name for p in self.root.glob(f"*/{META}")
                      if not p.parent.name.startswith("."))

    def create(self, bundle_id: str, files: dict[str, bytes],
               on_exists: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> bool:
        """Write a new bundle atomically; return True if created.

        If the bundle appeared meanwhile (another worker or campaign found the same bug),
        nothing is written and ``on_exists`` updates its meta instead.
        """
        with self.locked():
            if self.exists(bundle_id):
                if on_exists is not None:
                    self._update_locked(bundle_id, on_exists)
                return False
            tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=f".{bundle_id}."))
            try:
                tmp.chmod(0o777 & ~_umask())
                for name, data in files.items():
                    (tmp / name).write_bytes(data)
                if self.path(bundle_id).exists():  # a folder without meta: a leftover
                    shutil.rmtree(self.path(bundle_id))
                os.rename(tmp, self.path(bundle_id))
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            return True

    def update(self, bundle_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> \
            dict[str, Any]:
        """Apply ``change`` to a bundle's meta under the lock and write it back atomically."""
        with self.locked():
            return self._update_locked(bundle_id, change)

    def _update_locked(self, bundle_id: str,
                       change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        meta = change(self.meta(bundle_id))
        write_atomic(self.path(bundle_id) / META, dump_json(meta))
        return meta

    def replace_files(self, bundle_id: str, files: dict[str, bytes],
                      remove: tuple[str, ...] = ()) -> None:
        """Replace some files of a bundle (each atomically), e.g. after reduction."""
        with self.locked():
            folder = self.path(bundle_id)
            for name, data in files.items():
                write_atomic(folder / name, data)
            for name in remove:
                with contextlib.suppress(FileNotFoundError):
                    (folder / name).unlink()


def _add_hits(meta: dict[str, Any], count: int, when: str) -> dict[str, Any]:
    meta["hits"] = int(meta.get("hits", 0)) + count
    meta["last_seen"] = max(str(meta.get("last_seen", "")), when)
    return meta
