"""Oracles: pure functions that judge one test's Outcome, and the symptom registry.

Each module of this package holds one concern and registers the :class:`oracles.base.Symptom`
record(s) it detects with :func:`oracles.base.register`: detection, severity, wording,
signature and reproduction policy in one place. :func:`load_oracles` imports every module of
the package, so a new symptom is one new file. :func:`judge` runs every registered oracle.

In: an :class:`oracles.base.Outcome` (what one differential test observed). Out: findings,
most severe first. Nothing here imports the rest of optfuzz but the registry mechanism
(:mod:`fuzzer.registry`): repro.py carries these modules' source verbatim, and that one's.
"""

from __future__ import annotations

import importlib
import pkgutil

from fuzzer.registry import Registry
from oracles.base import REGISTRY, STAGES, Finding, Outcome, Symptom, register

_loaded = False


def load_oracles() -> Registry[Symptom]:
    """Import every module of this package once; return the registry (name -> Symptom)."""
    global _loaded
    if not _loaded:
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True
    return REGISTRY


def symptom(name: str) -> Symptom:
    """The registered record of symptom ``name``.

    Raises:
        UnknownName: a ``KeyError``: no oracle registers that symptom (the message lists the
            known ones).
    """
    return load_oracles()[name]


def symptom_names() -> tuple[str, ...]:
    """Every registered symptom, most severe first."""
    return tuple(s.name for s in sorted(load_oracles().values(), key=lambda s: s.severity))


def shows(finding: Finding, *names: str) -> bool:
    """Whether ``finding`` is of one of the symptoms ``names``, each looked up in the
    registry (:func:`symptom`): the way code outside this package asks for a symptom by
    name, so that a misspelt or retired name fails instead of never matching.

    Raises:
        KeyError: a name no oracle registers.
    """
    return any(finding.symptom == symptom(name).name for name in names)


def judge(outcome: Outcome) -> list[Finding]:
    """Run every registered oracle on ``outcome``; return all findings, most severe first
    (a crash hides the comparisons that could not run)."""
    registry = load_oracles()
    findings: list[Finding] = []
    for record in registry.values():
        findings.extend(record.detect(outcome))
    return sorted(findings, key=lambda f: registry[f.symptom].severity)


__all__ = ["STAGES", "Finding", "Outcome", "Symptom", "judge", "load_oracles", "register",
           "shows", "symptom", "symptom_names"]
