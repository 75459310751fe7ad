"""``optfuzz coverage``: for each pass of a target, the share of cases generated for it
(motif choice biased to the pass) whose single-pass run changed the graph, against the same
model run through the target with no pass (so the target's own load and save are not
counted as the pass's work).

Cases run in :class:`fuzzer.execution.sandbox.Sandbox` workers; the optimizer never runs in this
process. A pass below the reach threshold is named with a reason: a known one from
:data:`generators.motifs.reach.UNREACHABLE` or the target's own
(:meth:`fuzzer.targets.base.Target.unreachable`), no motif targeting it, or what its cases
ended in (most frequent finding or unusable-seed reason).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError
from fuzzer.targets import DEFAULT_TARGET

#: A pass counts as reached when at least this share of its cases changed the graph.
REACH_THRESHOLD = 0.05


def graph_changed(result: Any, baseline: Any = None) -> bool:
    """Whether the pass changed the main graph (nodes, initializers, inputs, outputs,
    value_info) — model-level rewrites such as the IR version do not count. The graph is
    compared with the ``baseline`` run's optimized graph (the same model through the
    target with no pass: what the target's own load and save do, such as onnxruntime
    dropping unused initializers, is not the pass's work) where that run has one, else
    with the input graph. Needs the cases' artifacts (``keep=True``); falls back to
    ``result.changed`` without them."""
    import onnx

    arts = result.artifacts
    if not result.changed or arts is None or arts.optimized is None:
        return bool(result.changed)
    base = baseline.artifacts if baseline is not None else None
    reference = base.optimized if base is not None and base.optimized is not None \
        else arts.model
    before = onnx.load_model_from_string(reference).graph.SerializeToString()
    after = onnx.load_model_from_string(arts.optimized).graph.SerializeToString()
    return before != after


def pass_coverage(passes: list[str], cases: int, *, generator: str = "v2", jobs: int = 2,
                  seed: int = 0, timeout: float = 30.0, progress: Any = None,
                  target: str = DEFAULT_TARGET) -> dict[str, dict[str, Any]]:
    """Run ``cases`` generated cases per pass, single pass, no fixed point, in a
    :class:`fuzzer.execution.sandbox.Sandbox` of ``jobs`` workers.

    Returns:
        ``{pass: {"cases", "changed", "share", "unusable", "findings": {symptom: n},
        "motifs": [names], "reached": bool, "reason": str | None}}``; ``share`` is
        changed / usable cases (0 when none was usable).
    """
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.targets import get_target
    from generators.hints import GenerationHints
    from generators.motifs import motifs_for_pass
    from generators.motifs.reach import UNREACHABLE

    adapter = get_target(target)
    report: dict[str, dict[str, Any]] = {}
    known = {**UNREACHABLE, **adapter.unreachable()}  # pass -> why nothing can reach it
    with Sandbox(jobs=jobs, timeout=timeout) as sb:
        for name in passes:
            hints = adapter.generation_hints(
                adapter.with_passes(adapter.default_config(), [name]))

            def case(i: int, run: list[str], hints: GenerationHints = hints) -> TestCase:
                return TestCase(
                    target=target, config=adapter.with_passes(adapter.default_config(), run),
                    source={"kind": "generated", "seed": seed + i, "generator": generator,
                            **hints.as_source()}, input_seed=seed + i, keep=True)

            futures = [(sb.submit(case(i, [name])), sb.submit(case(i, [])))
                       for i in range(cases)]
            changed = unusable = 0
            symptoms: Counter[str] = Counter()
            messages: Counter[str] = Counter()
            unusable_why: Counter[str] = Counter()
            for fut, base in futures:
                res = fut.result()
                if res.unusable:
                    unusable += 1
                    unusable_why[res.unusable.splitlines()[0][:120]] += 1
                    continue
                changed += graph_changed(res, base.result())
                for f in res.findings:
                    symptoms[f.symptom] += 1
                    messages[f"{f.symptom}: {f.message.splitlines()[0][:120]}"] += 1
            usable = cases - unusable
            share = changed / usable if usable else 0.0
            reached = share >= REACH_THRESHOLD
            reason = None
            motifs = [m.name for hint in hints.passes for m in motifs_for_pass(hint)]
            if not reached:
                if name in known:
                    reason = known[name]
                elif not motifs:
                    reason = "no motif targets this pass"
                elif messages:
                    msg, n = messages.most_common(1)[0]
                    reason = f"{n}/{cases} cases end in {msg}"
                elif unusable_why:
                    msg, n = unusable_why.most_common(1)[0]
                    reason = f"{n}/{cases} unusable seeds: {msg}"
                else:
                    reason = "the pass left every generated graph unchanged"
            report[name] = {"cases": cases, "changed": changed, "share": round(share, 4),
                            "unusable": unusable, "findings": dict(symptoms),
                            "motifs": motifs, "reached": reached, "reason": reason}
            if progress is not None:
                progress(name, report[name])
    return report


def coverage(
    cases: int = typer.Option(200, "--cases", min=1, help="Cases per pass."),
    json_file: Path = typer.Option(None, "--json", help="Also write the report here."),
    generator: str = typer.Option("v2", metavar="NAME", help="Graph generator."),
    passes: str = typer.Option(None, help="Comma list of passes (default: all "
                               "available)."),
    jobs: options.Jobs = 2,
    seed: options.Seed = 0,
    target: options.TargetName = None,
    code: bool = typer.Option(False, "--code", help="Line and branch coverage of the "
                              "target's own pass sources, per case source and together: "
                              "a native target's coverage build (`optfuzz target build "
                              "TARGET --coverage`), coverage.py over a Python target's "
                              "rewrite modules."),
    source: str = typer.Option("generated,corpus,mutated", "--source",
                               help="With --code: comma list of generated, corpus, "
                               "mutated."),
    out: Path = typer.Option(Path("coverage"), "--out",
                             help="With --code: folder for counter files, the plot "
                             "(coverage.png) and the JSON table."),
    schema: bool = typer.Option(False, "--schema", help="Share of schema feature pairs "
                                "(dtypes, attributes, optional inputs and outputs, "
                                "opsets) of each rewrite's anchor ops that its "
                                "generated cases exercise."),
) -> None:
    """Share of generated cases per pass of a target where the pass changed the graph;
    with --code, the target's own line and branch coverage; with --schema, the share
    of schema feature pairs of each rewrite's anchor ops its cases exercise."""
    from rich.console import Console
    from rich.table import Table

    from fuzzer.targets import cli_target
    from generators import GENERATORS

    if code:
        from fuzzer.commands.coverage_code import run_code_coverage

        run_code_coverage(cli_target(target), options.parse_list(source) or [], cases,
                          out, jobs=jobs, seed=seed)
        return
    if generator not in GENERATORS:
        raise InputError(f"unknown generator {generator!r}; known: {', '.join(GENERATORS)}")
    adapter = cli_target(target)
    available = adapter.available_passes()
    chosen = [p.strip() for p in passes.split(",") if p.strip()] if passes else available
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        raise InputError(f"unknown pass(es): {', '.join(unknown)}")
    if schema:
        from fuzzer.commands.coverage_schema import run_schema_coverage

        run_schema_coverage(adapter, chosen, cases, json_file, generator=generator,
                            seed=seed)
        return
    console = Console()
    with console.status("running ...") as status:
        def progress(name: str, row: dict[str, Any]) -> None:
            status.update(f"{name}: {row['share']:.0%} changed")

        report = pass_coverage(chosen, cases, generator=generator, jobs=jobs, seed=seed,
                               progress=progress, target=adapter.name)
    table = Table(title=f"pass coverage, generator {generator}, {cases} cases per pass")
    table.add_column("pass", no_wrap=True)
    table.add_column("changed", justify="right")
    table.add_column("unusable", justify="right")
    table.add_column("findings")
    table.add_column("status")
    for name, row in report.items():
        found = ", ".join(f"{k} {v}" for k, v in sorted(row["findings"].items()))
        status_text = "[green]reached[/]" if row["reached"] else \
            f"[red]unreachable[/]: {row['reason']}"
        table.add_row(name, f"{row['share']:.0%}", str(row["unusable"]), found or "-",
                      status_text)
    console.print(table)
    reached = sum(r["reached"] for r in report.values())
    console.print(f"{reached}/{len(report)} passes reached (>= {REACH_THRESHOLD:.0%} of "
                  "cases changed the graph)")
    if json_file is not None:
        json_file.write_text(json.dumps({"generator": generator, "cases": cases,
                                         "threshold": REACH_THRESHOLD,
                                         "passes": report}, indent=2))


COMMAND = Command("coverage", coverage)
