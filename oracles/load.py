"""Load oracle: onnxruntime loads the original but not the optimized model."""

from __future__ import annotations

from oracles.base import Finding, Outcome, oracle
from oracles.crash import signal_name


@oracle("load-failure")
def load_failure(outcome: Outcome) -> list[Finding]:
    """onnxruntime refused the optimized model (an exception, or a signal while loading)."""
    if outcome.stage != "load":
        return []
    if outcome.status == "error":
        return [Finding("load-failure", "load", outcome.error or "load failed")]
    if outcome.status == "signal":
        return [Finding("load-failure", "load",
                        f"onnxruntime killed by {signal_name(outcome.signal)} while loading",
                        {"signal": outcome.signal})]
    return []
