"""``optfuzz check MODEL``: one differential test, judged as a campaign judges it.

The verdict is ``clean``; ``documented`` (the finding shows behaviour the target documents,
:meth:`fuzzer.targets.base.Target.documented`, which a campaign counts under its name in
campaign.json and never bundles); or ``finding``. Exit 0 clean or documented, 1 on a
finding, 2 on bad usage or input. ``--json`` prints the verdict as one JSON object on
stdout and nothing else.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError

#: seconds of per-case timeout per node of the model where ``--timeout`` is left at its
#: default: a large valid model gets time in proportion before it counts as a ``hang``
#: (the default up to 1,500 nodes, 400 s at 20,000), and a slow optimization that finishes
#: is judged by the ``slow`` oracle with its numbers.
SECONDS_PER_NODE = 0.02


def case_timeout(timeout: float, nodes: int) -> float:
    """The per-case timeout (seconds) of ``optfuzz check`` on a model of ``nodes`` nodes:
    ``timeout`` where the user chose one, else the default scaled by
    :data:`SECONDS_PER_NODE`."""
    if timeout != options.DEFAULT_TIMEOUT:
        return timeout
    return max(timeout, SECONDS_PER_NODE * nodes)


@dataclass
class Verdict:
    """What ``optfuzz check`` found.

    Attributes:
        model: the model file.
        target: the target's name.
        config: the target configuration run.
        status: ``clean``, ``documented`` or ``finding``.
        findings: the oracles' findings, most severe first.
        nodes: ``(original, optimized)`` main-graph node counts (optimized None where the
            target returned nothing).
        documented: the documented behaviour's name (status ``documented``).
        documented_source: where the target documents it ("" where unknown).
        smaller: ``(nodes, findings)`` of the smaller form of the model whose timing
            explains a timeout, where one does.
        bundle: ``--save``'s outcome: the bundle folder, or why none was written.
        timings: seconds per stage of the test, and ``total`` for the whole check.
        versions: :func:`fuzzer.store.versions.software_versions`.
    """

    model: str
    target: str
    config: dict[str, Any]
    status: str
    findings: list[Any]
    nodes: tuple[int | None, int | None]
    documented: str | None = None
    documented_source: str = ""
    smaller: tuple[int, list[Any]] | None = None
    bundle: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 clean or documented, 1 on a finding."""
        return int(self.status == "finding")

    def to_json(self) -> dict[str, Any]:
        """The verdict as ``--json`` prints it."""
        return {
            "model": self.model, "target": self.target, "config": self.config,
            "verdict": self.status, "exit_code": self.exit_code,
            "symptoms": [f.symptom for f in self.findings],
            "message": self.findings[0].message if self.findings else "",
            "findings": [f.to_json() for f in self.findings],
            "documented": self.documented, "documented_source": self.documented_source,
            "nodes": {"original": self.nodes[0], "optimized": self.nodes[1]},
            "smaller_form": None if self.smaller is None else {
                "nodes": self.smaller[0], "findings": [f.to_json() for f in self.smaller[1]]},
            "bundle": self.bundle,
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "versions": self.versions,
        }


@options.grouped
def check(
    model: Path = typer.Argument(..., help="An .onnx file."),
    target: options.TargetArgs = None, inputs: options.InputArgs = None,
    execution: options.ExecutionArgs = None,
    reduce_seconds: options.ReduceSeconds = 120.0,
    save: Path = typer.Option(None, metavar="FOLDER",
                              help="Write a bundle for a finding into this folder."),
    load_inputs: Path = typer.Option(
        None, "--load-inputs", metavar="FILE.npz", help="Feed the model these arrays "
        "(by input name) instead of synthesized inputs.", rich_help_panel=options.INPUTS),
    atol: float = typer.Option(
        None, "--atol", min=0.0, help="Absolute tolerance of the output comparison, "
        "scaled by max(1, max |expected|) (default: by dtype, 1e-4 for float32)."),
    rtol: float = typer.Option(
        None, "--rtol", min=0.0, help="Relative tolerance of the output comparison "
        "(default: by dtype, 1e-3 for float32)."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as one JSON "
                                 "object on stdout, and nothing else."),
) -> None:
    """Run one differential test of MODEL and print the verdict: clean, documented
    behaviour of the target (a campaign counts it and writes no bundle), or a finding.
    Exit 0 clean or documented, 1 on a finding, 2 on bad usage or input."""
    tolerance = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
    if tolerance and save is not None:
        raise InputError("--atol/--rtol judge this check only (a bundle's repro.py judges "
                         "with the campaign's tolerances); leave out --save or them")
    if load_inputs is not None and inputs.input_shapes:
        raise InputError("--load-inputs gives the feeds and their shapes; leave out "
                         "--input-shapes")
    verdict = run_check(model, target, inputs, execution, reduce_seconds, save,
                        load_inputs, tolerance)
    if as_json:
        typer.echo(json.dumps(verdict.to_json(), default=str))
    else:
        show_verdict(verdict)
    raise typer.Exit(verdict.exit_code)


