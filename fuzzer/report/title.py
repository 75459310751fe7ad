"""The title of a bundle's issue draft: distinct, searchable, and what a maintainer would
write.

With a root-cause key (:mod:`fuzzer.report.fault`) the title names the culprit and its fault
in words, the condition the trigger probes found (``with opset 8 or lower``), the pass that
only exposed the damage, and what a user sees::

    onnxoptimizer: fuse_consecutive_squeezes removes Squeeze wrongly (invalid model)

The fault's words render the key's kind and signature one to one, and a folder holds one
bundle per key, so no two bundles of a folder share a title. A bundle without a key (schema
1, or written before the key existed) keeps the title of its breaking pass, responsible
passes or pass list and its symptom.
"""

from __future__ import annotations

import re

from fuzzer.findings.rootcause import CRASH_STATE, FRAMEWORK, NAME_CLASH, UNLOCALIZED
from fuzzer.report.fault import RootCause, fault_words
from fuzzer.store.meta import BundleMeta
from oracles import load_oracles
from oracles import symptom as symptom_record

MAX_PASSES_IN_TITLE = 3
#: a trigger longer than this goes into the body, not the title.
MAX_TRIGGER_IN_TITLE = 90
#: a probes' condition (``needs ...``) longer than this stays out of the title.
MAX_CONDITION_IN_TITLE = 60
_CLAUSE = re.compile(r"^(?:when|if|whenever)\s+(?P<rest>.+)$", re.I | re.S)


def symptom_words(meta: BundleMeta) -> str:
    """What a user of the target sees of the bundle's fault, in a few words (the
    parenthesis that ends the title): its symptom record's
    (:meth:`oracles.base.Symptom.seen_as`), the symptom's name for one not registered."""
    record = load_oracles().get(meta.symptom, None)
    return record.seen_as(meta.message) if record is not None else meta.symptom


def pass_phrase(meta: BundleMeta) -> str:
    """The pass part of the title for a bundle without a breaking pass: the responsible
    pass(es), or the configured pass list marked as not localized."""
    passes = meta.passes_shown()
    shown = ", ".join(passes[:MAX_PASSES_IN_TITLE])
    if len(passes) > MAX_PASSES_IN_TITLE:
        shown += f" (+{len(passes) - MAX_PASSES_IN_TITLE} more)"
    if not passes:
        return "the default passes"
    if not meta.localized:
        return f"pass list [{shown}]"
    return shown


def breaking_pass(meta: BundleMeta) -> str | None:
    """The bundle's breaking pass where it is localized (a breaking pass without localized
    passes is not trusted), else None."""
    return meta.breaking_pass if meta.localized else None


def trigger_clause(meta: BundleMeta) -> str | None:
    """``"when <condition>"`` where the bundle's trigger reads as a condition ("when ...",
    "if ...") short enough for a title; None otherwise (the trigger then opens the body)."""
    trigger = " ".join((meta.trigger or "").split()).rstrip(".")
    match = _CLAUSE.match(trigger)
    if not match or len(trigger) > MAX_TRIGGER_IN_TITLE:
        return None
    return f"when {match.group('rest')}"


def condition(meta: BundleMeta) -> str | None:
    """The trigger probes' ``needs X`` as ``with X``, the condition that follows the
    culprit in the title, where it is short and not the name clash (which the fault's words
    already say); None otherwise."""
    trigger = " ".join((meta.trigger or "").split()).rstrip(".")
    if not trigger.startswith("needs ") or NAME_CLASH in trigger:
        return None
    needs = trigger[len("needs "):]
    return f"with {needs}" if len(needs) <= MAX_CONDITION_IN_TITLE else None


def _subject(meta: BundleMeta, cause: RootCause) -> str:
    """Who is at fault: the culprit pass, the target with no pass, the pass list where
    localization found none, or a cause outside any pass."""
    shared = cause.shared_cause
    if shared:
        return f"[{shared}, whatever pass runs]"
    if cause.culprit == FRAMEWORK:
        return "[with no pass: its own load and save]"
    if cause.culprit == UNLOCALIZED:
        return pass_phrase(meta)
    if cause.culprit == CRASH_STATE:  # keyed by its frames: the pass it was first seen in
        return breaking_pass(meta) or pass_phrase(meta)
    return cause.culprit


def _plain_title(meta: BundleMeta) -> str:
    """The title of a bundle without a root-cause key: ``<target>: <breaking pass> <what
    goes wrong>[ when <trigger>] (<symptom>)``, or ``<target>: <pass(es)> <what goes wrong>
    (<symptom>)`` without a breaking pass."""
    what = symptom_record(meta.symptom).title
    breaking = breaking_pass(meta)
    if not breaking:
        return f"{meta.target.name}: {pass_phrase(meta)} {what} ({meta.symptom})"
    clause = trigger_clause(meta)
    when = f" {clause}" if clause else ""
    return f"{meta.target.name}: {breaking} {what}{when} ({meta.symptom})"


def issue_title(meta: BundleMeta) -> str:
    """The title (see the module docstring): ``<target>: <culprit>[ with <what the trigger
    probes found it needs>] <fault>[ when <trigger>][, exposed by <pass>] (<what a user
    sees>)`` where meta.json has a root-cause key, else the title of the breaking pass (or
    passes) and the symptom."""
    cause = RootCause.parse(meta.root_cause)
    if cause is None:
        return _plain_title(meta)
    clause, needs = trigger_clause(meta), condition(meta)
    parts = [f"{meta.target.name}: {_subject(meta, cause)}"]
    if needs:
        parts.append(f" {needs}")
    parts.append(f" {fault_words(cause)}")
    if clause:
        parts.append(f" {clause}")
    exposed = " ".join((meta.exposed_by or "").split())
    if exposed and exposed != cause.culprit:
        parts.append(f", exposed by {exposed}")
    return "".join(parts) + f" ({symptom_words(meta)})"
