"""The output folder of a campaign: one bundle per distinct signature (design.md, "Bundle
layout").

A bundle is written to a temporary folder and renamed into place, so a killed campaign never
leaves half a bundle; meta.json updates (hits, last_seen) are read-modify-write under an
exclusive ``fcntl`` lock on ``<root>/.lock`` and replaced atomically, so several processes may
share one folder. A campaign batches its hits (:meth:`BundleStore.add_hit`,
:meth:`BundleStore.flush_hits`): a bug seen thousands of times costs one meta.json write per
flush, not one per sighting. Lookups by signature use an index of every bundle's meta, rebuilt
when a bundle appears (the folder's mtime changes) or after :data:`INDEX_SECONDS`.

Every read goes through :class:`fuzzer.store.meta.BundleMeta`. A damaged bundle (meta.json
missing, empty, half-written, not JSON or not a valid meta; model.onnx or inputs.npz missing)
is skipped by every listing and counted with its reason (:meth:`BundleStore.damaged`); hits
meant for it are dropped, so no damaged file ever stops a campaign, triage or replay.

Every sighting of a bundle's bug written here (a hit, a variant, a promotion, a bundle that
another worker created meanwhile) also checks the maintainer's state of the bundle: one
marked fixed that is seen again becomes ``regressed``, with the time of the sighting and the
installed version of its target (:meth:`fuzzer.store.bundle_state.BundleState.sighted`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from fuzzer.store.bundle_state import FIXED
from fuzzer.store.meta import (
    META_FILE,
    PRELIMINARY_KEYS,
    BundleMeta,
    MetaError,
    meta_problem,
    parse_meta,
    read_meta,
)

META = META_FILE
#: subfolder of a bundle holding other models of the same root cause.
VARIANTS = "variants"
#: files without which a bundle cannot be replayed, localized, reduced or reported.
REQUIRED_FILES = ("model.onnx", "inputs.npz")
#: folder names of bundles (``<symptom>-<8 hex digits>``): such a folder without a meta.json
#: is a damaged bundle, any other folder (``documented/``, a user's own) is not a bundle.
BUNDLE_NAME = re.compile(r"[a-z]+(?:-[a-z]+)*-[0-9a-f]{8}")
MAX_DAMAGED_NAMED = 3  # damaged bundles named in the one-line warning
#: a change to a bundle's meta: modifies it in place (returning None) or returns a new one.
Change = Callable[[BundleMeta], "BundleMeta | None"]
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
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _blame(exc, path)
        raise


def write_folder(path: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (name relative to the folder -> bytes; ``variants/1.onnx`` makes its
    subfolder) as the folder ``path``, atomically: into a temporary folder beside it, named
    ``.<name>.*`` (listings skip such names), then renamed into place, replacing a folder
    already there. A killed process leaves the whole folder or none of it.

    Raises:
        OSError: a file cannot be written (e.g. the disk is full; the temporary folder is
            removed).
    """
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        tmp.chmod(0o777 & ~_umask())
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        if path.exists():
            shutil.rmtree(path)
        os.rename(tmp, path)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _blame(exc, path)
        raise


def dump_json(data: Any) -> bytes:
    """Indented, key-ordered JSON bytes with a final newline."""
    return (json.dumps(data, indent=2, sort_keys=False, default=str) + "\n").encode()


class DamagedBundleError(ValueError):
    """A bundle whose meta.json cannot be used (missing, unreadable, not a valid meta, naming
    another bundle) or that lacks a required file; the message is the reason, without a
    path."""


class DamagedBundle(NamedTuple):
    """A bundle that listings skip: its id (folder name) and why, e.g.
    ``meta.json: not JSON (...)`` or ``missing model.onnx``."""

    id: str
    reason: str


def damage_note(damaged: list[DamagedBundle]) -> str:
    """One line for a person: how many bundles were skipped, the first few with their
    reasons; empty when ``damaged`` is."""
    if not damaged:
        return ""
    named = "; ".join(f"{d.id} ({d.reason})" for d in damaged[:MAX_DAMAGED_NAMED])
    more = f"; +{len(damaged) - MAX_DAMAGED_NAMED} more" if len(damaged) > MAX_DAMAGED_NAMED \
        else ""
    return f"skipped {len(damaged)} damaged bundle(s): {named}{more}"


