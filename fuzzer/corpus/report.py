"""The DiTOX-style corpus table: per task category, the share of models with each kind of
symptom over every configuration they were run with.

Columns (a registry: a new column is one entry in :data:`COLUMNS`) follow DiTOX's table:
models, % with an optimizer crash or invalid model, % with an output discrepancy, % with metric
drift. A symptom's record names the column that counts it
(:attr:`oracles.base.Symptom.corpus_column`); a model counts in a column when any of its
configurations produced one of the column's symptoms. Unusable models (the original does not
run) are listed apart, once, with the reason.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from fuzzer.registry import Registry
from oracles import load_oracles

#: column key -> heading.
COLUMNS: Registry[str] = Registry("column", {
    "crash_or_invalid": "% optimizer crash or invalid model",
    "output_discrepancy": "% output discrepancy",
    "metric_drift": "% metric drift",
})

#: task -> table category (detection and segmentation share a row, as in the issue's list).
CATEGORIES: dict[str | None, str] = {
    "classification": "classification",
    "detection": "detection/segmentation",
    "segmentation": "detection/segmentation",
    "text": "text",
    "audio": "audio",
    None: "other",
}


@dataclass
class ModelRecord:
    """Everything observed for one corpus model: ``findings`` as (pass list label, symptom,
    message) triples, ``unusable`` reason, ``cases`` run and ``seconds`` the worker spent on
    them (sum of stage timings)."""

    id: str
    task: str | None
    origin: str
    cases: int = 0
    findings: list[tuple[str, str, str]] = field(default_factory=list)
    unusable: str | None = None
    seconds: float = 0.0

    @property
    def symptoms(self) -> set[str]:
        """The distinct symptoms seen on this model."""
        return {symptom for _, symptom, _ in self.findings}


def build_table(records: list[ModelRecord]) -> dict[str, Any]:
    """Aggregate records into ``{"rows": [...], "total": {...}, "unusable": [...],
    "symptoms": {symptom: cases}}``; each row has ``category``, ``models`` (usable ones) and a
    percentage (0-100, one decimal) per column."""
    counted = {key: {s.name for s in load_oracles().values() if s.corpus_column == key}
               for key in COLUMNS}
    by_category: dict[str, list[ModelRecord]] = defaultdict(list)
    for rec in records:
        if rec.unusable is None:
            by_category[CATEGORIES.get(rec.task, "other")].append(rec)

    def row(name: str, recs: list[ModelRecord]) -> dict[str, Any]:
        out: dict[str, Any] = {"category": name, "models": len(recs),
                               "cases": sum(r.cases for r in recs)}
        for key, symptoms in counted.items():
            hit = sum(1 for r in recs if r.symptoms & symptoms)
            out[key] = round(100.0 * hit / len(recs), 1) if recs else 0.0
        return out

    order = list(dict.fromkeys(CATEGORIES.values()))
    rows = [row(name, by_category[name]) for name in order if by_category.get(name)]
    usable = [r for r in records if r.unusable is None]
    symptoms = Counter(s for r in records for _, s, _ in r.findings)
    return {"rows": rows, "total": row("all", usable),
            "unusable": [{"model": r.id, "reason": r.unusable} for r in records if r.unusable],
            "symptoms": dict(symptoms)}


def to_markdown(table: dict[str, Any]) -> str:
    """The table as GitHub markdown (one line per category, then the total)."""
    heads = ["category", "models", *COLUMNS.values()]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in [*table["rows"], table["total"]]:
        cells = [r["category"], str(r["models"]), *(f"{r[k]:.1f}" for k in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    if table["unusable"]:
        lines.append("")
        lines.append(f"{len(table['unusable'])} unusable model(s), skipped:")
        lines.extend(f"- {u['model']}: {u['reason']}" for u in table["unusable"])
    return "\n".join(lines) + "\n"


def to_json(table: dict[str, Any], records: list[ModelRecord], meta: dict[str, Any]) -> str:
    """The table, the per-model records and run facts (``meta``) as indented JSON."""
    models = [{"model": r.id, "task": r.task, "origin": r.origin, "cases": r.cases,
               "seconds": round(r.seconds, 3), "unusable": r.unusable,
               "findings": [{"passes": p, "symptom": s, "message": m} for p, s, m in r.findings]}
              for r in records]
    return json.dumps({"meta": meta, "table": table, "models": models}, indent=1)
