"""Metadata oracle: IR version, default-domain opset, or the graph interface (input and
output names and element types) changed where an optimizer must keep them.

Initializers listed as graph inputs (IR < 4) may disappear from the inputs; every other input
must stay. A configuration that changes the interface on purpose (the target says so through
``Outcome.extra["interface_may_change"]``) is exempt.
"""

from __future__ import annotations

from typing import Any

from oracles.base import Finding, Outcome, Symptom, register


def _opset(model: Any, domain: str = "") -> int | None:
    for item in model.opset_import:
        if item.domain in (domain, "ai.onnx" if domain == "" else domain):
            return item.version
    return None


def _interface(values: Any) -> list[tuple[str, int]]:
    return [(v.name, v.type.tensor_type.elem_type) for v in values]


def metadata_change(outcome: Outcome) -> list[Finding]:
    """Compare IR version, opset and the graph interface of original and optimized model."""
    if outcome.status != "ok" or outcome.original is None or outcome.optimized is None:
        return []
    if outcome.extra.get("interface_may_change", False):
        return []
    before, after = outcome.original, outcome.optimized
    if before.ir_version != after.ir_version:
        return [Finding("metadata-change", "compare",
                        f"IR version {before.ir_version} became {after.ir_version}")]
    if _opset(before) != _opset(after):
        return [Finding("metadata-change", "compare",
                        f"default opset {_opset(before)} became {_opset(after)}")]
    if before.graph.input == after.graph.input and before.graph.output == after.graph.output:
        return []  # the interface as it was, field for field (most cases; compared in C)
    inits = {t.name for t in before.graph.initializer}
    kept_in = [v for v in _interface(before.graph.input) if v[0] not in inits]
    now_in = [v for v in _interface(after.graph.input) if v[0] not in inits]
    if kept_in != now_in:
        return [Finding("metadata-change", "compare", "graph inputs changed",
                        {"before": kept_in, "after": now_in})]
    out_before, out_after = _interface(before.graph.output), _interface(after.graph.output)
    if len(out_before) == len(out_after) and out_before != out_after:
        return [Finding("metadata-change", "compare", "graph output names or types changed",
                        {"before": out_before, "after": out_after})]
    return []


register(Symptom(
    "metadata-change", 100, ("compare",), metadata_change, "changes the model's interface",
    "IR version, opset imports and graph inputs/outputs stay as they were.",
    severity_class="interface", promise=True))
