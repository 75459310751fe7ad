"""The state of a bundle as its maintainer keeps it, after syzbot's bug states: meta.json's
``state`` object (:class:`BundleState`).

States (:data:`STATES`) and the field that carries each one's argument:

================  ================  =======================================================
state             field             meaning
================  ================  =======================================================
``open``          (none)            nobody has said anything yet (also: no record at all)
``reported``      ``url``           reported upstream at that URL
``duplicate``     ``duplicate_of``  the same bug as that other bundle of the folder
``invalid``       ``reason``        no bug, for that reason
``fixed``         ``version``       fixed in that version of the target
``regressed``     ``version``       marked fixed (in ``fixed``), then seen again by a
                                    campaign running that version of the target (null:
                                    unknown)
================  ================  =======================================================

Layout::

    {"state": "reported", "url": "https://github.com/onnx/optimizer/issues/1",
     "time": "2026-11-21T10:00:00Z", "by": "optfuzz mark",
     "history": [{"state": "fixed", "version": "0.3.19", "time": ..., "by": ...}]}

``time`` is ISO 8601 UTC; ``history`` holds the earlier records, oldest first, each without
its own history. Keys this code does not know are kept verbatim.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

OPEN, REPORTED, DUPLICATE, INVALID, FIXED, REGRESSED = (
    "open", "reported", "duplicate", "invalid", "fixed", "regressed")
#: state -> the JSON key of its argument (None: it takes none).
ARGUMENT: dict[str, str | None] = {
    OPEN: None, REPORTED: "url", DUPLICATE: "duplicate_of", INVALID: "reason",
    FIXED: "version", REGRESSED: "version"}
STATES = tuple(ARGUMENT)
#: states that say the bundle is no bug of its own (``optfuzz triage`` hides them).
DISMISSED = (DUPLICATE, INVALID)
#: ``by`` of a regression: a campaign's sighting of the bundle.
CAMPAIGN = "campaign"
_OWN_KEYS = frozenset({"state", "time", "by", "history", "fixed", "url", "duplicate_of",
                       "reason", "version"})


@dataclass(kw_only=True)
class BundleState:
    """One state record of a bundle (see the module docstring).

    Attributes:
        state: one of :data:`STATES`.
        value: the state's argument (:data:`ARGUMENT`): URL, bundle id, reason or version;
            None for ``open`` (and for ``regressed`` where the campaign's version is unknown).
        time: when it was set, ISO 8601 UTC.
        by: who set it, e.g. ``optfuzz mark`` or :data:`CAMPAIGN`.
        fixed: for ``regressed``, the version the bundle had been marked fixed in.
        history: the earlier records (JSON objects without ``history``), oldest first.
        extra: keys of the record this code does not know, kept verbatim.
    """

    state: str
    time: str
    by: str
    value: str | None = None
    fixed: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> BundleState:
        """Parse meta.json's ``state`` object.

        Raises:
            ValueError: not an object, an unknown state, a missing argument, or a field of
                the wrong type (the message names it).
        """
        if not isinstance(data, dict):
            raise ValueError(f"expected an object, got {type(data).__name__}")
        state = data.get("state")
        if state not in ARGUMENT:
            raise ValueError(f"unknown state {state!r} (known: {', '.join(STATES)})")
        for key in ("time", "by"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"{key!r} must be a string")
        key = ARGUMENT[state]
        value = data.get(key) if key else None
        if key and not isinstance(value, str) and not (state == REGRESSED and value is None):
            raise ValueError(f"state {state!r} needs {key!r} (a string)")
        fixed = data.get("fixed")
        if fixed is not None and not isinstance(fixed, str):
            raise ValueError("'fixed' must be a string")
        history = data.get("history", [])
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise ValueError("'history' must be a list of objects")
        return cls(state=state, time=data["time"], by=data["by"], value=value, fixed=fixed,
                   history=copy.deepcopy(history),
                   extra={k: v for k, v in data.items() if k not in _OWN_KEYS})

    def entry(self) -> dict[str, Any]:
        """The record as a JSON object without its history (a :attr:`history` entry)."""
        out: dict[str, Any] = {"state": self.state}
        key = ARGUMENT[self.state]
        if key:
            out[key] = self.value
        if self.fixed is not None:
            out["fixed"] = self.fixed
        out.update({"time": self.time, "by": self.by, **self.extra})
        return copy.deepcopy(out)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of meta.json's ``state``: :meth:`entry` and its history."""
        return {**self.entry(), "history": copy.deepcopy(self.history)}

    def sighted(self, when: str, version: str | None) -> BundleState | None:
        """The ``regressed`` record that a sighting of the bundle at ``when`` (ISO UTC) by a
        campaign running ``version`` of the target (None: unknown) makes of this record;
        None where it is no regression: the bundle is not marked fixed, the sighting is
        older than the mark, or ``version`` is older than the fixed version (both PEP 440
        versions; the fix is not in it)."""
        if self.state != FIXED or when < self.time or (
                version is not None and _older(version, self.value or "")):
            return None
        return BundleState(state=REGRESSED, time=when, by=CAMPAIGN, value=version,
                           fixed=self.value, history=[*self.history, self.entry()])


def marked(previous: BundleState | None, state: str, value: str | None, when: str,
           by: str) -> BundleState:
    """The record of setting ``state`` (with its argument ``value``) at ``when`` by ``by``,
    ``previous`` (the bundle's record, None where it has none) moved into its history."""
    history = [*previous.history, previous.entry()] if previous is not None else []
    return BundleState(state=state, time=when, by=by, value=value, history=history)


#: which state a bundle keeps when re-bucketing merges bundles of one fault: what a
#: maintainer said of any of them outranks silence, a regression and a report outrank the rest.
PRECEDENCE = (REGRESSED, REPORTED, FIXED, DUPLICATE, INVALID, OPEN)
#: ``by`` of a state carried over by re-bucketing.
REBUCKET = "optfuzz triage --rebucket"


def merged(kept: BundleState | None, others: list[BundleState | None],
           when: str) -> BundleState | None:
    """The state of a bundle ``kept`` (its record, None: none) into which bundles with the
    records ``others`` are merged at ``when`` (ISO UTC): its own record where it ranks first
    in :data:`PRECEDENCE`, else the first-ranked other's, set by :data:`REBUCKET` with every
    merged record (its own included) in its history, so that no URL or version is lost."""
    records = [r for r in (kept, *others) if r is not None]
    if not records:
        return None
    best = min(records, key=lambda r: PRECEDENCE.index(r.state))
    if best is kept:
        return kept
    history = [entry for r in records for entry in (*r.history, r.entry())]
    return BundleState(state=best.state, time=when, by=REBUCKET, value=best.value,
                       fixed=best.fixed, history=history, extra=copy.deepcopy(best.extra))


def state_name(record: BundleState | None) -> str:
    """The state of a bundle whose record is ``record``: :data:`OPEN` where it has none."""
    return record.state if record is not None else OPEN


def _older(version: str, than: str) -> bool:
    """Whether PEP 440 version ``version`` is older than ``than``; False where either is no
    such version (a commit, a date: not comparable)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) < Version(than)
    except InvalidVersion:
        return False
