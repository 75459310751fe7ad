"""summary.html of a campaign folder: totals, findings, root causes and throughput over time
(root causes on their own axis: a campaign makes thousands of findings and a handful of
root causes), cases per pass and per motif, findings per symptom, the root causes (one row
per bundle, linked to its report.md), the documented behaviour that was counted, not
bundled, and the provenance of each run (start, command line, host, OS and architecture,
versions); in one self-contained page (inline SVG charts, no scripts)."""

from __future__ import annotations

import html
import shlex
from pathlib import Path
from typing import Any

from fuzzer.report.plots import bar_chart, line_chart
from fuzzer.store.folder import write_atomic

SUMMARY_FILE = "summary.html"
MAX_BUNDLES_LISTED = 500

_STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;
font-size:13px;text-align:left}th{background:#f0f3f8}.num{text-align:right}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts>div{flex:1 1 480px}svg{max-width:100%;
height:auto}h2{border-bottom:1px solid #ddd;margin-top:1.4em}"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f"<td class=num>{_esc(c)}</td>" if isinstance(c, (int, float)) else f"<td>{c}</td>"
        for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def totals_rows(stats: dict[str, Any]) -> list[list[Any]]:
    """Label/value rows of the campaign totals (campaign.json dict), with the pending
    findings left and the command that finishes them where there are any."""
    elapsed = float(stats.get("elapsed_s", 0.0))
    cases = int(stats.get("cases", 0))
    pending = stats.get("pending") or {}
    rows = [
        ["target", _esc(stats.get("target", "?"))], ["seed", stats.get("seed", 0)],
        ["elapsed (s)", round(elapsed, 1)], ["cases", cases],
        ["cases per second", round(cases / elapsed, 1) if elapsed else 0],
        ["usable cases", stats.get("usable", 0)], ["unusable seeds", stats.get("unusable", 0)],
        ["findings", sum(stats.get("findings", {}).values())],
        ["root causes (new bundles)", stats.get("bundles_new", 0)],
        ["distinct first-wave signatures of the same findings",
         len(stats.get("signatures") or [])],
        ["hits on known bundles", stats.get("hits", 0)],
        ["documented behaviour (not bundled)", sum((stats.get("documented") or {}).values())],
    ]
    if pending:
        rows.append([f"pending findings (finish: {_esc(pending.get('command', ''))})",
                     pending.get("findings", 0)])
    return rows


#: the columns of the provenance table: header -> the value of a run record
#: (:func:`fuzzer.campaign.provenance.run_provenance`).
PROVENANCE_COLUMNS: dict[str, Any] = {
    "started (UTC)": lambda r: r.get("started", ""),
    "command": lambda r: shlex.join(str(a) for a in r.get("command") or []),
    "host": lambda r: r.get("host", ""),
    "OS / architecture": lambda r: f"{r.get('os', '')} / {r.get('machine', '')}",
    "optfuzz": lambda r: r.get("versions", {}).get("optfuzz", ""),
    "target": lambda r: f"{r.get('target', '')} {r.get('versions', {}).get('target', '')}",
    **{name: (lambda r, n=name: r.get("versions", {}).get(n, ""))
       for name in ("onnx", "onnxruntime", "numpy", "python")},
}


def provenance_rows(stats: dict[str, Any]) -> list[list[Any]]:
    """One row per run of the campaign (campaign.json's ``provenance``), first to latest,
    with the columns of :data:`PROVENANCE_COLUMNS`, escaped."""
    return [[_esc(value(run)) for value in PROVENANCE_COLUMNS.values()]
            for run in stats.get("provenance") or [] if isinstance(run, dict)]


def timeline_charts(timeline: list[dict[str, Any]]) -> list[str]:
    """Findings, root causes and throughput over time, three SVGs (each count on its own
    axis), from campaign.json's timeline (points ``{"t": s, "cases": n, "findings": n,
    "bundles": n, "signatures": n}``, ``bundles`` being the new bundles: root causes, drawn
    beside the distinct first-wave signatures where the points have them); none for < 2
    points."""
    if len(timeline) < 2:
        return []
    minutes = [p["t"] / 60 for p in timeline]
    found = line_chart(minutes, {"findings": [p["findings"] for p in timeline]},
                       "campaign time (min)", "findings", "Findings over time")
    series = {"root causes": [p.get("bundles", 0) for p in timeline]}
    if any("signatures" in p for p in timeline):
        series["first-wave signatures"] = [p.get("signatures", 0) for p in timeline]
    roots = line_chart(minutes, series,
                       "campaign time (min)", "root causes (bundles)",
                       "Root causes over time")
    rates = [0.0] + [
        (b["cases"] - a["cases"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 0.0
        for a, b in zip(timeline[:-1], timeline[1:], strict=True)]
    speed = line_chart(minutes, {"cases/s": rates}, "campaign time (min)", "cases per second",
                       "Throughput over time")
    return [found, roots, speed]


def root_cause_rows(folder: Path) -> list[list[Any]]:
    """One row per bundle in ``folder``, most severe symptom class first, then by hits:
    id linked to its report.md, breaking pass (+ enabling passes; the responsible or
    configured passes for a bundle without one), symptom, hits, variants, trigger, and
    node counts (original -> minimized, subgraphs included)."""
    from fuzzer.store.folder import BundleStore
    from fuzzer.triage.rows import model_nodes, severity_class, severity_rank
    from fuzzer.triage.table import pass_label, trigger_label

    store = BundleStore(folder)
    metas, _ = store.read_all()
    metas.sort(key=lambda m: (severity_rank(severity_class(m.symptom)), -m.hits, m.id))
    rows = []
    for meta in metas[:MAX_BUNDLES_LISTED]:
        where = store.path(meta.id)
        link = f'<a href="{_esc(meta.id)}/report.md">{_esc(meta.id)}</a>'
        nodes = (model_nodes(where / "original.onnx", meta.nodes.original),
                 model_nodes(where / "model.onnx", meta.nodes.minimized))
        rows.append([link, _esc(pass_label(meta.breaking_pass, meta.enabling_passes,
                                           meta.passes_shown(), meta.localized)),
                     _esc(meta.symptom), meta.hits, len(meta.variants),
                     _esc(trigger_label(meta.trigger)), f"{nodes[0]} &rarr; {nodes[1]}"])
    return rows


def render_summary(folder: Path, stats: dict[str, Any]) -> str:
    """The HTML text of summary.html for campaign folder ``folder`` and its campaign.json
    dict ``stats``."""
    charts = timeline_charts(stats.get("timeline", []))
    if stats.get("findings"):
        charts.append(bar_chart(stats["findings"], "Findings per symptom", "findings"))
    if stats.get("per_pass"):
        charts.append(bar_chart(stats["per_pass"], "Cases per pass", "cases",
                                stats.get("findings_per_pass"), "cases with a finding"))
    if stats.get("per_motif"):
        charts.append(bar_chart(stats["per_motif"], "Cases per motif", "cases"))
    reasons = sorted(stats.get("unusable_reasons", {}).items(), key=lambda kv: -kv[1])[:15]
    documented = sorted((stats.get("documented") or {}).items(), key=lambda kv: -kv[1])
    roots = root_cause_rows(folder)
    parts = [
        f"<!doctype html><html><head><meta charset=utf-8><title>optfuzz campaign "
        f"{_esc(folder.name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>optfuzz campaign: {_esc(folder)}</h1>",
        "<h2>Totals</h2>", _table(["", "value"], totals_rows(stats)),
        "<h2>Charts</h2><div class=charts>",
        *(f"<div>{svg}</div>" for svg in charts), "</div>",
    ]
    if reasons:
        parts += ["<h2>Unusable seeds</h2>",
                  _table(["reason", "count"], [[_esc(r), n] for r, n in reasons])]
    parts += [f"<h2>Root causes ({len(roots)}{'+' * (len(roots) >= MAX_BUNDLES_LISTED)})</h2>",
              _table(["bundle (report)", "breaking pass (+ enabling)", "symptom", "hits",
                      "variants", "trigger", "nodes"], roots)]
    if documented:
        parts += ["<h2>Documented behaviour (not bundled)</h2>",
                  _table(["behaviour", "findings"], [[_esc(n), c] for n, c in documented])]
    runs = provenance_rows(stats)
    if runs:
        parts += ["<h2>Provenance (one row per run)</h2>",
                  _table(list(PROVENANCE_COLUMNS), runs)]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_summary(folder: Path, stats_json: dict[str, Any]) -> Path:
    """Write ``folder/summary.html`` atomically from the campaign.json dict ``stats_json``
    and the bundles in ``folder``; return its path.

    Raises:
        OSError: the file cannot be written.
    """
    path = Path(folder) / SUMMARY_FILE
    write_atomic(path, render_summary(Path(folder), stats_json).encode())
    return path
