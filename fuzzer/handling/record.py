"""What a campaign does with a finding: localize, sign, deduplicate, reduce, and write the
bundle (or count a hit on the bundle that already records it)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fuzzer.execution.case import Artifacts, CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.dedup import find_root_cause, finding_signature
from fuzzer.findings.rootcause import (
    REWRITE,
    breaking_and_enabling,
    fault_kind,
    model_names_of,
    root_cause_id,
    root_cause_key,
    shared_cause_key,
)
from fuzzer.findings.signature import bundle_id as make_bundle_id
from fuzzer.handling import growth
from fuzzer.handling.growth import Handling
from fuzzer.handling.minimize import Minimal, minimize, probe
from fuzzer.handling.verify import (
    deterministic,
    more_exact_than_original,
    reproduces,
    rounding_only,
)
from fuzzer.localize.culprit import Culprit, find_culprit
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.localize.search import localize
from fuzzer.modelio.graphs import node_count
from fuzzer.reduce.minimized import Minimized
from fuzzer.reduce.predicate import Cutoff
from fuzzer.report.expected_actual import Observation
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.repro import render_repro, repro_context
from fuzzer.store.folder import BundleStore, dump_json
from fuzzer.store.meta import PRELIMINARY_KEYS, SCHEMA, BundleMeta
from fuzzer.store.npz import npz_bytes
from fuzzer.store.versions import environment_versions, utc_now
from fuzzer.targets import get_target
from oracles import symptom
from oracles.base import STAGES, Finding

#: symptoms whose finding is dropped where the optimized model is the float64 answer.
EXACTNESS_SYMPTOMS = frozenset({"output-mismatch", "metric-drift"})
#: the name float32 rounding that float64 runs of both models show is counted under (a
#: comparison flipped at a tie, one ulp amplified by Acos; never bundled).
ROUNDING = "float32-rounding-only"
#: symptom -> its own steps beyond the common path (:class:`fuzzer.handling.growth.Handling`).
HANDLING: dict[str, Handling] = {"slow": growth.SLOW}


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
    """

    localize: bool = True
    reduce_seconds: float = 120.0
    verify: bool = True
    max_variants: int = 3
    probe_seconds: float = 30.0
    localize_seconds: float | None = None
    cutoff: Cutoff = field(default_factory=Cutoff, compare=False, repr=False)


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
        name: the documented behaviour's name, or why it was not confirmed or is pending.
        signature: the finding's first-wave signature (:func:`finding_signature` on the
            found model with the passes localized on it), where it was localized; campaigns
            count the distinct ones to show how many buckets that key would have made.
        prelim: the preliminary root-cause key, where a pending finding or a failed
            attempt has one ("" otherwise).
    """

    status: str
    bundle_id: str | None = None
    name: str = ""
    signature: str = ""
    prelim: str = ""


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
        return dataclasses.replace(last, name=f"{last.name} (not tried again: an earlier "
                                              "finding with its key ended so)".lstrip())


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
                name=f"{outcome.name} (not tried again: a finding with its key was "
                     "handled meanwhile)".lstrip()), message)


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


def confirmed(sandbox: Sandbox, case: TestCase, finding: Finding) -> bool:
    """Whether running ``case`` again shows ``finding``'s symptom."""
    again = sandbox.run(case)
    return any(f.symptom == finding.symptom for f in again.findings)


def primary_finding(result: CaseResult) -> Finding | None:
    """The most severe finding of a result (oracles report in severity order)."""
    return result.findings[0] if result.findings else None


def cuts_the_graph(target: Any, config: dict[str, Any], breaking: str) -> bool:
    """Whether the pass ``breaking`` alone is judged short of comparing outputs
    (``judge_until`` in the target's oracle context: a pass that cuts the graph, or whose
    output the target documents as non-conforming), so that the op types it removes or
    adds are the model's, not a rewrite's."""
    if breaking not in target.passes_of(config):
        return False
    alone = target.oracle_context(target.with_passes(config, [breaking]))
    return alone.get("judge_until", "compare") != "compare"


