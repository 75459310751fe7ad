"""Pending findings on their way into ``pending/`` and out of it (:mod:`fuzzer.store.pending`).

An ending campaign keeps each finding of a new fault that it cannot reduce and key in time
(:class:`PendingKeeper`): a bundle written unreduced would be keyed on the unreduced model,
splitting what reduction joins, and nobody could forward it. ``optfuzz fuzz --resume`` and
``optfuzz triage --pending`` later handle each in full (:func:`finish_pending`), through the
same :func:`fuzzer.handling.record.handle_finding` a campaign runs: localization, reduction,
the root-cause key, verification, then a new bundle or a hit; the findings that waited for
it end as it did.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import (
    FindingPolicy,
    Handled,
    Report,
    RootCauseMemo,
    settle_waiting,
)
from fuzzer.handling.record import handle_finding
from fuzzer.handling.screen import costly_symptom
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.store.folder import BundleStore, DamagedBundleError, is_disk_full
from fuzzer.store.meta import BundleMeta
from fuzzer.store.pending import PendingError, PendingFinding, PendingStore
from fuzzer.targets import get_target

#: called after each pending finding with its id and outcome (None: skipped or failed).
Progress = Callable[[str, "Handled | None"], None]


def describe(outcome: Handled) -> str:
    """A few words on what became of a pending finding: ``new bundle <id>``, ``hit on
    <id>``, ``merged into <id>``, or ``<status> (<why>)``."""
    if outcome.bundle_id is not None and outcome.status in ("new", "hit", "merged"):
        words = {"new": "new bundle", "hit": "hit on", "merged": "merged into"}
        return f"{words[outcome.status]} {outcome.bundle_id}"
    return f"{outcome.status} ({outcome.said})" if outcome.said else outcome.status


class PendingKeeper:
    """Keeps the findings of one campaign's end in ``<root>/pending/``: one pending finding
    per preliminary root-cause key; a later finding of a key already kept is added to that
    one as a finding that waits for it (it will end as that one does: a hit on its bundle),
    as the campaign's recording thread lets findings of a key wait for the first. A finding
    without a key (not screened) is kept on its own. Thread-safe.

    Attributes:
        store: the pending findings.
    """

    def __init__(self, root: str | Path) -> None:
        self.store = PendingStore(root)
        self._by_key: dict[str, str] = {}  # preliminary key -> pending id
        self._lock = threading.Lock()

    def keep(self, case: TestCase, result: CaseResult, found: str, outcome: Handled,
             waiting: Iterable[tuple[str, str]] = ()) -> str | None:
        """Keep the primary finding of ``result`` (of ``case``, found at ISO time
        ``found``), with ``outcome``'s reason and preliminary key and the ``(message,
        first-wave signature)`` of the findings that waited for it (``waiting``). Returns
        None where it is kept, else one line saying why not (a full disk, a result without
        artifacts), for the caller to count as not recorded. Never raises."""
        try:
            with self._lock:
                kept = self._by_key.get(outcome.prelim) if outcome.prelim else None
                if kept is not None and self.store.path(kept).is_dir():
                    self.store.add_waiting(kept, [(result.findings[0].message,
                                                   outcome.signature), *waiting])
                    return None
                pending_id = self.store.add(PendingFinding(
                    case, result, found, outcome.name, outcome.prelim or None, list(waiting)))
                if outcome.prelim:
                    self._by_key[outcome.prelim] = pending_id
        except Exception as exc:  # a full disk above all: counted by the caller, never fatal
            return f"not kept pending: {type(exc).__name__}: {exc}"
        return None


@dataclass
class PendingRun:
    """What :func:`finish_pending` did.

    Attributes:
        outcomes: what became of each pending finding it handled (the findings that waited
            for one are reported, not listed).
        skipped: one line per pending finding that could not be read (its folder kept).
        failed: one line per pending finding whose handling failed (its folder kept).
    """

    outcomes: list[Handled] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def cheap_first(pending: PendingStore) -> list[str]:
    """Ids of ``pending``'s findings in the order :func:`finish_pending` takes them: oldest
    first, and those whose screening alone is long (a hang, a slow run:
    :func:`fuzzer.handling.screen.costly_symptom`) after all the others, so that none waits
    behind them (a campaign gives them a thread of their own:
    :mod:`fuzzer.campaign.finding_thread`). After
    a 10-minute onnxslim campaign, 14 hang candidates came first and held back 5 other
    findings, which made 2 new bundles, for 35 minutes."""
    return sorted(pending.ids(), key=lambda i: costly_symptom(pending.symptom(i)))


def finish_pending(store: BundleStore, pending: PendingStore, sandbox: Sandbox,
                   policy: FindingPolicy, memo: LocalizationMemo, roots: RootCauseMemo,
                   report: Report, progress: Progress | None = None,
                   stop: Callable[[], None] | None = None) -> PendingRun:
    """Handle the pending findings of ``pending`` (in :func:`cheap_first` order), each in
    full as the campaign would have: :func:`fuzzer.handling.record.handle_finding` into
    ``store``, through ``sandbox``, with ``policy``, ``memo`` and ``roots`` and the
    installed version of its target. Each outcome is reported (``report``), and so are the
    findings that waited for it; a new bundle's ``first_seen`` is the time the finding was
    found; then the folder goes. A pending finding that cannot be read or handled is counted in the
    returned :class:`PendingRun` and kept. ``progress(id, outcome)`` follows each;
    ``stop()``, before each, may raise to stop with the rest kept.

    Raises:
        OSError: a write failed for lack of space (the finding at hand is kept).
        SandboxError: ``sandbox`` no longer runs (likewise; or what its death raised).
        KeyboardInterrupt: from ``stop``.
    """
    run = PendingRun()
    versions: dict[str, str] = {}  # target name -> installed version
    for pending_id in cheap_first(pending):
        if stop is not None:
            stop()
        outcome = None
        try:
            kept = pending.read(pending_id)
            target = kept.case.target
            if target not in versions:
                versions[target] = get_target(target).version()
            outcome = handle_finding(store, sandbox, kept.case, kept.result, versions[target],
                                     policy, memo, roots)
        except PendingError as exc:
            run.skipped.append(f"{pending_id}: {exc}")
        except Exception as exc:  # a bug of optfuzz or an unknown target: kept, said why
            if is_disk_full(exc) or not sandbox.alive:
                raise
            run.failed.append(f"{pending_id}: {type(exc).__name__}: {exc}")
        else:
            if outcome is None or outcome.status == "pending":
                run.failed.append(f"{pending_id}: no outcome")
                outcome = None
            else:
                _stored(store, pending, kept, outcome, report)
                run.outcomes.append(outcome)
        if progress is not None:
            progress(pending_id, outcome)
    return run


def _stored(store: BundleStore, pending: PendingStore, kept: PendingFinding,
            outcome: Handled, report: Report) -> None:
    """Report ``outcome`` of the pending finding ``kept`` and the findings that waited for
    it, date a new bundle's ``first_seen`` to when ``kept`` was found, and remove its
    folder.

    Raises:
        OSError: a write or the removal failed.
    """
    if outcome.status == "new" and outcome.bundle_id is not None:
        with contextlib.suppress(DamagedBundleError):  # counted by the store
            store.update(outcome.bundle_id, lambda meta: _found_at(meta, kept.found))
    report(outcome, kept.finding.message)
    settle_waiting(store, outcome, kept.waiting, report)
    pending.remove(kept.id)


def _found_at(meta: BundleMeta, found: str) -> None:
    """A new bundle of a pending finding was first seen when the finding was found."""
    meta.first_seen = min(meta.first_seen, found)
