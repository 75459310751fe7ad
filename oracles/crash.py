"""Crash oracles: the target raised (``optimizer-error``) or its worker died by a signal
while optimizing (``optimizer-abort``)."""

from __future__ import annotations

import signal as _signal

from oracles.base import Finding, Outcome, Symptom, register


def signal_name(number: int | None) -> str:
    """``SIGSEGV`` for 11, ``signal 99`` for an unknown number."""
    try:
        return _signal.Signals(number).name  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return f"signal {number}"


def optimizer_error(outcome: Outcome) -> list[Finding]:
    """The target raised an exception while optimizing."""
    if outcome.status == "error" and outcome.stage == "optimize":
        return [Finding("optimizer-error", "optimize", outcome.error or "exception",
                        {"traceback": outcome.traceback or ""})]
    return []


def optimizer_abort(outcome: Outcome) -> list[Finding]:
    """The worker died by a signal (SIGSEGV, SIGABRT, ...) while the target optimized, or
    its process ended without one (the target called ``exit``: ``outcome.error`` holds the
    exit code)."""
    if outcome.status == "signal" and outcome.stage == "optimize":
        if outcome.signal is None:
            return [Finding("optimizer-abort", "optimize",
                            f"worker process ended ({outcome.error or 'no exit code'})",
                            {"signal": None, "signal_name": None})]
        name = signal_name(outcome.signal)
        return [Finding("optimizer-abort", "optimize", f"worker killed by {name}",
                        {"signal": outcome.signal, "signal_name": name})]
    return []


register(Symptom(
    "optimizer-abort", 10, ("optimize",), optimizer_abort, "crashes the process",
    "`optimize` returns; the process is not killed by a signal.", fault="crash",
    corpus_column="crash_or_invalid", words="process crash",
    no_model_because="the target crashed (its process died by a signal)", check="crash",
    reproduced="a signal kills the call's process (or the call raises)"))
register(Symptom(
    "optimizer-error", 20, ("optimize",), optimizer_error, "raises an exception",
    "`optimize` returns an optimized model.", fault="crash", corpus_column="crash_or_invalid",
    words="exception", no_model_because="the target raised an exception", check="crash",
    reproduced="the call raises (or a signal kills its process)"))