def key_of(sandbox: Sandbox, case: TestCase, finding: Finding, passes: list[str] | None,
           run: CaseResult, trigger: str | None = None) -> tuple[str, str, list[str]]:
    """``(root-cause key, culprit, enabling passes)`` of ``finding`` as
    :func:`key_and_culprit` takes it in the quick mode (each prefix judged by the oracles
    alone): the preliminary key of a finding on the model as found."""
    key, culprit = key_and_culprit(sandbox, case, finding, passes, run, trigger, deep=False)
    return key, culprit.culprit, culprit.enabling


def key_and_culprit(sandbox: Sandbox, case: TestCase, finding: Finding,
                    passes: list[str] | None, run: CaseResult, trigger: str | None = None,
                    deep: bool = True) -> tuple[str, Culprit]:
    """The root-cause key of ``finding`` whose minimal passes are ``passes`` and whose run
    with only those passes is ``run``, and its :class:`fuzzer.localize.culprit.Culprit`
    (:func:`fuzzer.localize.culprit.find_culprit`, runs through ``sandbox``; ``deep``
    judges declared shapes and stages a typed copy too), except for a finding the target
    explains by a cause outside any pass (:meth:`fuzzer.targets.base.Target.shared_cause`),
    keyed by that cause instead; a symptom's own :data:`HANDLING` may replace ``passes`` (a
    ``slow`` finding whose growth is the target's own load and save names none);
    ``trigger`` is the trigger probes' sentence where they ran. Names the model and its
    optimized form give tensors, nodes and graphs are kept out of a message's core
    (:func:`fuzzer.findings.rootcause.model_names`)."""
    target = get_target(case.target)
    handling = HANDLING.get(finding.symptom)
    if handling is not None:
        passes = handling.passes(finding, passes)
    cause = target.shared_cause(finding)
    if cause is not None:  # one cause whatever pass shows it: no blame runs, no footprint
        breaking, enabling = breaking_and_enabling(passes)
        return shared_cause_key(case.target, cause, finding), Culprit(breaking, enabling)
    culprit = find_culprit(sandbox, case, finding, passes, run, deep=deep)
    footprint = culprit.footprint
    if footprint and cuts_the_graph(target, case.config, culprit.culprit):
        footprint = ""  # it removes whole regions by design: the ops it removed are the model's
    exposed = culprit.exposed_by is not None
    arts = run.artifacts  # names matter only where a message is keyed: parse only then
    names = model_names_of(arts.model, arts.optimized) \
        if arts is not None and fault_kind(finding, exposed) != REWRITE else ()
    key = root_cause_key(case.target, culprit.culprit, finding, footprint,
                         target.anchors().get(culprit.culprit, ()), trigger, names,
                         exposed=exposed)
    return key, culprit


@dataclass
class Screened:
    """A finding localized and keyed on its found model whose root cause is not known yet:
    what :func:`record_new` needs to make its bundle.

    Attributes:
        case: the case as later runs take it (a symptom's :data:`HANDLING` may have scaled
            its model down).
        result: the run of ``case`` showing ``finding``.
        finding: the primary finding.
        found: the artifacts of the model as the campaign found it (``original.onnx``).
        where: the localization on ``case`` (None where localization is off).
        prelim: the preliminary root-cause key (:func:`key_of` on the found model).
        first_wave: the finding's first-wave signature (:attr:`Handled.signature`; "" where
            it was not localized).
        plainer_than: the bundle its preliminary key found, where the finding shows that
            bundle's fault with a symptom the bundle has not seen at an earlier stage than
            its own (its minimized model may become the bundle's); None otherwise.
    """

    case: TestCase
    result: CaseResult
    finding: Finding
    found: Artifacts
    where: Any
    prelim: str
    first_wave: str
    plainer_than: str | None = None

    @property
    def passes(self) -> list[str] | None:
        """The localized responsible passes (None: not localized)."""
        return self.where.passes if self.where is not None else None


def costly_screening(finding: Finding) -> bool:
    """Whether :func:`screen` of ``finding`` itself takes long: its symptom must recur
    (a hang runs again up to its timeout) or has steps of its own (:data:`HANDLING`: a slow
    finding is timed at three sizes and scaled down)."""
    return symptom(finding.symptom).confirm or finding.symptom in HANDLING


