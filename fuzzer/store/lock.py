"""One campaign per folder: ``<folder>/.campaign.lock`` holds ``{"pid", "host", "started"}`` of
the campaign that owns the folder, under an exclusive ``fcntl.flock`` kept for the whole
campaign.

A lock whose holder is gone is taken over silently: the flock is free (the holder exited or was
killed), or the recorded process is on this host and no longer exists (its forked workers may
still hold the flock they inherited; the file is then replaced). This lock is separate from the
short-lived ``<folder>/.lock`` that serializes meta.json updates (:mod:`fuzzer.store.folder`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.errors import InputError

LOCK_FILE = ".campaign.lock"
_ATTEMPTS = 40
_PAUSE = 0.05  # seconds between attempts while a new holder writes its record


class CampaignLocked(InputError):
    """Another live campaign owns the folder."""


@dataclass(frozen=True)
class LockOwner:
    """The campaign that holds a folder's lock: process id, host name, ISO start time."""

    pid: int
    host: str
    started: str

    def alive(self) -> bool:
        """False only when this owner is known to be gone: on this host, with no such
        process (or a zombie)."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        with contextlib.suppress(OSError, IndexError):
            stat = Path(f"/proc/{self.pid}/stat").read_text()
            return stat.rsplit(")", 1)[1].split()[0] != "Z"
        return True


class CampaignLock:
    """The exclusive lock of a campaign folder, as a context manager.

    Args:
        folder: the campaign's output folder (created if missing).

    Raises (on entering):
        CampaignLocked: a live campaign holds the folder; the one-line message names its pid,
            host and start time.
        OSError: the lock file cannot be created or written.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock (see the class); does nothing if this object holds it already."""
        if self._fd is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        owner: LockOwner | None = None
        for _ in range(_ATTEMPTS):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_owner(fd)
                inode = os.fstat(fd).st_ino
                os.close(fd)
                if owner is None:  # its holder is writing the record right now
                    time.sleep(_PAUSE)
                    continue
                if owner.alive():
                    raise CampaignLocked(self._refusal(owner)) from None
                _unlink_if(self.path, inode)  # held by orphans of a dead campaign
                continue
            if not _same_file(fd, self.path):  # removed or replaced meanwhile: try again
                os.close(fd)
                continue
            try:
                _write_owner(fd)
            except BaseException as exc:
                os.close(fd)
                if isinstance(exc, OSError) and exc.filename is None:
                    exc.filename = str(self.path)
                raise
            self._fd = fd
            return
        raise CampaignLocked(self._refusal(owner))

    def release(self) -> None:
        """Remove the lock file and drop the lock; does nothing if not held."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            if _same_file(fd, self.path):
                self.path.unlink()
        os.close(fd)

    def owner(self) -> LockOwner | None:
        """The recorded owner of the folder's lock file, or None (no file, no record)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return _read_owner(fd)
        finally:
            os.close(fd)

    def _refusal(self, owner: LockOwner | None) -> str:
        where = str(self.folder).rstrip("/") + "/"
        who = (f"pid {owner.pid} on host {owner.host}, started {owner.started}" if owner
               else f"its holder has not written {self.path.name}")
        return f"{where} is in use by another campaign ({who}); wait for it to end or " \
               "choose another --out"

    def __enter__(self) -> CampaignLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _read_owner(fd: int) -> LockOwner | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"null")
        return LockOwner(int(data["pid"]), str(data["host"]), str(data["started"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_owner(fd: int) -> None:
    from fuzzer.store.versions import utc_now

    record = {"pid": os.getpid(), "host": socket.gethostname(), "started": utc_now()}
    data = (json.dumps(record) + "\n").encode()
    os.ftruncate(fd, 0)
    if os.pwrite(fd, data, 0) != len(data):
        raise OSError(errno.EIO, "short write")
    os.fsync(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


def _unlink_if(path: Path, inode: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.stat(path).st_ino == inode:
            path.unlink()
