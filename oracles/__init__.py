"""Oracles: pure functions that judge one test's Outcome and return zero or more Findings.

Each concern lives in its own module and registers itself with :func:`oracles.base.oracle`;
:func:`judge` runs every registered oracle. A new oracle is one new module listed in
``ORACLE_MODULES``.
"""

from __future__ import annotations

import importlib

from oracles.base import ORACLES, SYMPTOMS, Finding, Outcome, oracle

#: Modules whose import registers an oracle (one concern each).
ORACLE_MODULES: tuple[str, ...] = (
    "oracles.crash",
    "oracles.hang",
    "oracles.validity",
    "oracles.onnxruntime_failure",
    "oracles.outputs",
    "oracles.bloat",
    "oracles.metadata",
    "oracles.metrics",
)

_loaded = False


def load_oracles() -> dict:
    """Import every oracle module once and return the registry (symptom -> function)."""
    global _loaded
    if not _loaded:
        for name in ORACLE_MODULES:
            importlib.import_module(name)
        _loaded = True
    return ORACLES


def judge(outcome: Outcome) -> list[Finding]:
    """Run every registered oracle on ``outcome``; return all findings, most severe first.

    Severity follows the order of the symptom list in design.md: a crash hides the
    comparisons that could not run.
    """
    findings: list[Finding] = []
    for fn in load_oracles().values():
        findings.extend(fn(outcome))
    return sorted(findings, key=lambda f: SYMPTOMS.index(f.symptom))


__all__ = ["Finding", "Outcome", "judge", "load_oracles", "oracle", "ORACLES"]