def screen(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
           policy: FindingPolicy, memo: LocalizationMemo | None = None,
           roots: RootCauseMemo | None = None) -> Handled | Screened | None:
    """The cheap first part of :func:`handle_finding`: how the primary finding of ``result``
    ends without a new bundle (:class:`Handled`: documented behaviour, a hang or slow run
    that did not recur, a hit on the bundle of its preliminary root-cause key, a key whose
    last attempt failed and is backed off), else what :func:`record_new` needs
    (:class:`Screened`). None where ``result`` has no finding with artifacts."""
    finding = primary_finding(result)
    if finding is None or result.artifacts is None:
        return None
    documented = get_target(case.target).documented(finding, case.config)
    if documented is not None:
        return Handled("documented", name=documented.name)
    handling = HANDLING.get(finding.symptom)
    if handling is not None:
        case = handling.case(case)
    if symptom(finding.symptom).confirm and not confirmed(sandbox, case, finding):
        return Handled("unconfirmed", name="did not recur")
    found = result.artifacts
    if handling is not None:
        case, result, finding = handling.prepare(sandbox, case, result, finding,
                                                 policy.reduce_seconds, policy.cutoff)
    roots = roots if roots is not None else RootCauseMemo()
    where = None
    if policy.localize:
        where = (memo.localize(sandbox, case, result, finding, policy.localize_seconds)
                 if memo is not None else
                 localize(sandbox, case, result, finding, max_seconds=policy.localize_seconds))
    passes = where.passes if where is not None else None
    run = where.result if where is not None and where.result is not None else result
    prelim, _, _ = key_of(sandbox, case, finding, passes, run)
    # counted only where localized (Handled.signature): a WL hash per hit costs a millisecond
    first_wave = finding_signature(case, result, finding, passes, run) if where is not None \
        else ""
    known = _known(store, roots, prelim, finding.symptom, search=True)
    if known is not None:
        # only a wrong rewrite's symptoms share a key, so only they can be plainer: the
        # other hits skip reading the bundle's meta.json
        if symptom(finding.symptom).fault == REWRITE and \
                _plainer(store, known, finding, unseen=True):
            return Screened(case, result, finding, found, where, prelim, first_wave, known)
        return _hit(store, roots, known, prelim, first_wave, finding.symptom)
    if (skipped := roots.backed_off(prelim)) is not None:
        return dataclasses.replace(skipped, signature=first_wave)
    return Screened(case, result, finding, found, where, prelim, first_wave)


def _known(store: BundleStore, roots: RootCauseMemo, prelim: str, symptom_name: str,
           search: bool = False) -> str | None:
    """The existing bundle of preliminary key ``prelim``: known to ``roots``, else, with
    ``search``, found among the store's bundles of any symptom; None where there is none."""
    known = roots.get(prelim)
    if known is None and search:
        known = find_root_cause(store, symptom_name, prelim)
    return known if known is not None and store.exists(known) else None


def _hit(store: BundleStore, roots: RootCauseMemo, known: str, prelim: str, first_wave: str,
         symptom_name: str) -> Handled:
    """A hit on bundle ``known``, counted in ``store`` as a sighting of ``symptom_name``."""
    store.add_hit(known, symptom=symptom_name)
    roots.remember(prelim, known)
    return Handled("hit", known, signature=first_wave)


def handle_finding(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
                   target_version: str, policy: FindingPolicy,
                   memo: LocalizationMemo | None = None,
                   roots: RootCauseMemo | None = None) -> Handled | None:
    """Record the primary finding of ``result`` as one bundle per root cause:
    :func:`screen`, then for a root cause not known yet :func:`record_new`.

    In order: documented behaviour of the target (counted, never bundled); a hang or a slow
    run must recur; a symptom's own preparation (:data:`HANDLING`: a slow finding's model is
    scaled down to the smallest size that still shows the growth); localization on the found
    model (``memo`` reuses earlier answers) and the preliminary
    root-cause key, which sends a known root cause to its bundle as a hit; for a new one,
    the original must run deterministically, then reduce <-> localize to a fixed point
    (:func:`fuzzer.handling.minimize.minimize`), documented behaviour checked again on the
    minimized model, the final key on the minimized model (a known root cause becomes a
    variant of its bundle), and verification of the bundle's own
    repro.py in a fresh process before the bundle is written. Returns None when ``result``
    has no finding with artifacts.
    """
    roots = roots if roots is not None else RootCauseMemo()
    screened = screen(store, sandbox, case, result, policy, memo, roots)
    if not isinstance(screened, Screened):
        return screened
    return record_new(store, sandbox, screened, target_version, policy, roots)


def record_new(store: BundleStore, sandbox: Sandbox, screened: Screened, target_version: str,
               policy: FindingPolicy, roots: RootCauseMemo) -> Handled:
    """The costly second part of :func:`handle_finding` for a finding :func:`screen` left:
    determinism, reduction, the final key, verification and the new bundle (or a hit where
    its preliminary key found a bundle meanwhile, a variant where the final key did, and
    the bundle's own model where it shows the fault at an earlier stage than the bundle's:
    :meth:`fuzzer.store.folder.BundleStore.promote`)."""
    handled = _record_new(store, sandbox, screened, target_version, policy, roots)
    if screened.plainer_than is not None and handled.bundle_id is None:
        # the plainer symptom's model could not be confirmed: a sighting of its bundle still
        return _hit(store, roots, screened.plainer_than, screened.prelim, screened.first_wave,
                    screened.finding.symptom)
    return handled


#: why a finding is pending (:attr:`Handled.name`) when the campaign's end came before its
#: reduction and key.
TOO_LATE = "the campaign ended before it was reduced and keyed"


def _too_late(policy: FindingPolicy, screened: Screened) -> Handled | None:
    """A ``pending`` outcome for ``screened`` once ``policy``'s cutoff has passed (the
    campaign is ending: what is reduced then would be keyed on a model only partly reduced),
    else None."""
    if policy.cutoff.left() > 0:
        return None
    return Handled("pending", name=TOO_LATE, signature=screened.first_wave,
                   prelim=screened.prelim)