class BundleStore:
    """Bundles under ``root`` (created on first use).

    Raises:
        OSError: the folder cannot be created or written.
    """

    def __init__(self, root: str | os.PathLike[str], batch_hits: bool = False) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._batch = batch_hits
        self._pending: dict[tuple[str, str | None], tuple[int, str]] = {}
        self._changed: set[str] = set()  # meta.json rewritten since the last flush
        self._pending_lock = threading.Lock()
        self._index: list[BundleMeta] = []
        self._index_key: tuple[int, int] | None = None
        self._damaged: dict[str, str] = {}
        self._versions: dict[str, str | None] = {}

    def index(self) -> list[BundleMeta]:
        """The meta of every readable bundle (:meth:`read_all`; damaged ones skipped and
        counted), cached until a bundle appears or :data:`INDEX_SECONDS` pass."""
        key = (self.root.stat().st_mtime_ns, int(time.monotonic() // INDEX_SECONDS))
        if key != self._index_key:
            self._index, _ = self.read_all()
            self._index_key = key
        return self._index

    def read_all(self) -> tuple[list[BundleMeta], list[DamagedBundle]]:
        """Every readable bundle's meta, in id order, and the damaged bundles with their
        reasons (also kept for :meth:`damaged`). Never raises for a bad bundle."""
        metas, damaged = [], {}
        for bid in self._candidates():
            try:
                metas.append(self.read(bid))
            except DamagedBundleError as exc:
                damaged[bid] = str(exc)
        self._damaged = damaged
        return metas, self.damaged()

    def damaged(self) -> list[DamagedBundle]:
        """The damaged bundles the latest :meth:`read_all` (or :meth:`index`) found, plus
        those a later update could not read, in id order."""
        return [DamagedBundle(bid, why) for bid, why in sorted(self._damaged.items())]

    def read(self, bundle_id: str) -> BundleMeta:
        """The meta of a bundle that is complete: meta.json valid and naming this bundle,
        model.onnx and inputs.npz present.

        Raises:
            DamagedBundleError: the bundle is damaged; the message is the reason.
        """
        meta = self._own_meta(bundle_id)
        missing = [name for name in REQUIRED_FILES
                   if not (self.path(bundle_id) / name).is_file()]
        if missing:
            raise DamagedBundleError(f"missing {', '.join(missing)}")
        return meta

    def _own_meta(self, bundle_id: str) -> BundleMeta:
        """The meta.json of a bundle, checked to name that bundle.

        Raises:
            DamagedBundleError: it is missing, unreadable, invalid or names another bundle.
        """
        try:
            meta = self.meta(bundle_id)
        except (OSError, MetaError) as exc:
            raise DamagedBundleError(meta_problem(exc)) from None
        if meta.id != bundle_id:
            raise DamagedBundleError(f"{META} names another bundle ({meta.id})")
        return meta

    def _candidates(self) -> list[str]:
        """Folders that hold or should hold a bundle: those with a meta.json and those
        named like a bundle, sorted."""
        names = {p.parent.name for p in self.root.glob(f"*/{META}")}
        names.update(p.name for p in self.root.iterdir()
                     if p.is_dir() and BUNDLE_NAME.fullmatch(p.name))
        return sorted(n for n in names if not n.startswith("."))

    def add_hit(self, bundle_id: str, when: str | None = None,
                symptom: str | None = None) -> None:
        """Count one more sighting of a bundle's bug (``when``: ISO time, default now),
        shown as ``symptom`` (None: the bundle's own); written at once, or at the next
        :meth:`flush_hits` for a batching store."""
        from fuzzer.store.versions import utc_now

        when = when or utc_now()
        if not self._batch:
            with contextlib.suppress(DamagedBundleError):  # counted, the hit dropped
                self.update(bundle_id, lambda meta: self._sighted(meta, 1, when, symptom))
                with self._pending_lock:
                    self._changed.add(bundle_id)
            return
        with self._pending_lock:
            count, _ = self._pending.get((bundle_id, symptom), (0, when))
            self._pending[(bundle_id, symptom)] = (count + 1, when)

    def flush_hits(self) -> list[str]:
        """Write the batched hits into their bundles' meta.json (one write per bundle);
        returns the ids of the bundles whose meta.json changed since the last flush (these
        hits, and the hits and variants written at once), sorted."""
        with self._pending_lock:
            pending, self._pending = self._pending, {}
            changed, self._changed = self._changed, set()
        if not pending:
            return sorted(changed)
        by_bundle: dict[str, list[tuple[str | None, int, str]]] = {}
        for (bundle_id, symptom), (count, when) in pending.items():
            by_bundle.setdefault(bundle_id, []).append((symptom, count, when))

        def change(meta: BundleMeta, hits: list[tuple[str | None, int, str]]) -> None:
            for symptom, count, when in hits:
                self._sighted(meta, count, when, symptom)

        with self.locked():
            for bundle_id, hits in by_bundle.items():
                if not self.exists(bundle_id):
                    continue
                with contextlib.suppress(DamagedBundleError):  # counted, the hits dropped
                    self._update_locked(bundle_id, lambda meta, h=hits: change(meta, h))
                    changed.add(bundle_id)
        return sorted(changed)

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

    def meta(self, bundle_id: str) -> BundleMeta:
        """The meta.json of a bundle (files beside it unchecked; see :meth:`read`).

        Raises:
            OSError: meta.json is missing or unreadable.
            MetaError: it is not a valid meta (a ValueError; the message names the file).
        """
        return read_meta(self.path(bundle_id) / META)

    def ids(self) -> list[str]:
        """Ids of every complete bundle, sorted."""
        return sorted(p.parent.name for p in self.root.glob(f"*/{META}")
                      if not p.parent.name.startswith("."))

    def create(self, bundle_id: str, files: dict[str, bytes],
               on_exists: Change | None = None) -> bool:
        """Write a new bundle atomically; return True if created.

        If the bundle appeared meanwhile (another worker or campaign found the same bug),
        nothing is written and ``on_exists`` updates its meta instead (skipped, and the
        bundle counted as damaged, where that meta is unreadable); that update is a sighting
        of the bundle's bug now (:meth:`_as_sighting`).
        """
        with self.locked():
            if self.exists(bundle_id):
                if on_exists is not None:
                    with contextlib.suppress(DamagedBundleError):
                        self._update_locked(bundle_id, self._as_sighting(on_exists))
                return False
            write_folder(self.path(bundle_id), files)  # replaces a leftover without meta
            return True

    def update(self, bundle_id: str, change: Change) -> BundleMeta:
        """Read a bundle's meta under the lock, pass it to ``change`` (which modifies it in
        place or returns a replacement), write :meth:`BundleMeta.to_json` back atomically
        (a schema-1 file becomes schema 2, unknown keys kept) and return it.

        Raises:
            DamagedBundleError: meta.json is missing, unreadable, not a valid meta or names
                another bundle; nothing is written and the bundle is counted as damaged.
            OSError: the new meta.json cannot be written (e.g. the disk is full).
        """
        with self.locked():
            return self._update_locked(bundle_id, change)

    def _update_locked(self, bundle_id: str, change: Change) -> BundleMeta:
        try:
            meta = self._own_meta(bundle_id)
        except DamagedBundleError as exc:
            self._damaged[bundle_id] = str(exc)
            raise
        meta = change(meta) or meta
        write_atomic(self.path(bundle_id) / META, dump_json(meta.to_json()))
        return meta

    def _sighted(self, meta: BundleMeta, count: int, when: str, symptom: str | None) -> None:
        """Count ``count`` sightings of the bundle's bug at ``when`` (ISO UTC) as ``symptom``
        (:meth:`BundleMeta.add_hits`) and flag a regression (:meth:`_flag_regression`)."""
        meta.add_hits(count, when, symptom)
        self._flag_regression(meta, when)

    def _as_sighting(self, change: Change) -> Change:
        """``change`` followed by :meth:`_flag_regression` at the time it runs."""
        from fuzzer.store.versions import utc_now

        def sighting(meta: BundleMeta) -> BundleMeta:
            meta = change(meta) or meta
            self._flag_regression(meta, utc_now())
            return meta

        return sighting

    def _flag_regression(self, meta: BundleMeta, when: str) -> None:
        """Make the state of a bundle marked fixed and seen at ``when`` ``regressed``, with
        the installed version of its target (the one a campaign writing here runs;
        :meth:`fuzzer.store.bundle_state.BundleState.sighted` says when that is none)."""
        if meta.state is None or meta.state.state != FIXED:
            return
        regressed = meta.state.sighted(when, self._target_version(meta.target.name))
        if regressed is not None:
            meta.state = regressed

    def _target_version(self, name: str) -> str | None:
        """The installed version of target ``name``, asked once per store; None where the
        target is unknown or not installed here."""
        if name not in self._versions:
            from fuzzer.targets import get_target

            try:
                self._versions[name] = get_target(name).version()
            except (KeyError, ImportError):
                self._versions[name] = None
        return self._versions[name]

    def add_variant(self, bundle_id: str, files: dict[str, bytes], limit: int,
                    when: str, key: str | None = None, symptom: str | None = None) -> bool:
        """Record one more sighting of a bundle's root cause (``hits`` + 1, ``last_seen``
        = ``when``) and, while it holds fewer than ``limit`` variants, keep ``files`` (suffix
        -> bytes, e.g. ``{".onnx": model, ".npz": feeds}``) as ``variants/<n><suffix>``,
        listed in meta ``variants``; ``key``, the preliminary root-cause key that led here,
        is kept too (:meth:`fuzzer.store.meta.BundleMeta.add_preliminary_key`); the sighting
        counts as ``symptom`` (None: the bundle's own). Returns whether a variant was kept.

        Raises:
            DamagedBundleError: the bundle's meta is unreadable (nothing is written).
        """
        kept = [False]

        def change(meta: BundleMeta) -> None:
            self._sighted(meta, 1, when, symptom)
            if key is not None:
                meta.add_preliminary_key(key)
            if len(meta.variants) >= limit:
                return
            folder = self.path(bundle_id) / VARIANTS
            folder.mkdir(exist_ok=True)
            number = next_variant_number(folder, meta.variants)
            for suffix, data in files.items():
                write_atomic(folder / f"{number}{suffix}", data)
            meta.variants.append(f"{VARIANTS}/{number}{next(iter(files))}")
            kept[0] = True

        self.update(bundle_id, change)
        with self._pending_lock:
            self._changed.add(bundle_id)
        return kept[0]

    def promote(self, bundle_id: str, files: dict[str, bytes], when: str,
                key: str | None = None) -> BundleMeta:
        """Make ``files`` (a whole bundle: model.onnx, inputs.npz, ..., meta.json) the
        bundle's own and keep what it held as a variant: its model, inputs, original and
        meta.json go to ``variants/<n>.*`` first (never dropped, whatever the variant cap),
        then each new file replaces its namesake atomically, meta.json last. The new meta
        keeps the bundle's history: hits and symptoms summed with this sighting's (counted
        in ``files``' meta.json), the first and last seen (``when``: ISO time of this one),
        variants, aliases (its old signature among them), preliminary keys (``key`` too),
        the maintainer's state (flagged regressed where it was fixed) and the fields the new
        meta does not set. Returns the new meta.

        Raises:
            DamagedBundleError: the bundle's meta is unreadable (nothing is written).
            OSError: a file cannot be written (the files written so far stay; the old model
                is among the variants by then).
        """
        with self.locked():
            try:
                old = self._own_meta(bundle_id)
            except DamagedBundleError as exc:
                self._damaged[bundle_id] = str(exc)
                raise
            folder = self.path(bundle_id)
            keep_as_variant(folder, folder, old)
            new = parse_meta(files[META])
            for name, value in old.extra.items():  # what this record does not set itself
                new.extra.setdefault(name, value)
            new.hits = old.hits + new.hits
            for name, hits in old.symptoms.items():
                new.symptoms[name] = new.symptoms.get(name, 0) + hits
            new.first_seen = min(old.first_seen, new.first_seen)
            new.last_seen = max(old.last_seen, when)
            new.variants = list(old.variants)
            new.state = new.state or old.state
            self._flag_regression(new, when)
            aliases = [old.signature, *(old.aliases or []), *(new.aliases or [])]
            new.aliases = [a for a in dict.fromkeys(aliases) if a != new.signature] or None
            for earlier in [*(old.extra.get(PRELIMINARY_KEYS) or []), key]:
                if earlier:
                    new.add_preliminary_key(earlier)
            for name, data in files.items():
                if name != META:
                    write_atomic(folder / name, data)
            write_atomic(folder / META, dump_json(new.to_json()))
        with self._pending_lock:
            self._changed.add(bundle_id)
        return new

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


#: bundle files a bundle leaves in another's ``variants/`` when it becomes one of its
#: variants (file -> suffix); the first is the one listed in meta ``variants``.
VARIANT_FILES = {"model.onnx": ".onnx", "inputs.npz": ".npz",
                 "original.onnx": ".original.onnx", META: ".meta.json"}


def keep_as_variant(source: Path, folder: Path, meta: BundleMeta) -> str:
    """Copy the files of the bundle at ``source`` (:data:`VARIANT_FILES`) into
    ``folder/variants/`` as ``<n><suffix>`` (``source`` may be ``folder`` itself) and list
    its model in ``meta.variants``; return that variant name. Every file is written
    atomically; ``meta`` is not written.

    Raises:
        OSError: a file cannot be read or written.
    """
    variants = folder / VARIANTS
    variants.mkdir(exist_ok=True)
    number = next_variant_number(variants, meta.variants)
    for name, suffix in VARIANT_FILES.items():
        if (source / name).is_file():
            write_atomic(variants / f"{number}{suffix}", (source / name).read_bytes())
    own = f"{VARIANTS}/{number}{VARIANT_FILES['model.onnx']}"
    meta.variants.append(own)
    return own


def next_variant_number(folder: Path, listed: list[str]) -> int:
    """The number of a new variant in a bundle's ``variants/`` ``folder``: one more than any
    number a file there (``<n>.onnx``, ``<n>.npz``, ...) or a ``listed`` variant uses, so no
    file is overwritten, not even one an interrupted write left unlisted."""
    names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    heads = (Path(name).name.split(".", 1)[0] for name in names + list(listed))
    return max((int(h) for h in heads if h.isdigit()), default=0) + 1


def _blame(exc: BaseException, path: Path) -> None:
    """Name ``path`` in an OSError that names no file (a failed ``write``, e.g. ENOSPC)."""
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(path)


#: errno values of a write that failed for lack of space: a full disk, an exceeded quota.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError for a full disk or an exceeded quota."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL
