"""``optfuzz coverage --schema``: per rewrite (pass and its motifs) the share of schema
feature pairs of the motifs' anchor ops that the cases generated for the pass exercised
(:mod:`generators.schema`), read from the generated models themselves.

Cases are generated in this process as a campaign generates them for the pass (the
target's motif hints for a configuration running that pass alone); nothing runs the target.

Two shares are reported per (pass, motif), and they answer different questions:

- **cases**: what the ``--cases`` consecutive seeds from ``--seed`` exercised. A pass's
  pool of motifs is drawn in rotation and about half of each motif's draws take a step of
  the walk of its plan (:func:`generators.generate.walk_row`), so a motif whose walk has
  more steps than the varied draws it gets cannot reach every pair at that number of cases;
- **walked**: what the draws exercise when each step of the walk of the motif's plan is
  taken once (the seeds of :func:`generators.generate.walk_seeds`, generated with the same
  hints; a step is a plan row, aimed at one anchor op for a motif of variants:
  :mod:`generators.schema.walk`): whether the generator *can* take each feasible pair.
  Its uncovered reasons are what the motif's pattern cannot take.

Where the walk leaves a row short, the reasons of the pairs left tell whether the anchor ops
cannot take them (their schema, onnxruntime, the target's own refusal, the rewrite's pattern:
:mod:`generators.schema.limits`) or the generator fell short (a gap): a row whose walk
covers every pair but limits is counted apart, with its limits by kind.

A pass whose hint pins the models' opset (the version converter's ``from`` opset) counts as
feasible only the pairs a model of that opset can hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: a rewrite counts as covered at this share of its feasible feature pairs.
PAIR_TARGET = 0.95


def draws(seeds: Any, generator: str, hints: Any, failed: list[str]) -> list[Any]:
    """The models of ``seeds`` under ``hints``; a seed the generator raises on (a bug of the
    generator) is left out and named in ``failed`` (``"seed N: Type: message"``)."""
    from generators.generate import generate

    out = []
    for seed in seeds:
        try:
            out.append(generate(seed, generator, hints))
        except Exception as exc:  # counted and named: the rest is measured
            failed.append(f"seed {seed}: {type(exc).__name__}: {exc}"[:300])
    return out


def walked(motif: str, generator: str, hints: Any,
           failed: list[str] | None = None) -> dict[str, Any]:
    """The coverage of ``motif`` when its plan is walked once under ``hints``: the models of
    :func:`generators.generate.walk_seeds` (one per walk step), measured for that motif
    alone (``MotifCoverage.as_json()`` plus ``"rows"``: the steps the walk reached); seeds
    the generator raises on go to ``failed`` (:func:`draws`)."""
    from generators.generate import walk_seeds
    from generators.schema.measure import schema_coverage

    seeds = walk_seeds(motif, generator, hints)
    cov = schema_coverage(draws(seeds.values(), generator, hints,
                                failed if failed is not None else []), [motif],
                          hints.opset)
    return {**cov[motif].as_json(), "rows": len(seeds)}


def schema_report(target: Any, passes: list[str], cases: int, *, generator: str = "v2",
                  seed: int = 0, progress: Any = None,
                  walk: bool = True) -> dict[str, dict[str, Any]]:
    """Generate ``cases`` models per pass of ``target`` and measure feature-pair coverage
    of each motif the pass's hints draw; with ``walk``, also the coverage when each
    motif's plan is walked once (:func:`walked`).

    Returns:
        ``{pass: {"hints": [...], "motifs": {motif: MotifCoverage.as_json(), with
        "walked": walked(...) when ``walk``}, "unanchored": [motif names without
        anchors], "failed": {"count": draws the generator raised on, "first": up to 3 of
        them, by seed}}}`` (a draw that raises is a generator bug: it is counted, not fatal).
    """
    from generators.motifs import motifs_for_pass
    from generators.schema.measure import schema_coverage

    report: dict[str, dict[str, Any]] = {}
    for name in passes:
        hints = target.generation_hints(target.with_passes(target.default_config(), [name]))
        motifs = list(dict.fromkeys(m.name for h in hints.passes for m in motifs_for_pass(h)))
        anchored = [m for m in motifs if _anchors(m)]
        failed: list[str] = []
        made = draws(range(seed, seed + cases), generator, hints, failed) if anchored else []
        cov = schema_coverage(made, anchored, hints.opset)
        rows = {m: c.as_json() for m, c in cov.items()}
        if walk:
            for m, row in rows.items():
                row["walked"] = walked(m, generator, hints, failed)
        report[name] = {"hints": list(hints.passes), "motifs": rows,
                        "unanchored": [m for m in motifs if m not in anchored],
                        "failed": {"count": len(failed), "first": failed[:3]}}
        if progress is not None:
            progress(name, report[name])
    return report


def _anchors(motif: str) -> tuple[str, ...]:
    from generators.motifs import MOTIFS

    return MOTIFS[motif].anchors


def _top(reasons: dict[str, int]) -> str:
    """The most frequent reason that is a gap of the generator (not a limit of the
    anchors: :func:`generators.schema.limits.limit_of`), with its pair count."""
    from generators.schema.limits import limit_of

    top = next(((why, n) for why, n in reasons.items() if not limit_of(why)), None)
    return f"{top[1]} pairs: {top[0]}" if top else "-"


def _limits(row: dict[str, Any]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in row["limits"].items())


def _empty(row: dict[str, Any]) -> bool:
    """Whether no pair of the row is feasible at all (a pass whose hint pins an opset where
    the motif's anchors take nothing, say): every pair is infeasible with its reason."""
    return row["pairs"] == 0 and bool(row["infeasible"])


def _status(row: dict[str, Any]) -> str:
    """Covered at the cases; else, where the walk covers, how many steps the walk has for
    how many varied draws; else, where the walk covers all but what the anchor ops cannot
    take, those limits by kind; else the walk's main gap. A row with no feasible pair says
    the main reason."""
    if _empty(row):
        top = max(row["infeasible"].items(), key=lambda kv: kv[1])
        return f"[blue]no feasible pair: {top[1]} pairs: {top[0]}[/]"
    if row["share"] >= PAIR_TARGET:
        return "[green]covered[/]"
    walk = row.get("walked")
    if walk is None:
        return f"[yellow]{_top(row['uncovered_reasons'])}[/]"
    if walk["share"] >= PAIR_TARGET:
        return (f"[cyan]walk covers: {walk['rows']} walk steps, {row['varied']} varied "
                "draws at these cases[/]")
    if walk["accounted"] >= PAIR_TARGET:
        return f"[blue]walk covers all the anchors take; cannot take: {_limits(walk)}[/]"
    return f"[yellow]{_top(walk['uncovered_reasons'])}[/]"


def run_schema_coverage(target: Any, passes: list[str], cases: int, json_file: Path | None,
                        *, generator: str = "v2", seed: int = 0) -> dict[str, Any]:
    """Print the table of :func:`schema_report` for ``passes`` of ``target`` (a rich table:
    pass, motif, anchor ops, draws, covered / feasible pairs, share at the cases, share
    walked, and the main reason for what stays uncovered or infeasible) and write it as
    JSON to ``json_file``."""
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
                    ("walked", {"justify": "right"}), ("infeasible", {"justify": "right"}),
                    ("status", {})):
        table.add_column(col, **kw)
    rows = covered = walk_covered = limited = empty = 0
    for name, entry in report.items():
        if not entry["motifs"]:
            why = "no motif declares anchor ops" if entry["unanchored"] else \
                "no motif targets this pass"
            table.add_row(name, ", ".join(entry["unanchored"]) or "-", "-", "-", "-", "-",
                          "-", "-", f"[dim]{why}[/]")
            continue
        for motif, row in entry["motifs"].items():
            rows += 1
            if _empty(row):
                empty += 1
                table.add_row(name, motif, ", ".join(row["anchors"]),
                              f"{row['draws']} ({row['varied']})", "0/0", "-", "-",
                              str(sum(row["infeasible"].values())), _status(row))
                continue
            covered += row["share"] >= PAIR_TARGET
            walk = row.get("walked")
            walk_covered += walk is not None and walk["share"] >= PAIR_TARGET
            limited += walk is not None and walk["share"] < PAIR_TARGET <= walk["accounted"]
            infeasible = sum(row["infeasible"].values())
            table.add_row(name, motif, ", ".join(row["anchors"]),
                          f"{row['draws']} ({row['varied']})",
                          f"{row['covered']}/{row['pairs']}", f"{row['share']:.0%}",
                          "-" if walk is None else
                          f"{walk['covered']}/{walk['pairs']} {walk['share']:.0%}",
                          str(infeasible), _status(row))
    console.print(table)
    console.print(f"{covered}/{rows} (pass, motif) rows at >= {PAIR_TARGET:.0%} of their "
                  f"feasible feature pairs at {cases} cases per pass; {walk_covered}/{rows} "
                  "when each walk step is drawn once (walked), and "
                  f"{limited} more where the walk covers all but pairs the anchor ops cannot "
                  "take (their schema, onnxruntime, the target, the rewrite's pattern); "
                  f"{empty} "
                  "with no feasible pair (every pair infeasible, with its reason); draws in "
                  "parentheses took a plan row; infeasible pairs (no valid model holds them) "
                  "and every uncovered pair's reason are in the JSON")
    failed = [(n, e["failed"]) for n, e in report.items() if e["failed"]["count"]]
    for name, entry in failed:
        console.print(f"[red]{entry['count']} draw(s) of pass {name} failed to generate[/] "
                      f"(a generator bug), first: {entry['first'][0]}", highlight=False)
    doc = {"target": target.name, "generator": generator, "cases": cases, "seed": seed,
           "threshold": PAIR_TARGET, "passes": report}
    if json_file is not None:
        json_file.write_text(json.dumps(doc, indent=1))
    return doc