def _record_new(store: BundleStore, sandbox: Sandbox, screened: Screened, target_version: str,
                policy: FindingPolicy, roots: RootCauseMemo) -> Handled:
    """:func:`record_new` but for a plainer symptom's finding that ends without a bundle."""
    case, result, finding, found = screened.case, screened.result, screened.finding, screened.found
    prelim, first_wave, where, passes = (screened.prelim, screened.first_wave, screened.where,
                                         screened.passes)
    if screened.plainer_than is None and \
            (known := _known(store, roots, prelim, finding.symptom)) is not None:
        return _hit(store, roots, known, prelim, first_wave, finding.symptom)  # since screening
    if (late := _too_late(policy, screened)) is not None:
        return late
    handling = HANDLING.get(finding.symptom)
    if not deterministic(sandbox, case, result):
        return roots.failed(prelim, Handled("nondeterministic", signature=first_wave))
    minimal = minimize(sandbox, case, result, finding, passes,
                       policy.reduce_seconds if symptom(finding.symptom).reducible else 0.0,
                       relocalize=policy.localize, cutoff=policy.cutoff)
    if (late := _too_late(policy, screened)) is not None:  # its reduction was cut short
        return late
    target = get_target(case.target)
    documented = target.documented(minimal.finding, case.config if minimal.passes is None
                                   else target.with_passes(case.config, minimal.passes))
    if documented is not None:  # only the documented part of the growth survived reduction
        return roots.failed(prelim, Handled("documented", name=documented.name,
                                            signature=first_wave))
    exactness = float64_explains(sandbox, minimal)
    if exactness is not None:
        return roots.failed(prelim, dataclasses.replace(exactness, signature=first_wave))
    trigger = None
    if symptom(finding.symptom).reducible and policy.probe_seconds > 0:
        trigger, minimal = probe(sandbox, minimal, policy.probe_seconds, policy.cutoff)
        if (late := _too_late(policy, screened)) is not None:  # its probes were cut short
            return late
    key, culprit = key_and_culprit(sandbox, case, minimal.finding, minimal.passes, minimal.run,
                                   trigger)
    known = find_root_cause(store, finding.symptom, key)
    plainer = known is not None and _plainer(store, known, minimal.finding)
    if known is not None and not plainer:
        arts = minimal.run.artifacts
        files = {".onnx": minimal.case.model_bytes, ".npz": npz_bytes(arts.feeds)} \
            if arts is not None else {".onnx": minimal.case.model_bytes}
        store.add_variant(known, files, policy.max_variants, utc_now(), key=prelim,
                          symptom=finding.symptom)
        roots.remember(prelim, known)
        return Handled("merged", known, signature=first_wave)
    bid = known if known is not None else root_cause_id(finding.symptom, key)
    extra: dict[str, Any] = {"root_cause": key, "breaking_pass": culprit.culprit,
                             "enabling_passes": culprit.enabling, "trigger": trigger,
                             **culprit.to_json()}
    if prelim != key:
        extra[PRELIMINARY_KEYS] = [prelim]
    if where is not None:
        extra["localization"] = where.to_json()
    if handling is not None:
        extra.update(handling.meta_fields(minimal.finding))
    meta = build_meta(bid, finding_signature(minimal.case, minimal.run, minimal.finding,
                                             minimal.passes), minimal.finding, case,
                      result.source, target_version, minimal.passes,
                      node_count(found.model), node_count(minimal.case.model_bytes), extra)
    observed = Observation.of_result(minimal.run, f"{case.target} {target_version}")
    files = bundle_files(meta, found, _minimized(minimal), sandbox.timeout, observed)
    if policy.verify:
        ok, tail = reproduces(sandbox, files, sandbox.timeout)
        if not ok:
            return roots.failed(prelim, Handled(
                "unconfirmed", name=f"repro.py did not reproduce: {tail}", signature=first_wave))
        meta.verified = {"repro": "reproduces in a fresh process", "deterministic": True,
                         "documented": None}
        files["meta.json"] = dump_json(meta.to_json())
    if plainer:  # the plainer symptom's model becomes the bundle's, the old one a variant
        store.promote(bid, files, utc_now(), key=prelim)
        roots.remember(prelim, bid)
        return Handled("merged", bid, signature=first_wave)
    created = store.create(bid, files, on_exists=hit)
    roots.remember(prelim, bid)
    return Handled("new" if created else "hit", bid, signature=first_wave)


#: what :func:`float64_explains` says of a wrong output that the optimized model computes
#: more exactly than the original.
MORE_EXACT = Handled("more-exact", name="the optimized model is the float64 answer")


def float64_explains(sandbox: Sandbox, minimal: Minimal) -> Handled | None:
    """How float64 runs explain ``minimal``'s wrong output as no bug, or None: the
    optimized model is the float64 answer and the original is not (:data:`MORE_EXACT`), or
    float64 runs of both models agree (float32 rounding, counted as :data:`ROUNDING`). Only
    for :data:`EXACTNESS_SYMPTOMS`; the float64 runs go through ``sandbox``."""
    if minimal.finding.symptom not in EXACTNESS_SYMPTOMS:
        return None
    if more_exact_than_original(sandbox, minimal.case.model_bytes, minimal.run):
        return MORE_EXACT
    if rounding_only(sandbox, minimal.case.model_bytes, minimal.run):
        return Handled("documented", name=ROUNDING)
    return None


def _plainer(store: BundleStore, bundle_id: str, finding: Finding,
             unseen: bool = False) -> bool:
    """Whether ``finding`` shows its fault at an earlier stage (:data:`oracles.base.STAGES`)
    than the model bundle ``bundle_id`` keeps (with ``unseen``: and with a symptom the
    bundle has not counted yet): an invalid model says more of a wrong rewrite than wrong
    outputs far downstream, so its minimized model is the one to forward. False where the
    bundle's meta cannot be read (a cluster handler sees none)."""
    try:
        kept = store.meta(bundle_id)
    except (OSError, ValueError):
        return False
    if unseen and finding.symptom in kept.symptoms:
        return False
    order = {stage: index for index, stage in enumerate(STAGES)}
    return order.get(finding.stage, len(order)) < order.get(kept.stage, len(order))


