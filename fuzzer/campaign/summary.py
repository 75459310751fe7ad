"""summary.html of a campaign folder: totals, findings and throughput over time, cases per
pass and per motif, findings per symptom, and the bundles, in one self-contained page
(inline SVG charts, no scripts)."""

from __future__ import annotations

import html
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
    """Label/value rows of the campaign totals (campaign.json dict)."""
    elapsed = float(stats.get("elapsed_s", 0.0))
    cases = int(stats.get("cases", 0))
    return [
        ["target", _esc(stats.get("target", "?"))], ["seed", stats.get("seed", 0)],
        ["elapsed (s)", round(elapsed, 1)], ["cases", cases],
        ["cases per second", round(cases / elapsed, 1) if elapsed else 0],
        ["usable cases", stats.get("usable", 0)], ["unusable seeds", stats.get("unusable", 0)],
        ["findings", sum(stats.get("findings", {}).values())],
        ["new bundles", stats.get("bundles_new", 0)], ["hits on known bundles", stats.get(
            "hits", 0)],
    ]


def timeline_charts(timeline: list[dict[str, Any]]) -> list[str]:
    """Findings-over-time and throughput-over-time SVGs from campaign.json's timeline
    (points ``{"t": s, "cases": n, "findings": n, "bundles": n}``); none for < 2 points."""
    if len(timeline) < 2:
        return []
    minutes = [p["t"] / 60 for p in timeline]
    found = line_chart(minutes, {"findings": [p["findings"] for p in timeline],
                                 "new bundles": [p["bundles"] for p in timeline]},
                       "campaign time (min)", "count", "Findings over time")
    rates = [0.0] + [
        (b["cases"] - a["cases"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 0.0
        for a, b in zip(timeline[:-1], timeline[1:], strict=True)]
    speed = line_chart(minutes, {"cases/s": rates}, "campaign time (min)", "cases per second",
                       "Throughput over time")
    return [found, speed]


def bundle_rows(folder: Path) -> list[list[Any]]:
    """One row per bundle in ``folder``: linked id, symptom, passes, hits, nodes."""
    from fuzzer.store.folder import BundleStore

    metas, _ = BundleStore(folder).read_all()
    metas.sort(key=lambda m: (-m.hits, m.id))
    rows = []
    for meta in metas[:MAX_BUNDLES_LISTED]:
        passes = meta.passes_shown()
        link = f'<a href="{_esc(meta.id)}/report.md">{_esc(meta.id)}</a>'
        rows.append([link, _esc(meta.symptom), _esc(", ".join(passes[:4]) + (
            " ..." if len(passes) > 4 else "")), meta.hits,
            f"{meta.nodes.original} &rarr; {meta.nodes.minimized}"])
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
    bundles = bundle_rows(folder)
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
    parts += [f"<h2>Bundles ({len(bundles)}{'+' * (len(bundles) >= MAX_BUNDLES_LISTED)})</h2>",
              _table(["id", "symptom", "passes", "hits", "nodes"], bundles),
              "</body></html>\n"]
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
