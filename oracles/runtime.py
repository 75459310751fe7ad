"""Runtime oracle: onnxruntime runs the original but fails on the optimized model."""

from __future__ import annotations

from oracles.base import Finding, Outcome, oracle
from oracles.crash import signal_name


@oracle("runtime-failure")
def runtime_failure(outcome: Outcome) -> list[Finding]:
    """Running the optimized model raised, or killed the worker by a signal."""
    if outcome.stage != "execute":
        return []
    if outcome.status == "error":
        return [Finding("runtime-failure", "execute", outcome.error or "run failed")]
    if outcome.status == "signal":
        return [Finding("runtime-failure", "execute",
                        f"onnxruntime killed by {signal_name(outcome.signal)} while running",
                        {"signal": outcome.signal})]
    return []