def _minimized(minimal: Minimal) -> Minimized | None:
    """The bundle's view of a :class:`Minimal` (None where nothing was reduced)."""
    arts = minimal.run.artifacts
    if arts is None:
        return None
    return Minimized(minimal.case.model_bytes, arts.feeds, arts.optimized, arts.expected,
                     arts.actual, minimal.runs, minimal.seconds)


def build_meta(bid: str, signature: str, finding: Finding, case: TestCase, source: dict,
               target_version: str, responsible: list[str] | None, nodes_original: int,
               nodes_minimized: int, extra: dict[str, Any] | None = None) -> BundleMeta:
    """The meta of a new bundle; ``extra`` sets further fields by their meta.json name
    (e.g. ``localization``).

    Raises:
        MetaError: a value of ``extra`` has the wrong type for its field.
    """
    now = utc_now()
    meta = {
        "schema": SCHEMA,
        "id": bid,
        "signature": signature,
        "symptom": finding.symptom,
        "stage": finding.stage,
        "message": finding.message,
        "target": {"name": case.target, "version": target_version, "config": case.config},
        "responsible_passes": responsible,
        "source": {k: v for k, v in source.items() if k != "passes"},
        "versions": environment_versions(),
        "nodes": {"original": nodes_original, "minimized": nodes_minimized},
        "first_seen": now,
        "last_seen": now,
        "hits": 1,
    }
    meta.update(extra or {})
    return BundleMeta.from_json(meta)


def bundle_files(meta: BundleMeta, original: Artifacts, minimized: Minimized | None,
                 timeout: float, observed: Observation | None = None) -> dict[str, bytes]:
    """Every file of a bundle: model/original/optimized .onnx, .npz feeds and outputs,
    repro.py, report.md (with model.onnx inline as ONNX text, and "Actual" worded from
    ``observed``, the run of model.onnx with the minimal passes, where given) and
    meta.json."""
    use = minimized or Minimized(original.model, original.feeds, original.optimized,
                                 original.expected, original.actual)
    repro = render_repro(timeout=timeout, **repro_context(meta))
    files = {
        "model.onnx": use.model,
        "original.onnx": original.model,
        "inputs.npz": npz_bytes(use.feeds),
        "repro.py": repro.encode(),
        "report.md": render_issue_draft(meta, repro, observed=observed, model=use.model,
                                        optimized=use.optimized).encode(),
    }
    if use.optimized is not None:
        files["optimized.onnx"] = use.optimized
    if meta.symptom == "output-mismatch" and use.expected is not None:
        files["expected.npz"] = npz_bytes(use.expected)
        if use.actual is not None:
            files["actual.npz"] = npz_bytes(use.actual)
    if meta.symptom in HANDLING:
        files.update(HANDLING[meta.symptom].files(meta, use.model))
    files["meta.json"] = dump_json(meta.to_json())
    return files


def hit(meta: BundleMeta) -> BundleMeta:
    """``meta`` after one more sighting of its bug (now), as its own symptom."""
    meta.add_hits(1, utc_now())
    return meta


def record(store: BundleStore, signature: str, finding: Finding, case: TestCase,
           source: dict, artifacts: Artifacts, target_version: str,
           responsible: list[str] | None, minimized: Minimized | None = None,
           timeout: float = 30.0, extra: dict[str, Any] | None = None) -> tuple[str, bool]:
    """Create the bundle for ``signature`` or count a hit on it; return ``(id, created)``."""
    bid = make_bundle_id(finding.symptom, signature)
    if store.exists(bid):
        store.add_hit(bid)
        return bid, False
    n_min = node_count(minimized.model) if minimized else node_count(artifacts.model)
    meta = build_meta(bid, signature, finding, case, source, target_version, responsible,
                      node_count(artifacts.model), n_min, extra)
    created = store.create(bid, bundle_files(meta, artifacts, minimized, timeout), on_exists=hit)
    return bid, created
