"""Screening, the quick first step of a finding's handling, on the model as found: documented
behaviour, a hang or a slow run that must recur, a symptom's own preparation, localization and
the preliminary root-cause key. A finding of a known root cause ends here as a hit on its
bundle, one whose key failed before is backed off (:class:`fuzzer.handling.outcome.Handled`);
a new one goes on (:class:`Screened`) to :func:`fuzzer.handling.record.record_new`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import Artifacts, CaseResult, TestCase, full_limit
from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.dedup import find_root_cause, finding_signature
from fuzzer.findings.rootcause import REWRITE
from fuzzer.handling.bundle import is_plainer
from fuzzer.handling.determinism import confirmed
from fuzzer.handling.growth import handling_of
from fuzzer.handling.key import key_of
from fuzzer.handling.outcome import FindingPolicy, Handled, RootCauseMemo
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.localize.search import localize
from fuzzer.store.folder import BundleStore
from fuzzer.targets import get_target
from oracles import symptom
from oracles.base import Finding


def primary_finding(result: CaseResult) -> Finding | None:
    """The most severe finding of a result (oracles report in severity order)."""
    return result.findings[0] if result.findings else None


@dataclass
class Screened:
    """A finding localized and keyed on its found model whose root cause is not known yet:
    what :func:`fuzzer.handling.record.record_new` needs to make its bundle.

    Attributes:
        case: the case as later runs take it (a symptom's
            :attr:`~oracles.base.Symptom.handling` may have scaled its model down).
        result: the run of ``case`` showing ``finding``.
        finding: the primary finding.
        found: the artifacts of the model as the campaign found it (``original.onnx``).
        where: the localization on ``case`` (None where localization is off).
        prelim: the preliminary root-cause key (:func:`fuzzer.handling.key.key_of` on the
            found model).
        first_wave: the finding's first-wave signature
            (:attr:`fuzzer.handling.outcome.Handled.signature`; "" where it was not
            localized).
        plainer_than: the bundle its preliminary key found, where the finding shows that
            bundle's fault with a symptom the bundle has not seen at an earlier stage than
            its own (its minimized model may become the bundle's); None otherwise.
        culprit: the pass the preliminary key blames (:func:`fuzzer.handling.key.key_of`),
            which the reduction keeps needed; None where none was taken.
    """

    case: TestCase
    result: CaseResult
    finding: Finding
    found: Artifacts
    where: Any
    prelim: str
    first_wave: str
    plainer_than: str | None = None
    culprit: str | None = None

    @property
    def passes(self) -> list[str] | None:
        """The localized responsible passes (None: not localized)."""
        return self.where.passes if self.where is not None else None


def costly_screening(finding: Finding) -> bool:
    """Whether :func:`screen` of ``finding`` itself takes long (:func:`costly_symptom`)."""
    return costly_symptom(finding.symptom)


def costly_symptom(name: str) -> bool:
    """Whether :func:`screen` of a finding of symptom ``name`` itself takes long: the
    symptom must recur (a hang runs again up to its timeout) or has steps of its own
    (:attr:`oracles.base.Symptom.handling`: a slow finding is timed at three sizes and
    scaled down); False for a name no oracle registers."""
    try:
        record = symptom(name)
    except KeyError:
        return False
    return record.confirm or record.handling is not None


def screen(store: BundleStore, sandbox: Sandbox, case: TestCase, result: CaseResult,
           policy: FindingPolicy, memo: LocalizationMemo | None = None,
           roots: RootCauseMemo | None = None) -> Handled | Screened | None:
    """The cheap first part of :func:`fuzzer.handling.record.handle_finding`: how the primary
    finding of ``result`` ends without a new bundle
    (:class:`fuzzer.handling.outcome.Handled`: documented behaviour, a hang or slow run
    that did not recur, a hit on the bundle of its preliminary root-cause key, a key whose
    last attempt failed and is backed off), else what
    :func:`fuzzer.handling.record.record_new` needs (:class:`Screened`). None where
    ``result`` has no finding with artifacts."""
    finding = primary_finding(result)
    if finding is None or result.artifacts is None:
        return None
    case = full_limit(case)  # every rerun from here on has the whole per-case timeout
    documented = get_target(case.target).documented(finding, case.config)
    if documented is not None:
        return Handled("documented", name=documented.name)
    handling = handling_of(finding.symptom)
    if handling is not None:
        case = handling.case(case)
    if symptom(finding.symptom).confirm:
        again = confirmed(sandbox, case, finding)
        if again is None:
            return Handled("unconfirmed", name="did not recur")
        if again is not finding:  # found within a calibrated limit, confirmed at the whole
            result = dataclasses.replace(result, findings=[
                again if f is finding else f for f in result.findings])
            finding = again
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
    prelim, culprit, _ = key_of(sandbox, case, finding, passes, run)
    # counted only where localized (Handled.signature): a WL hash per hit costs a millisecond
    first_wave = finding_signature(case, result, finding, passes, run) if where is not None \
        else ""
    known = known_bundle(store, roots, prelim, finding.symptom, search=True)
    if known is not None:
        # only a wrong rewrite's symptoms share a key, so only they can be plainer: the
        # other hits skip reading the bundle's meta.json
        if symptom(finding.symptom).fault == REWRITE and \
                is_plainer(store, known, finding, unseen=True):
            return Screened(case, result, finding, found, where, prelim, first_wave, known,
                            culprit)
        return count_hit(store, roots, known, prelim, first_wave, finding.symptom)
    if (skipped := roots.backed_off(prelim)) is not None:
        return dataclasses.replace(skipped, signature=first_wave)
    return Screened(case, result, finding, found, where, prelim, first_wave, culprit=culprit)


def known_bundle(store: BundleStore, roots: RootCauseMemo, prelim: str, symptom_name: str,
                 search: bool = False) -> str | None:
    """The existing bundle of preliminary key ``prelim``: known to ``roots``, else, with
    ``search``, found among the store's bundles of any symptom; None where there is none."""
    known = roots.get(prelim)
    if known is None and search:
        known = find_root_cause(store, symptom_name, prelim)
    return known if known is not None and store.exists(known) else None


def count_hit(store: BundleStore, roots: RootCauseMemo, known: str, prelim: str,
              first_wave: str, symptom_name: str) -> Handled:
    """A hit on bundle ``known``, counted in ``store`` as a sighting of ``symptom_name``."""
    store.add_hit(known, symptom=symptom_name)
    roots.remember(prelim, known)
    return Handled("hit", known, signature=first_wave)
