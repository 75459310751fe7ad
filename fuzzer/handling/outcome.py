"""What the handling of a finding runs with and comes to: its switches
(:class:`FindingPolicy`), what became of a finding (:class:`Handled`), and a campaign's
root-cause memory (:class:`RootCauseMemo`: the bundle each preliminary key went to, and the
keys whose handling failed, tried again less and less often), which every step reads and
updates."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fuzzer.reduce.predicate import Cutoff
from fuzzer.store.folder import BundleStore

#: failed root-cause keys a campaign remembers (:class:`RootCauseMemo`), the most recent:
#: campaign.json keeps them, at a few hundred bytes each.
MAX_FAILED_KEYS = 1000
#: seconds at least between two full attempts at one failed root-cause key, whatever its
#: backoff counts: a flaky root cause met many times in its first minutes costs one fresh
#: repro.py process and its determinism runs per five minutes, not one per power of two.
RETRY_SECONDS = 300.0


@dataclass
class FindingPolicy:
    """Switches of finding handling.

    Attributes:
        localize: localize findings to their passes.
        reduce_seconds: time bound of the reduce <-> localize rounds of a new root cause
            (seconds; 0 turns reduction off).
        verify: run a new bundle's repro.py in a fresh process before it is written.
        probe_seconds: time bound of the trigger probes of a new root cause (0: none).
        max_variants: other models of one root cause kept in its bundle's ``variants/``.
        localize_seconds: time bound of one localization (seconds; None: only the run
            budget bounds it); a campaign that is ending sets it.
        cutoff: a moment past which the reduction and trigger probes at hand stop with what
            they have (:class:`fuzzer.reduce.predicate.Cutoff`; a campaign whose grace
            period is over sets it). Copies of the policy share it.
        witness: where native crashes get their crash state
            (:class:`fuzzer.handling.crash_state.CrashWitness`, on the target's sanitize
            build); None: keyed by their culprit and site alone.
    """

    localize: bool = True
    reduce_seconds: float = 120.0
    verify: bool = True
    max_variants: int = 3
    probe_seconds: float = 30.0
    localize_seconds: float | None = None
    cutoff: Cutoff = field(default_factory=Cutoff, compare=False, repr=False)
    witness: Any = field(default=None, compare=False, repr=False)


@dataclass
class Handled:
    """What became of a finding.

    Attributes:
        status: ``new`` (a bundle was written), ``hit`` (a known root cause, seen again),
            ``merged`` (a known root cause found only after reduction; kept as a variant
            where room is left), ``documented`` (behaviour the target documents; ``name``
            says which), ``nondeterministic`` (the original's reference runs disagree),
            ``unconfirmed`` (a hang that did not recur, or a bundle whose repro.py did not
            reproduce in a fresh process), ``more-exact`` (a wrong output where the optimized
            model agrees with a float64 run and the original does not), ``pending`` (a new
            root cause that an ending campaign could not reduce and key in time: no bundle
            is written, the caller keeps the finding in ``pending/``,
            :mod:`fuzzer.store.pending`; ``name`` says why).
        bundle_id: the bundle it counts on, where one exists.
        name: the documented behaviour's name, or why it was not confirmed or is pending
            (one spelling per behaviour: campaign.json counts documented behaviour by it).
        note: why this finding was not handled in full, where it ended as an earlier one of
            its root-cause key did (``not tried again: ...``); said beside ``name``
            (:attr:`said`), never part of it.
        signature: the finding's first-wave signature
            (:func:`fuzzer.findings.dedup.finding_signature` on the found model with the
            passes localized on it), where it was localized; campaigns count the distinct
            ones to show how many buckets that key would have made.
        prelim: the preliminary root-cause key, where a pending finding or a failed
            attempt has one ("" otherwise).
    """

    status: str
    bundle_id: str | None = None
    name: str = ""
    signature: str = ""
    prelim: str = ""
    note: str = ""

    @property
    def said(self) -> str:
        """``name`` followed by ``(note)`` where there is a note: how logs say it."""
        return f"{self.name} ({self.note})".lstrip() if self.note else self.name


@dataclass
class _Backoff:
    """A failed root-cause key's backoff (:class:`RootCauseMemo`), as campaign.json keeps
    it: ``since`` findings of the key met since its first failure, ``next`` the count at
    which the next full attempt is due, ``at`` wall-clock seconds of the last full
    attempt."""

    since: int
    next: int
    at: float


class RootCauseMemo:
    """A campaign's memory of which bundle a finding went to, keyed by its *preliminary*
    root-cause key (taken on the found model before reduction), so that a root cause seen
    again costs no reduction: only the localization memo's confirming run.

    It also remembers the keys whose handling ended without a bundle after the expensive
    steps (a nondeterministic original, a repro.py that did not reproduce, only documented
    behaviour or a more exact result left after reduction). A later finding with such a key
    is handled in full again only at the 1st, 2nd, 4th, 8th ... occurrence after that
    (exponential backoff, as ClusterFuzz retries unreproducible crashes less and less
    often), and no sooner than :data:`RETRY_SECONDS` after the last full attempt (an
    attempt due earlier is taken at the first occurrence after that); the others end as the
    last attempt did, at no cost. An overnight campaign meets a flaky root cause thousands
    of times, and each full attempt costs determinism runs, a reduction and a fresh
    process. The failed keys and their backoff outlive a run (:meth:`failures`, kept in
    campaign.json: a resumed campaign goes on where it stopped, as it does with its cases);
    the bundles need no such record, since the store finds them by key. Thread-safe.

    Args:
        failures: what :meth:`failures` returned in an earlier run (entries that are not
            of that form are left out; an entry without ``next`` or ``at``, as written
            before they existed, is due at the next power of two and out of its wait).
        clock: the wall clock, in seconds since the epoch (the record outlives the
            process).
    """

    def __init__(self, failures: dict[str, Any] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._bundle: dict[str, str] = {}
        self._failed: dict[str, Handled] = {}
        self._backoff: dict[str, _Backoff] = {}
        self._clock = clock
        self._lock = threading.Lock()  # a campaign's two finding threads share it
        for key, entry in (failures or {}).items():
            if not isinstance(entry, dict) or not isinstance(entry.get("status"), str) or \
                    not isinstance(entry.get("name", ""), str):
                continue
            since, due, at = (entry.get(k, d) for k, d in (("since", 0), ("next", None),
                                                            ("at", 0.0)))
            if not isinstance(since, int) or not isinstance(due, int | None) or \
                    not isinstance(at, int | float):
                continue
            self._keep(key, Handled(entry["status"], name=entry.get("name", "")),
                       _Backoff(since, 1 << since.bit_length() if due is None else due,
                                float(at)))

    def failures(self) -> dict[str, dict[str, Any]]:
        """JSON-able record of the failed keys, oldest failure first: key ->
        ``{"status", "name", "since", "next", "at"}`` (how the last attempt ended; findings
        of the key met since its first failure; the count at which the next full attempt is
        due; wall-clock seconds of the last full attempt), at most :data:`MAX_FAILED_KEYS`
        of them."""
        with self._lock:
            return {key: {"status": last.status, "name": last.name,
                          **dataclasses.asdict(self._backoff[key])}
                    for key, last in self._failed.items()}

    def _keep(self, key: str, handled: Handled, backoff: _Backoff | None = None) -> None:
        """Remember ``key``'s failure as the newest (lock held), with ``backoff`` (None:
        the key's own, or a first failure's: due at the next finding, attempted now); the
        oldest goes past :data:`MAX_FAILED_KEYS`."""
        self._failed.pop(key, None)
        self._failed[key] = handled
        if backoff is not None or key not in self._backoff:
            self._backoff[key] = backoff or _Backoff(0, 1, self._clock())
        while len(self._failed) > MAX_FAILED_KEYS:
            oldest = next(iter(self._failed))
            del self._failed[oldest]
            self._backoff.pop(oldest, None)

    def get(self, key: str) -> str | None:
        """The bundle id remembered for ``key``."""
        return self._bundle.get(key)

    def remember(self, key: str, bundle_id: str) -> None:
        """Send later findings with preliminary key ``key`` to ``bundle_id``."""
        with self._lock:
            self._bundle[key] = bundle_id
            self._failed.pop(key, None)
            self._backoff.pop(key, None)

    def failed(self, key: str, handled: Handled) -> Handled:
        """Record that a finding with key ``key`` ended as ``handled`` (no bundle); returns
        ``handled`` with ``key`` as its :attr:`Handled.prelim`."""
        with self._lock:
            self._keep(key, handled)  # the backoff counts on from the first failure
        return dataclasses.replace(handled, prelim=key)

    def forget(self, key: str) -> None:
        """Drop the failure recorded for ``key`` and its backoff (an attempt that was
        stopped from outside proves nothing); nothing where none is recorded."""
        with self._lock:
            self._failed.pop(key, None)
            self._backoff.pop(key, None)

    def backed_off(self, key: str) -> Handled | None:
        """None where a finding with key ``key`` is to be handled in full (never failed, or
        its attempt is due: by count, and :data:`RETRY_SECONDS` after the last); else how
        the last attempt ended, for this finding too."""
        with self._lock:
            last = self._failed.get(key)
            if last is None:
                return None
            backoff = self._backoff[key]
            backoff.since += 1
            now = self._clock()
            if backoff.since >= backoff.next and not 0 <= now - backoff.at < RETRY_SECONDS:
                backoff.next, backoff.at = 2 * backoff.since, now  # try again
                return None
        return dataclasses.replace(last, note="not tried again: an earlier finding with its "
                                              "key ended so")


#: called with ``(Handled, message of the finding)`` after each finding.
Report = Callable[[Handled, str], None]


def settle_waiting(store: BundleStore, outcome: Handled, waited: list[tuple[str, str]],
                   report: Report) -> None:
    """The findings that waited for one with their preliminary key (``(message, first-wave
    signature)`` each) end as it did (``outcome``): a hit on its bundle, or its outcome,
    each reported."""
    bundle = outcome.bundle_id if outcome.status in ("new", "hit", "merged") else None
    for message, signature in waited:
        if bundle is not None:
            store.add_hit(bundle)
            report(Handled("hit", bundle, signature=signature), message)
        else:
            report(dataclasses.replace(
                outcome, signature=signature,
                note="not tried again: a finding with its key was handled meanwhile"), message)


def merge_failures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One record of failed root-cause keys (:meth:`RootCauseMemo.failures`) from several
    memos' (a cluster campaign's finding handlers each keep one): every key, with the entry
    that met the most findings since its failure, at most :data:`MAX_FAILED_KEYS` (the
    last ones)."""
    merged: dict[str, Any] = {}
    for record in records:
        for key, entry in record.items():
            if key not in merged or entry.get("since", 0) > merged[key].get("since", 0):
                merged[key] = entry
    return dict(list(merged.items())[-MAX_FAILED_KEYS:])
