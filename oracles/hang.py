"""Hang oracle: a stage after the reference run outlived the per-case timeout."""

from __future__ import annotations

from oracles.base import Finding, Outcome, Symptom, register


def hang(outcome: Outcome) -> list[Finding]:
    """Past the per-case timeout (seconds) while optimizing, validating or running."""
    if outcome.status == "timeout" and outcome.stage not in ("materialize", "reference"):
        return [Finding("hang", outcome.stage,
                        f"no result after {outcome.timeout:g} s in stage {outcome.stage}",
                        {"timeout_s": outcome.timeout})]
    return []


register(Symptom(
    "hang", 30, ("optimize", "validate", "load", "execute"), hang, "does not terminate",
    "`optimize` returns within seconds.", confirm=True, reducible=False,
    severity_class="hang", corpus_column="crash_or_invalid", words="hang",
    no_model_because="the target did not finish within the per-case timeout", check="timeout",
    reproduced="the call does not finish", reduce_options=("--timeout", "5")))
