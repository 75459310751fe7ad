"""The driver owns ``crashes/``: a finding handled on a cluster node writes nothing there.
It runs :func:`fuzzer.handling.record.handle_finding` against a :class:`RecordingStore`, which
answers from a snapshot of the driver's bundles and records every write as a :class:`StoreOp`;
the driver applies the operations to the real :class:`fuzzer.store.folder.BundleStore`
(:func:`apply`), and only then counts the finding as recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from fuzzer.handling.bundle import hit
from fuzzer.handling.outcome import Handled
from fuzzer.store.folder import BundleStore


@dataclass
class StoreOp:
    """One write a finding asks of the bundle store.

    Attributes:
        kind: ``"create"`` (a new bundle of ``files``), ``"hit"`` (one more sighting) or
            ``"variant"`` (one more sighting, keeping ``files`` while fewer than ``limit``
            variants are kept).
        bundle_id: the bundle.
        files: file name (or variant suffix) -> bytes.
        limit: the variant cap.
        when: ISO time of the sighting (variants).
        key: the preliminary root-cause key that led to the bundle (variants; None: none).
        symptom: the symptom the sighting showed (hits and variants; None: the bundle's
            own).
    """

    kind: str
    bundle_id: str
    files: dict[str, bytes] = field(default_factory=dict)
    limit: int = 0
    when: str = ""
    key: str | None = None
    symptom: str | None = None


class RecordingStore:
    """The part of :class:`fuzzer.store.folder.BundleStore` that finding handling uses,
    answering from ``known`` (bundle id -> its root-cause key, None where it has none) and
    recording writes in :attr:`ops` instead of making them."""

    def __init__(self, known: dict[str, str | None]) -> None:
        self.known = dict(known)
        self.ops: list[StoreOp] = []

    def exists(self, bundle_id: str) -> bool:
        """Whether the driver had the bundle (or this finding created it)."""
        return bundle_id in self.known

    def index(self) -> list[Any]:
        """Id and root-cause key of every known bundle (what root-cause lookup reads)."""
        return [SimpleNamespace(id=bid, root_cause=key, extra={})
                for bid, key in self.known.items()]

    def meta(self, bundle_id: str) -> Any:
        """A handler sees no bundle's meta.json (the driver keeps the folder), so it never
        makes a plainer symptom's model a bundle's own.

        Raises:
            FileNotFoundError: always.
        """
        raise FileNotFoundError(f"{bundle_id}: meta.json is the driver's")

    def add_hit(self, bundle_id: str, when: str | None = None,
                symptom: str | None = None) -> None:
        """Record one more sighting (shown as ``symptom``; None: the bundle's own)."""
        self.ops.append(StoreOp("hit", bundle_id, symptom=symptom))

    def add_variant(self, bundle_id: str, files: dict[str, bytes], limit: int,
                    when: str, key: str | None = None, symptom: str | None = None) -> bool:
        """Record one more sighting with a variant (and the preliminary root-cause key that
        led to it, and the symptom it showed); True (the driver decides on the cap)."""
        self.ops.append(StoreOp("variant", bundle_id, dict(files), limit, when, key, symptom))
        return True

    def create(self, bundle_id: str, files: dict[str, bytes], on_exists: Any = None) -> bool:
        """Record a new bundle (a hit where the id is known); True if recorded as new."""
        if bundle_id in self.known:
            self.add_hit(bundle_id)
            return False
        self.known[bundle_id] = root_cause_of(files)
        self.ops.append(StoreOp("create", bundle_id, dict(files)))
        return True


def root_cause_of(files: dict[str, bytes]) -> str | None:
    """The root-cause key in a new bundle's meta.json (None where it has none)."""
    try:
        return json.loads(files["meta.json"]).get("root_cause")
    except (KeyError, ValueError):
        return None


def known_bundles(store: BundleStore) -> dict[str, str | None]:
    """Bundle id -> root-cause key of every readable bundle in ``store``."""
    return {meta.id: meta.root_cause for meta in store.index()}


def apply(store: BundleStore, handled: Handled, ops: list[StoreOp]) -> Handled:
    """Make ``ops`` in ``store`` and return what became of the finding: a bundle that another
    finding created meanwhile turns ``new`` into ``hit``.

    Raises:
        OSError: a write failed (e.g. the disk is full).
    """
    for op in ops:
        if op.kind == "create":
            if not store.create(op.bundle_id, op.files, on_exists=hit):
                handled = Handled("hit", op.bundle_id, handled.name, handled.signature)
        elif op.kind == "variant":
            store.add_variant(op.bundle_id, op.files, op.limit, op.when, op.key, op.symptom)
        elif store.exists(op.bundle_id):
            store.add_hit(op.bundle_id, symptom=op.symptom)
    return handled
