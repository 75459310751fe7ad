"""Triage of a campaign folder: one row per bundle with its status relative to the installed
versions, and whether it is new since the previous triage.

Status, decided by the first rule of :data:`STATUS_RULES` that applies:

``fixed``       a replay with the installed versions no longer shows the symptom
``changed``     a replay with the installed versions shows another symptom
``unusable``    a replay with the installed versions could not run the original model
``untestable``  the installed target lacks a pass of the bundle's configuration
``fails``       a replay with the installed versions still shows it, or it was found with them
``unverified``  found with other versions and not replayed with these (run ``optfuzz replay``)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fuzzer.store.folder import BundleStore, DamagedBundle
from fuzzer.store.meta import BundleMeta
from fuzzer.triage.versions import found_versions, installed_versions, same_versions


@dataclass
class TriageRow:
    """One bundle as triage shows it.

    Attributes:
        passes: responsible passes (localized) or the configured pass list.
        localized: whether ``passes`` came from localization.
        hits: times the bug was seen; ``new_hits`` of them since the previous triage.
        nodes_original, nodes_minimized: node counts of the main graph before/after reduction.
        status: one of ``fixed``, ``changed``, ``unusable``, ``untestable``, ``fails``,
            ``unverified``.
        new: not shown by any earlier triage of this folder.
        now_symptom: for ``changed``, the symptom the replay observed.
    """

    id: str
    target: str
    passes: list[str]
    localized: bool
    symptom: str
    message: str
    hits: int
    new_hits: int
    first_seen: str
    last_seen: str
    nodes_original: int | None
    nodes_minimized: int | None
    status: str
    new: bool
    now_symptom: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON-able dict (``optfuzz triage --json``)."""
        return asdict(self)


def _current_replay(meta: BundleMeta, installed: dict[str, str]) -> dict[str, Any] | None:
    replay = meta.replay
    if replay and same_versions(replay.get("versions", {}), installed):
        return replay
    return None


def _replayed(status: str) -> Callable[[BundleMeta, dict[str, str]], bool]:
    def rule(meta: BundleMeta, installed: dict[str, str]) -> bool:
        replay = _current_replay(meta, installed)
        return replay is not None and replay.get("status") == status
    return rule


def _fails(meta: BundleMeta, installed: dict[str, str]) -> bool:
    return _replayed("fails")(meta, installed) or (
        _current_replay(meta, installed) is None
        and same_versions(found_versions(meta), installed))


#: (status, predicate over (meta, installed versions)), first match wins.
STATUS_RULES: tuple[tuple[str, Callable[[BundleMeta, dict[str, str]], bool]], ...] = (
    ("fixed", _replayed("fixed")),
    ("changed", _replayed("changed")),
    ("unusable", _replayed("unusable")),
    ("untestable", _replayed("untestable")),
    ("fails", _fails),
    ("unverified", lambda meta, installed: True),
)


def bundle_status(meta: BundleMeta, installed: dict[str, str]) -> str:
    """The status of a bundle under the ``installed`` versions
    (:func:`fuzzer.triage.versions.installed_versions`); see the module docstring."""
    return next(status for status, rule in STATUS_RULES if rule(meta, installed))


def make_row(meta: BundleMeta, installed: dict[str, str],
             seen: dict[str, Any]) -> TriageRow:
    """The triage row of one bundle; ``seen`` is the ``seen`` map of the previous triage."""
    status = bundle_status(meta, installed)
    before = seen.get(meta.id)
    hits = meta.hits
    replay = meta.replay or {}
    return TriageRow(
        id=meta.id, target=meta.target.name, passes=meta.passes_shown(),
        localized=meta.localized, symptom=meta.symptom, message=meta.message,
        hits=hits, new_hits=hits - int(before["hits"]) if before else hits,
        first_seen=meta.first_seen, last_seen=meta.last_seen,
        nodes_original=meta.nodes.original, nodes_minimized=meta.nodes.minimized,
        status=status, new=before is None,
        now_symptom=replay.get("observed") if status == "changed" else None)


@dataclass
class TriageFilter:
    """Which bundles to show: ``symptom`` exact, ``passes`` containing ``pass_name``."""

    symptom: str | None = None
    pass_name: str | None = None

    def accepts(self, meta: BundleMeta) -> bool:
        """Whether the bundle passes the filter."""
        if self.symptom and meta.symptom != self.symptom:
            return False
        if self.pass_name:
            return meta.involves(self.pass_name)
        return True


def triage_rows(root: Path, seen: dict[str, Any], keep: TriageFilter) -> tuple[
        list[TriageRow], list[DamagedBundle]]:
    """Rows of the bundles under ``root`` that ``keep`` accepts, sorted by target, passes,
    symptom and descending hits; plus the damaged bundles (skipped) with their reasons.

    Raises:
        KeyError: a bundle names a target this installation does not know.
    """
    metas, damaged = BundleStore(root).read_all()
    installed: dict[str, dict[str, str]] = {}
    rows = []
    for meta in metas:
        if not keep.accepts(meta):
            continue
        name = meta.target.name
        if name not in installed:
            installed[name] = installed_versions(name)
        rows.append(make_row(meta, installed[name], seen))
    rows.sort(key=lambda r: (r.target, ",".join(r.passes), r.symptom, -r.hits, r.id))
    return rows, damaged


def rows_json(rows: list[TriageRow]) -> str:
    """``optfuzz triage --json`` output: a JSON list of row dicts."""
    return json.dumps([r.to_json() for r in rows], indent=2)
