"""Triage of a campaign folder: one row per bundle (one root cause) with its status relative
to the installed versions, its maintainer's state (``optfuzz mark``) and whether it is new
since the previous triage, in the order a maintainer reads them: by state
(:data:`STATE_ORDER`: regressed, then open, then reported, ...), then new first, then by
severity class (:data:`oracles.base.SEVERITY_CLASSES`), then by hits, most first. Bundles
marked duplicate or invalid are hidden unless asked for (:func:`hide_dismissed`).

Status, decided by the first rule of :data:`STATUS_RULES` that applies:

``fixed``         a replay with the installed versions no longer shows the symptom
``changed``       a replay with the installed versions shows another symptom
``unusable``      a replay with the installed versions could not run the original model
``untestable``    the installed target lacks a pass of the bundle's configuration
``fails``         a replay with the installed versions still shows it
``not-replayed``  found with the installed versions and never replayed with them since
                  (the campaign's own check, repro.py in a fresh process, is no replay)
``unverified``    found with other versions and not replayed with these (run ``optfuzz replay``)

A bundle whose model.onnx has as many nodes as original.onnx (more than one) was never
reduced (:attr:`TriageRow.unreduced`: a hang, which a campaign does not reduce, or a campaign
with ``--reduce-seconds 0``); :attr:`TriageRow.reduce_command` is the command that reduces it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fuzzer.modelio.graphs import node_count
from fuzzer.store.bundle_state import (
    DISMISSED,
    DUPLICATE,
    FIXED,
    INVALID,
    OPEN,
    REGRESSED,
    REPORTED,
    state_name,
)
from fuzzer.store.folder import BundleStore, DamagedBundle
from fuzzer.store.meta import BundleMeta
from fuzzer.triage.marks import state_text
from fuzzer.triage.versions import found_versions, installed_versions, same_versions
from oracles.base import SEVERITY_CLASSES

#: maintainer's states (:mod:`fuzzer.store.bundle_state`) in reading order: regressions
#: first, then what nobody has reported yet.
STATE_ORDER = (REGRESSED, OPEN, REPORTED, FIXED, DUPLICATE, INVALID)
#: the kind field of a root-cause key whose core is a crash site
#: (:func:`fuzzer.findings.rootcause.root_cause_key`).
CRASH_KIND = "crash"


@dataclass
class TriageRow:
    """One bundle as triage shows it.

    Attributes:
        passes: responsible passes (localized) or the configured pass list.
        localized: whether ``passes`` came from localization.
        hits: times the bug was seen; ``new_hits`` of them since the previous triage.
        nodes_original, nodes_minimized: node counts before/after reduction, subgraphs
            included (counted in original.onnx and model.onnx; meta.json's where a file
            is missing or unreadable).
        status: one of ``fixed``, ``changed``, ``unusable``, ``untestable``, ``fails``,
            ``not-replayed``, ``unverified``.
        new: not shown by any earlier triage of this folder.
        now_symptom: for ``changed``, the symptom the replay observed.
        breaking_pass, enabling_passes, root_cause, trigger: meta.json's schema-2 fields
            (None where the bundle predates them).
        variants: number of other models of the same root cause kept in ``variants/``.
        severity_class: the symptom's class (:data:`oracles.base.SEVERITY_CLASSES`),
            ``unknown`` for a symptom no oracle registers.
        state: the maintainer's state (:data:`STATE_ORDER`; ``open`` where none was set).
        state_text: the state in a few words with its argument, e.g. ``reported <url>``
            (:func:`fuzzer.triage.marks.state_text`).
        site: the crash site the bundle is keyed by (exception class, assertion text,
            ``file:line``, the model's names and numbers replaced) for a crash; None for
            other faults and for bundles without a root-cause key.
        unreduced: model.onnx is the model as found (see the module docstring).
        reduce_command: the shell command that reduces an unreduced bundle; None where it
            is reduced or ``optfuzz reduce`` cannot reduce its symptom (``slow``: the
            campaign scales such models down instead).
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
    breaking_pass: str | None = None
    enabling_passes: list[str] | None = None
    root_cause: str | None = None
    variants: int = 0
    trigger: str | None = None
    severity_class: str = "unknown"
    state: str = OPEN
    state_text: str = OPEN
    site: str | None = None
    unreduced: bool = False
    reduce_command: str | None = None

    @property
    def merged(self) -> int:
        """Sightings merged into this bundle: its variants and its hits beyond the first."""
        return self.variants + max(self.hits - 1, 0)

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


def _not_replayed(meta: BundleMeta, installed: dict[str, str]) -> bool:
    return _current_replay(meta, installed) is None and \
        same_versions(found_versions(meta), installed)


#: (status, predicate over (meta, installed versions)), first match wins.
STATUS_RULES: tuple[tuple[str, Callable[[BundleMeta, dict[str, str]], bool]], ...] = (
    ("fixed", _replayed("fixed")),
    ("changed", _replayed("changed")),
    ("unusable", _replayed("unusable")),
    ("untestable", _replayed("untestable")),
    ("fails", _replayed("fails")),
    ("not-replayed", _not_replayed),
    ("unverified", lambda meta, installed: True),
)


def bundle_status(meta: BundleMeta, installed: dict[str, str]) -> str:
    """The status of a bundle under the ``installed`` versions
    (:func:`fuzzer.triage.versions.installed_versions`); see the module docstring."""
    return next(status for status, rule in STATUS_RULES if rule(meta, installed))


def severity_class(symptom: str) -> str:
    """The severity class of ``symptom`` (its oracle record), ``unknown`` where no oracle
    registers it."""
    from oracles import symptom as symptom_record

    try:
        return symptom_record(symptom).severity_class
    except KeyError:
        return "unknown"


def severity_rank(name: str) -> int:
    """Position of severity class ``name`` in :data:`oracles.base.SEVERITY_CLASSES` (unknown
    ones last)."""
    return SEVERITY_CLASSES.index(name) if name in SEVERITY_CLASSES else len(SEVERITY_CLASSES)


def model_nodes(path: Path, recorded: int) -> int:
    """Nodes of the model file at ``path``, subgraphs included; ``recorded`` where the file
    is missing or not a model."""
    from google.protobuf.message import DecodeError

    try:
        return node_count(path.read_bytes())
    except (OSError, DecodeError, ValueError):
        return recorded


def crash_site(root_cause: str | None) -> str | None:
    """The crash site of a root-cause key ``target|culprit|crash|<site>``; None for a key of
    another kind of fault or no key."""
    parts = (root_cause or "").split("|", 3)
    return parts[3] if len(parts) == 4 and parts[2] == CRASH_KIND else None


def is_unreduced(nodes_original: int | None, nodes_minimized: int | None,
                 minimal: bool = False) -> bool:
    """Whether a bundle's model is the model as found: as many nodes (or more) as the
    original, which has more than one (a one-node model is as small as a model gets), and
    no reduction showed it ``minimal`` (``meta["nodes"]["minimal"]``)."""
    if nodes_original is None or nodes_minimized is None or minimal:
        return False
    return nodes_original > 1 and nodes_minimized >= nodes_original


def reduce_command(folder: Path, symptom_name: str) -> str | None:
    """``optfuzz reduce FOLDER`` with the options ``symptom_name`` needs
    (its record's :attr:`~oracles.base.Symptom.reduce_options`); None for a symptom
    ``optfuzz reduce`` does not reduce."""
    from oracles import symptom as symptom_record

    try:
        record = symptom_record(symptom_name)
    except KeyError:
        return None
    if not record.reducible and not record.reduce_options:
        return None
    return shlex.join(["optfuzz", "reduce", str(folder), *record.reduce_options])


def make_row(meta: BundleMeta, installed: dict[str, str], seen: dict[str, Any],
             folder: Path | None = None) -> TriageRow:
    """The triage row of one bundle; ``seen`` is the ``seen`` map of the previous triage;
    ``folder`` (the bundle's) supplies the node counts of its model files."""
    status = bundle_status(meta, installed)
    before = seen.get(meta.id)
    hits = meta.hits
    replay = meta.replay or {}
    nodes = (meta.nodes.original, meta.nodes.minimized)
    if folder is not None:
        nodes = (model_nodes(folder / "original.onnx", nodes[0]),
                 model_nodes(folder / "model.onnx", nodes[1]))
    unreduced = is_unreduced(*nodes, meta.nodes.minimal)
    return TriageRow(
        id=meta.id, target=meta.target.name, passes=meta.passes_shown(),
        localized=meta.localized, symptom=meta.symptom, message=meta.message,
        hits=hits, new_hits=hits - int(before["hits"]) if before else hits,
        first_seen=meta.first_seen, last_seen=meta.last_seen,
        nodes_original=nodes[0], nodes_minimized=nodes[1],
        status=status, new=before is None,
        now_symptom=replay.get("observed") if status == "changed" else None,
        breaking_pass=meta.breaking_pass, enabling_passes=meta.enabling_passes,
        root_cause=meta.root_cause, variants=len(meta.variants), trigger=meta.trigger,
        severity_class=severity_class(meta.symptom), state=state_name(meta.state),
        state_text=state_text(meta.state), site=crash_site(meta.root_cause),
        unreduced=unreduced,
        reduce_command=reduce_command(folder, meta.symptom) if unreduced and folder else None)


def reading_order(row: TriageRow) -> tuple[Any, ...]:
    """Sort key of triage: state (:data:`STATE_ORDER`), then new first, then severity class,
    then hits (most first)."""
    return (STATE_ORDER.index(row.state), not row.new, severity_rank(row.severity_class),
            -row.hits, row.id)


def hide_dismissed(rows: list[TriageRow], everything: bool = False) -> tuple[
        list[TriageRow], int]:
    """``rows`` without those marked duplicate or invalid (all of them where
    ``everything``), and how many were left out."""
    shown = [row for row in rows if everything or row.state not in DISMISSED]
    return shown, len(rows) - len(shown)


def merged_count(rows: list[TriageRow]) -> int:
    """Sightings merged into the bundles of ``rows`` (:attr:`TriageRow.merged`)."""
    return sum(row.merged for row in rows)


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
    """Rows of the bundles under ``root`` that ``keep`` accepts, in :func:`reading_order`;
    plus the damaged bundles (skipped) with their reasons.

    Raises:
        KeyError: a bundle names a target this installation does not know.
    """
    store = BundleStore(root)
    metas, damaged = store.read_all()
    installed: dict[str, dict[str, str]] = {}
    rows = []
    for meta in metas:
        if not keep.accepts(meta):
            continue
        name = meta.target.name
        if name not in installed:
            installed[name] = installed_versions(name)
        rows.append(make_row(meta, installed[name], seen, store.path(meta.id)))
    rows.sort(key=reading_order)
    return rows, damaged


def rows_json(rows: list[TriageRow]) -> str:
    """``optfuzz triage --json`` output: a JSON list of row dicts."""
    return json.dumps([r.to_json() for r in rows], indent=2)
