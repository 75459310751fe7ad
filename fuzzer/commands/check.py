"""``optfuzz check MODEL``: one differential test; exit 0 clean, 1 on a finding, 2 on bad
usage or input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from fuzzer.commands import options
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


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to ``app``."""

    @app.command()
    @options.grouped
    def check(
        model: Path = typer.Argument(..., help="An .onnx file."),
        target: options.TargetArgs = None, inputs: options.InputArgs = None,
        execution: options.ExecutionArgs = None,
        reduce_seconds: options.ReduceSeconds = 120.0,
        save: Path = typer.Option(None, help="Write a bundle for a finding into this folder."),
    ) -> None:
        """Run one differential test of MODEL and print the verdict."""
        from rich.console import Console

        from fuzzer.execution.case import TestCase
        from fuzzer.handling.growth import after_timeout
        from fuzzer.handling.outcome import FindingPolicy
        from fuzzer.handling.record import handle_finding
        from fuzzer.modelio.graphs import count_nodes
        from fuzzer.modelio.load import load_model, parse_model
        from fuzzer.store.folder import BundleStore

        adapter, config = target.resolve()
        loaded = load_model(model)
        case = TestCase(adapter.name, config, {"kind": "file", "path": str(model.resolve())},
                        model_bytes=loaded.SerializeToString(), input_seed=inputs.seed,
                        input_shapes=inputs.shapes(), keep=True)
        timeout = case_timeout(execution.timeout, count_nodes(loaded.graph))
        with options.sandbox(timeout, execution.memory_limit_gib) as sandbox:
            result = sandbox.run(case)
            console = Console()
            if result.unusable:
                raise InputError(f"{model}: the original model is unusable ({result.unusable})")
            if not result.findings:
                console.print(f"[green]clean[/green]: {model} ({result.nodes[0]} -> "
                              f"{result.nodes[1]} nodes)")
                raise typer.Exit(0)
            show(console, result.findings)
            explained = after_timeout(sandbox, case, result, reduce_seconds)
            if explained is not None:  # the time of smaller forms explains the timeout
                case, result = explained
                console.print(f"a {count_nodes(parse_model(case.model_bytes).graph)}-node form "
                              "of the model times as:", highlight=False)
                show(console, result.findings)
            if save is not None:
                handled = handle_finding(BundleStore(save), sandbox, case, result,
                                         adapter.version(),
                                         FindingPolicy(reduce_seconds=reduce_seconds))
                if handled is not None and handled.bundle_id is not None:
                    console.print(f"bundle: {save / handled.bundle_id} ({handled.status})")
                elif handled is not None:
                    console.print(f"no bundle: {handled.status} {handled.name}".rstrip(),
                                  highlight=False)
        raise typer.Exit(1)


def show(console: Any, findings: list[Any]) -> None:
    """Print one line per finding, and the timing table of a ``slow`` one."""
    from fuzzer.report.timing import timing_text

    for finding in findings:
        console.print(f"[red]{finding.symptom}[/red] ({finding.stage}): {finding.message}",
                      highlight=False, soft_wrap=True)
        if finding.detail.get("table"):
            console.print(timing_text(finding.detail), highlight=False, soft_wrap=True)
