"""``optfuzz check MODEL``: one differential test; exit 0 clean, 1 on a finding, 2 on bad
usage or input."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands import options
from fuzzer.errors import InputError


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

        from fuzzer.campaign.record import FindingPolicy, handle_finding
        from fuzzer.execution.case import TestCase
        from fuzzer.modelio.load import load_model
        from fuzzer.store.folder import BundleStore

        adapter, config = target.resolve()
        loaded = load_model(model)
        case = TestCase(adapter.name, config, {"kind": "file", "path": str(model.resolve())},
                        model_bytes=loaded.SerializeToString(), input_seed=inputs.seed,
                        input_shapes=inputs.shapes())
        with execution.sandbox() as sandbox:
            result = sandbox.run(case)
            console = Console()
            if result.unusable:
                raise InputError(f"{model}: the original model is unusable ({result.unusable})")
            if not result.findings:
                console.print(f"[green]clean[/green]: {model} ({result.nodes[0]} -> "
                              f"{result.nodes[1]} nodes)")
                raise typer.Exit(0)
            for finding in result.findings:
                console.print(f"[red]{finding.symptom}[/red] ({finding.stage}): "
                              f"{finding.message}", highlight=False)
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
