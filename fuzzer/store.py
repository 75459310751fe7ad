"""The output folder of a campaign: one bundle per distinct signature (design.md, "Bundle
layout").

A bundle is written to a temporary folder and renamed into place, so a killed campaign never
leaves half a bundle; meta.json updates (hits, last_seen) are read-modify-write under an
exclusive ``fcntl`` lock on ``<root>/.lock`` and replaced atomically, so several processes may
share one folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

META = "meta.json"


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

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's exclusive lock (blocking)."""
        with open(self.root / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

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
