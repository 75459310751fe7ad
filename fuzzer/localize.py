"""Localization of the pass(es) responsible for a finding."""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.case import CaseResult, TestCase
from oracles.base import Finding


@dataclass
class Localization:
    """Result of localization: the responsible passes (None if unknown) and the optimizer
    runs spent finding them."""

    passes: list[str] | None
    runs: int = 0


def localize(sandbox: object, case: TestCase, result: CaseResult,
             finding: Finding) -> Localization:
    """The responsible passes of ``finding``: the pass of a single-pass configuration."""
    passes = case.config.get("passes")
    if passes and len(passes) == 1:
        return Localization(list(passes), 0)
    return Localization(None, 0)
