"""``optfuzz coverage --schema``: per rewrite (pass and its motifs) the share of schema
feature pairs of the motifs' anchor ops that the cases generated for the pass exercised
(:mod:`generators.schema`), read from the generated models themselves.

Cases are generated in this process as a campaign generates them for the pass (the
target's motif hints for a configuration running that pass alone); nothing runs the target.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: a rewrite counts as covered at this share of its feasible feature pairs.
PAIR_TARGET = 0.95


def schema_report(target: Any, passes: list[str], cases: int, *, generator: str = "v2",
                  seed: int = 0, progress: Any = None) -> dict[str, dict[str, Any]]:
    """Generate ``cases`` models per pass of ``target`` and measure feature-pair coverage
    of each motif the pass's hints draw.

    Returns:
        ``{pass: {"hints": [...], "motifs": {motif: MotifCoverage.as_json()},
        "unanchored": [motif names without anchors]}}``.
    """
    from generators.generate import generate
    from generators.motifs import motifs_for_pass
    from generators.schema.measure import schema_coverage

    report: dict[str, dict[str, Any]] = {}
    for name in passes:
        hints = target.generation_hints(target.with_passes(target.default_config(), [name]))
        motifs = list(dict.fromkeys(m.name for h in hints.passes for m in motifs_for_pass(h)))
        anchored = [m for m in motifs if _anchors(m)]
        draws = [generate(seed + i, generator, hints) for i in range(cases)] if anchored \
            else []
        cov = schema_coverage(draws, anchored)
        report[name] = {"hints": list(hints.passes),
                        "motifs": {m: c.as_json() for m, c in cov.items()},
                        "unanchored": [m for m in motifs if m not in anchored]}
        if progress is not None:
            progress(name, report[name])
    return report


def _anchors(motif: str) -> tuple[str, ...]:
    from generators.motifs import MOTIFS

    return MOTIFS[motif].anchors


def _status(row: dict[str, Any]) -> str:
    if row["share"] >= PAIR_TARGET:
        return "[green]covered[/]"
    reasons = row["uncovered_reasons"]
    top = next(iter(reasons.items()), None)
    why = f"{top[1]} pairs: {top[0]}" if top else "-"
    return f"[yellow]{why}[/]"


def run_schema_coverage(target: Any, passes: list[str], cases: int, json_file: Path | None,
                        *, generator: str = "v2", seed: int = 0) -> dict[str, Any]:
    """Print the table of :func:`schema_report` for ``passes`` of ``target`` (a rich table:
    pass, motif, anchor ops, draws, covered / feasible pairs, share, and the main reason
    for what stays uncovered or infeasible) and write it as JSON to ``json_file``."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    with console.status("generating ...") as status:
        report = schema_report(target, passes, cases, generator=generator, seed=seed,
                               progress=lambda n, r: status.update(f"{n}: done"))
    table = Table(title=f"{target.name}: schema feature pairs of anchor ops per rewrite, "
                        f"generator {generator}, {cases} cases per pass")
    for col, kw in (("pass", {"no_wrap": True}), ("motif", {"no_wrap": True}),
                    ("anchors", {}), ("draws", {"justify": "right"}),
                    ("pairs", {"justify": "right"}), ("share", {"justify": "right"}),
                    ("infeasible", {"justify": "right"}), ("status", {})):
        table.add_column(col, **kw)
    rows = covered = 0
    for name, entry in report.items():
        if not entry["motifs"]:
            why = "no motif declares anchor ops" if entry["unanchored"] else \
                "no motif targets this pass"
            table.add_row(name, ", ".join(entry["unanchored"]) or "-", "-", "-", "-", "-",
                          "-", f"[dim]{why}[/]")
            continue
        for motif, row in entry["motifs"].items():
            rows += 1
            covered += row["share"] >= PAIR_TARGET
            infeasible = sum(row["infeasible"].values())
            table.add_row(name, motif, ", ".join(row["anchors"]),
                          f"{row['draws']} ({row['varied']})",
                          f"{row['covered']}/{row['pairs']}", f"{row['share']:.0%}",
                          str(infeasible), _status(row))
    console.print(table)
    console.print(f"{covered}/{rows} (pass, motif) rows at >= {PAIR_TARGET:.0%} of their "
                  "feasible feature pairs; draws in parentheses took a plan row; "
                  "infeasible pairs (no valid model holds them) are in the JSON with reasons")
    doc = {"target": target.name, "generator": generator, "cases": cases, "seed": seed,
           "threshold": PAIR_TARGET, "passes": report}
    if json_file is not None:
        json_file.write_text(json.dumps(doc, indent=1))
    return doc
