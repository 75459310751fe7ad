"""summary.html of a campaign folder, headed by the folder's name: totals (cases per second as
the live screen and campaign.log say it, :func:`fuzzer.campaign.stats.cases_per_second`; the
time since the last new bundle), findings, root causes and throughput over time (root causes
on their own axis: a campaign makes thousands of findings and a handful of root causes; each
run's finish marked and the time after it shaded), bundles per symptom and per culprit (the
pass at fault), cases per motif, the root causes (one row per bundle, linked to its
report.md), the documented behaviour that was counted, not bundled (one row per behaviour),
and the provenance of each run (start, command line, host, OS and architecture, versions);
in one self-contained page (inline SVG charts, no scripts)."""

from __future__ import annotations

import html
import shlex
from pathlib import Path
from typing import Any

from fuzzer.campaign.progress import clock
from fuzzer.campaign.stats import bundle_symptom, documented_name, loop_seconds, rate_text
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
    loop = loop_seconds(stats)
    pending = stats.get("pending") or {}
    last = stats.get("last_bundle_at")
    rows = [
        ["target", _esc(stats.get("target", "?"))], ["seed", stats.get("seed", 0)],
        ["elapsed (s)", round(elapsed, 1)], ["cases", cases],
        [f"cases per second (cases / {loop:.1f} s of case loop)", rate_text(cases, loop)],
        ["usable cases", stats.get("usable", 0)], ["unusable seeds", stats.get("unusable", 0)],
        ["findings (documented behaviour included)", sum(stats.get("findings", {}).values())],
        ["root causes (new bundles)", stats.get("bundles_new", 0)],
        ["last new bundle", "none" if last is None else
         f"at {clock(last)}, {clock(elapsed - last)} before the end"],
        ["distinct first-wave signatures of the same findings",
         len(stats.get("signatures") or [])],
        ["hits on known bundles", stats.get("hits", 0)],
        ["documented behaviour (not bundled)", sum(documented_counts(stats).values())],
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


def documented_counts(stats: dict[str, Any]) -> dict[str, int]:
    """Findings per documented behaviour, one entry per behaviour
    (:func:`fuzzer.campaign.stats.documented_name` merges the spellings of older
    campaign.json files), most first."""
    counts: dict[str, int] = {}
    for name, count in (stats.get("documented") or {}).items():
        counts[documented_name(name)] = counts.get(documented_name(name), 0) + int(count)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def after_finish(stats: dict[str, Any]) -> list[tuple[float, float, float]]:
    """``(finish, last case, end)`` of each run of campaign.json's ``runs``, in minutes of
    campaign time: its time limit (or the end of its case loop where that came first), the
    end of its case loop (the cases in flight at the finish back) and the end of the
    findings handled after it."""
    spans = []
    for run in stats.get("runs") or []:
        if isinstance(run, dict) and isinstance(run.get("finish"), int | float):
            finish = float(run["finish"])
            last_case = max(finish, float(run.get("loop_end", finish)))
            end = max(last_case, float(run.get("end", last_case)))
            spans.append((finish / 60, last_case / 60, end / 60))
    return spans


def timeline_charts(timeline: list[dict[str, Any]],
                    after: list[tuple[float, float, float]] | None = None) -> list[str]:
    """Findings, root causes and throughput over time, three SVGs (each count on its own
    axis), from campaign.json's timeline (points ``{"t": s, "cases": n, "findings": n,
    "bundles": n, "signatures": n}``, ``bundles`` being the new bundles: root causes, drawn
    beside the distinct first-wave signatures where the points have them); every time axis
    marks each ``(finish, last case, end)`` of ``after`` (minutes, :func:`after_finish`);
    none for < 2 points."""
    timeline = [p for i, p in enumerate(timeline)  # one point per moment: the last
                if i + 1 == len(timeline) or timeline[i + 1]["t"] > p["t"]]
    if len(timeline) < 2:
        return []
    minutes = [p["t"] / 60 for p in timeline]
    axis, spans = "campaign time (min)", after or []
    found = line_chart(minutes, {"findings": [p["findings"] for p in timeline]}, axis,
                       "findings", "Findings over time", spans)
    series = {"root causes": [p.get("bundles", 0) for p in timeline]}
    if any("signatures" in p for p in timeline):
        series["first-wave signatures"] = [p.get("signatures", 0) for p in timeline]
    roots = line_chart(minutes, series, axis, "root causes (bundles)",
                       "Root causes over time", spans)
    rates = [0.0] + [
        (b["cases"] - a["cases"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 0.0
        for a, b in zip(timeline[:-1], timeline[1:], strict=True)]
    speed = line_chart(minutes, {"cases/s": rates}, axis, "cases per second",
                       "Throughput over time", spans)
    return [found, roots, speed]


def culprit(meta: Any) -> str:
    """The pass a bundle blames: its breaking pass, else its responsible passes, else
    ``(not localized)``."""
    if meta.breaking_pass:
        return str(meta.breaking_pass)
    if meta.responsible_passes:
        return " + ".join(meta.responsible_passes)
    return "(not localized)"


def bundle_counts(metas: list[Any]) -> tuple[dict[str, int], dict[str, int]]:
    """Bundles per symptom they were first seen with (the bundle's id, as the live screen
    counts them) and bundles per culprit (:func:`culprit`) of the bundles' ``metas``."""
    by_symptom: dict[str, int] = {}
    by_culprit: dict[str, int] = {}
    for meta in metas:
        symptom, blamed = bundle_symptom(meta.id), culprit(meta)
        by_symptom[symptom] = by_symptom.get(symptom, 0) + 1
        by_culprit[blamed] = by_culprit.get(blamed, 0) + 1
    return by_symptom, by_culprit


def bundle_charts(metas: list[Any]) -> list[str]:
    """The two bar charts of :func:`bundle_counts` (bundles, not cases: a case is no
    evidence against every pass it ran); none without bundles."""
    if not metas:
        return []
    by_symptom, by_culprit = bundle_counts(metas)
    return [bar_chart(by_symptom, "Bundles per symptom (first seen)", "bundles"),
            bar_chart(by_culprit, "Bundles per culprit (the pass at fault)", "bundles")]


def root_cause_rows(folder: Path, metas: list[Any] | None = None) -> list[list[Any]]:
    """One row per bundle in ``folder`` (``metas``, where read already), most severe
    symptom class first, then by hits: id linked to its report.md, breaking pass
    (+ enabling passes; the responsible or configured passes for a bundle without one),
    symptom, hits, variants, trigger, and node counts (original -> minimized, subgraphs
    included)."""
    from fuzzer.store.folder import BundleStore
    from fuzzer.triage.rows import model_nodes, severity_class, severity_rank
    from fuzzer.triage.table import pass_label, trigger_label

    store = BundleStore(folder)
    metas = list(store.read_all()[0] if metas is None else metas)
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


def folder_name(folder: Path) -> str:
    """The campaign folder's own name (``crashes``), never the path of the machine that
    wrote the page."""
    return Path(folder).resolve().name or str(folder)


def render_summary(folder: Path, stats: dict[str, Any]) -> str:
    """The HTML text of summary.html for campaign folder ``folder`` and its campaign.json
    dict ``stats``."""
    from fuzzer.store.folder import BundleStore

    metas = BundleStore(folder).read_all()[0]
    charts = timeline_charts(stats.get("timeline", []), after_finish(stats))
    charts += bundle_charts(metas)
    if stats.get("per_motif"):
        charts.append(bar_chart(stats["per_motif"], "Cases per motif", "cases"))
    reasons = sorted(stats.get("unusable_reasons", {}).items(), key=lambda kv: -kv[1])[:15]
    documented = list(documented_counts(stats).items())
    roots = root_cause_rows(folder, metas)
    name = folder_name(folder)
    parts = [
        f"<!doctype html><html><head><meta charset=utf-8><title>optfuzz campaign "
        f"{_esc(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>optfuzz campaign {_esc(name)}</h1>",
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