def run_check(model: Path, target: options.TargetArgs, inputs: options.InputArgs,
              execution: options.ExecutionArgs, reduce_seconds: float, save: Path | None,
              load_inputs: Path | None, tolerance: dict[str, float]) -> Verdict:
    """Run the test of ``model`` and, for a finding with ``save``, its handling as a
    campaign's (a bundle, or why none).

    Raises:
        InputError: a bad model, feeds file or option, or an original model onnxruntime
            cannot run.
    """
    from fuzzer.commands.progress import sandbox_activity
    from fuzzer.execution.case import TestCase
    from fuzzer.handling.growth import after_timeout
    from fuzzer.modelio.graphs import count_nodes
    from fuzzer.modelio.load import load_model, parse_model
    from fuzzer.store.npz import load_feeds
    from fuzzer.store.versions import software_versions
    from oracles.tolerance import TOLERANCE

    started = time.perf_counter()
    adapter, config = target.resolve()
    loaded = load_model(model)
    feeds = load_feeds(load_inputs, loaded) if load_inputs is not None else None
    case = TestCase(adapter.name, config, {"kind": "file", "path": str(model.resolve())},
                    model_bytes=loaded.SerializeToString(), feeds=feeds,
                    input_seed=inputs.seed, input_shapes=inputs.shapes(), keep=True,
                    oracle_overrides={TOLERANCE: tolerance} if tolerance else None)
    timeout = case_timeout(execution.timeout, count_nodes(loaded.graph))
    with options.sandbox(timeout, execution.memory_limit_gib) as sandbox, \
            sandbox_activity(sandbox, f"checking {model.name} ({count_nodes(loaded.graph)} "
                             f"nodes, timeout {timeout:g} s)"):
        result = sandbox.run(case)
        if result.unusable:
            raise InputError(f"{model}: the original model is unusable ({result.unusable})")
        verdict = Verdict(str(model), adapter.name, config, "clean", result.findings,
                          result.nodes, timings=dict(result.timings),
                          versions=software_versions(adapter.version()))
        if result.findings and result.documented:
            behaviour = adapter.documented(result.findings[0], config)
            verdict.status, verdict.documented = "documented", result.documented
            verdict.documented_source = behaviour.source if behaviour is not None else ""
        elif result.findings:
            verdict.status = "finding"
            explained = after_timeout(sandbox, case, result, reduce_seconds)
            if explained is not None:  # the time of smaller forms explains the timeout
                case, again = explained
                verdict.smaller = (count_nodes(parse_model(case.model_bytes).graph),
                                   again.findings)
                result = again
            if save is not None:
                _save(verdict, save, sandbox, case, result, adapter, reduce_seconds)
    verdict.timings["total"] = time.perf_counter() - started
    return verdict


def _save(verdict: Verdict, folder: Path, sandbox: Any, case: Any, result: Any,
          adapter: Any, reduce_seconds: float) -> None:
    """Handle the finding as a campaign does, into the bundle folder ``folder``: a bundle,
    or why none (documented behaviour found on the way makes the verdict ``documented``)."""
    from fuzzer.handling.outcome import FindingPolicy
    from fuzzer.handling.record import handle_finding
    from fuzzer.store.folder import BundleStore

    handled = handle_finding(BundleStore(folder), sandbox, case, result, adapter.version(),
                             FindingPolicy(reduce_seconds=reduce_seconds))
    if handled is None:
        return
    if handled.status == "documented":
        verdict.status, verdict.documented = "documented", handled.name
    elif handled.bundle_id is not None:
        verdict.bundle = f"bundle: {folder / handled.bundle_id} ({handled.status})"
    else:
        verdict.bundle = f"no bundle: {handled.status} {handled.said}".rstrip()


def show_verdict(verdict: Verdict) -> None:
    """Print ``verdict`` for a person: one line per finding (and the timing table of a
    ``slow`` one), the documented behaviour's name, the bundle."""
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    if verdict.status == "clean":
        console.print(f"[green]clean[/green]: {escape(verdict.model)} ({verdict.nodes[0]} -> "
                      f"{verdict.nodes[1]} nodes)", highlight=False)
        return
    show(console, verdict.findings)
    if verdict.smaller is not None:
        console.print(f"a {verdict.smaller[0]}-node form of the model times as:",
                      highlight=False)
        show(console, verdict.smaller[1])
    if verdict.bundle is not None:
        console.print(escape(verdict.bundle), highlight=False)
    if verdict.status == "documented":
        where = f" ({verdict.documented_source})" if verdict.documented_source else ""
        console.print(f"[yellow]documented[/yellow]: {escape(str(verdict.documented))}"
                      f"{escape(where)}: behaviour the target documents, counted by a "
                      "campaign and never bundled", highlight=False, soft_wrap=True)


def show(console: Any, findings: list[Any]) -> None:
    """Print one line per finding, and the timing table of a ``slow`` one."""
    from rich.markup import escape

    from fuzzer.report.timing import timing_text

    for finding in findings:
        console.print(f"[red]{finding.symptom}[/red] ({finding.stage}): "
                      f"{escape(finding.message)}", highlight=False, soft_wrap=True)
        if finding.detail.get("table"):
            console.print(timing_text(finding.detail), highlight=False, soft_wrap=True)


COMMAND = Command("check", check)
