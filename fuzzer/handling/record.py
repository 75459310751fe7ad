"""What a campaign does with a finding: localize, sign, deduplicate, reduce, and write the
bundle (or count a hit on the bundle that already records it). :func:`handle_finding`
screens it (:mod:`fuzzer.handling.screen`) and takes a new root cause through the costly
steps (:func:`record_new`), each done by its own module of :mod:`fuzzer.handling`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.dedup import find_root_cause, finding_signature
from fuzzer.findings.rootcause import root_cause_id
from fuzzer.handling.bundle import build_meta, bundle_files, hit, is_plainer
from fuzzer.handling.crash_state import CrashState
from fuzzer.handling.determinism import deterministic
from fuzzer.handling.exactness import float64_explains
from fuzzer.handling.growth import handling_of
from fuzzer.handling.key import key_and_culprit
from fuzzer.handling.minimize import Minimal, minimize, probe
from fuzzer.handling.outcome import FindingPolicy, Handled, RootCauseMemo
from fuzzer.handling.screen import Screened, count_hit, known_bundle, screen
from fuzzer.handling.verify import reproduces
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.modelio.graphs import node_count
from fuzzer.reduce.minimized import Minimized
from fuzzer.report.expected_actual import Observation
from fuzzer.store.folder import BundleStore, dump_json
from fuzzer.store.meta import PRELIMINARY_KEYS
from fuzzer.store.npz import npz_bytes
from fuzzer.store.versions import utc_now
from fuzzer.targets import get_target
from oracles import symptom
from oracles.base import by_majority


def handle_finding(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
                   target_version: str, policy: FindingPolicy,
                   memo: LocalizationMemo | None = None,
                   roots: RootCauseMemo | None = None) -> Handled | None:
    """Record the primary finding of ``result`` as one bundle per root cause:
    :func:`fuzzer.handling.screen.screen`, then for a root cause not known yet
    :func:`record_new`.

    In order: documented behaviour of the target (counted, never bundled); a hang or a slow
    run must recur; a symptom's own preparation (:attr:`oracles.base.Symptom.handling`: a
    slow finding's model is scaled down to the smallest size that still shows the growth);
    localization on the found model (``memo`` reuses earlier answers) and the preliminary
    root-cause key, which sends a known root cause to its bundle as a hit; for a new one,
    the original must run deterministically, then reduce <-> localize to a fixed point
    (:func:`fuzzer.handling.minimize.minimize`), documented behaviour checked again on the
    minimized model, the final key on the minimized model (a known root cause becomes a
    variant of its bundle; a native crash's key is its crash state on the sanitize build
    where the policy has one: :mod:`fuzzer.handling.crash_state`), and verification of the
    bundle's own repro.py in a fresh process before the bundle is written. Returns None
    when ``result`` has no finding with artifacts.
    """
    roots = roots if roots is not None else RootCauseMemo()
    screened = screen(store, sandbox, case, result, policy, memo, roots)
    if not isinstance(screened, Screened):
        return screened
    return record_new(store, sandbox, screened, target_version, policy, roots)


def record_new(store: BundleStore, sandbox: Sandbox, screened: Screened, target_version: str,
               policy: FindingPolicy, roots: RootCauseMemo) -> Handled:
    """The costly second part of :func:`handle_finding` for a finding
    :func:`fuzzer.handling.screen.screen` left: determinism, reduction, the final key,
    verification and the new bundle (or a hit where its preliminary key found a bundle
    meanwhile, a variant where the final key did, and the bundle's own model where it shows
    the fault at an earlier stage than the bundle's:
    :meth:`fuzzer.store.folder.BundleStore.promote`)."""
    handled = _record_new(store, sandbox, screened, target_version, policy, roots)
    if screened.plainer_than is not None and handled.bundle_id is None:
        # the plainer symptom's model could not be confirmed: a sighting of its bundle still
        return count_hit(store, roots, screened.plainer_than, screened.prelim,
                         screened.first_wave, screened.finding.symptom)
    return handled


#: why a finding is pending (:attr:`fuzzer.handling.outcome.Handled.name`) when the
#: campaign's end came before its reduction and key.
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
            (known := known_bundle(store, roots, prelim, finding.symptom)) is not None:
        # a bundle appeared for its key since screening
        return count_hit(store, roots, known, prelim, first_wave, finding.symptom)
    if (late := _too_late(policy, screened)) is not None:
        return late
    handling = handling_of(finding.symptom)
    if not deterministic(sandbox, case, result):
        return roots.failed(prelim, Handled("nondeterministic", signature=first_wave))
    minimal = minimize(sandbox, case, result, finding, passes,
                       policy.reduce_seconds if symptom(finding.symptom).reducible else 0.0,
                       relocalize=policy.localize, cutoff=policy.cutoff,
                       culprit=screened.culprit)
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
    state = _crash_state(policy, minimal)
    key, culprit = key_and_culprit(sandbox, case, minimal.finding, minimal.passes, minimal.run,
                                   trigger)
    if state is not None:  # one memory fault, whichever pass reached it
        key = state.key(case.target)
    known = find_root_cause(store, finding.symptom, key)
    plainer = known is not None and is_plainer(store, known, minimal.finding)
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
    if state is not None:
        extra["crash_state"] = state.to_json()
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
    meta.nodes.minimal = minimal.minimal
    observed = Observation.of_result(minimal.run, f"{case.target} {target_version}")
    files = bundle_files(meta, found, _minimized(minimal), sandbox.timeout, observed)
    if policy.verify:
        ok, tail = reproduces(sandbox, files, sandbox.timeout)
        if symptom(minimal.finding.symptom).confirm:  # timing: the majority of runs decides
            def again() -> bool:
                nonlocal tail
                shown, tail = reproduces(sandbox, files, sandbox.timeout)
                return shown

            ok = by_majority(ok, again)
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


def _crash_state(policy: FindingPolicy, minimal: Minimal) -> CrashState | None:
    """The crash state of a native crash on the policy's sanitize build, run with the
    minimal passes; None for another finding, or where the campaign has no such build."""
    if policy.witness is None:
        return None
    return policy.witness.state_of(minimal.case, minimal.passes, minimal.finding)


def _minimized(minimal: Minimal) -> Minimized | None:
    """The bundle's view of a :class:`Minimal` (None where nothing was reduced)."""
    arts = minimal.run.artifacts
    if arts is None:
        return None
    return Minimized(minimal.case.model_bytes, arts.feeds, arts.optimized, arts.expected,
                     arts.actual, minimal.runs, minimal.seconds)
