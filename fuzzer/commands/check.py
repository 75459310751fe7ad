"""``optfuzz check MODEL``: one differential test; exit 0 clean, 1 on a finding, 2 on bad
usage or input."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.errors import InputError


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to ``app``."""

    @app.command()
    def check(
        model: Path = typer.Argument(..., help="An .onnx file."),
        passes: str = typer.Option(None, help="Comma list of passes (default: the target's "
                                   "default list)."),
        fixed_point: bool = typer.Option(False, "--fixed-point", help="Run to a fixed point."),
        target: str = typer.Option("onnxoptimizer", help="System under test."),
        input_shapes: list[str] = typer.Option(None, "--input-shapes",
                                               help="Dynamic dims, e.g. input:1,3,224,224."),
        seed: int = typer.Option(0, help="Seed of the synthesized inputs."),
        timeout: float = typer.Option(30.0, help="Timeout, seconds."),
        save: Path = typer.Option(None, help="Write a bundle for a finding into this folder."),
    ) -> None:
        """Run one differential test of MODEL and print the verdict."""
        from rich.console import Console

        from fuzzer.campaign.record import FindingPolicy, handle_finding
        from fuzzer.commands.fuzz import parse_list
        from fuzzer.execution.case import TestCase
        from fuzzer.execution.sandbox import Sandbox
        from fuzzer.modelio.load import load_model
        from fuzzer.store.folder import BundleStore
        from fuzzer.targets import cli_target, require_passes
        from generators.inputs import InputSpecError, parse_input_shapes

        adapter = cli_target(target)
        loaded = load_model(model)
        try:
            shapes = parse_input_shapes(input_shapes)
        except InputSpecError as exc:
            raise InputError(str(exc)) from None
        config = adapter.default_config()
        pass_list = parse_list(passes)
        if pass_list:
            require_passes(adapter, pass_list)
            config["passes"] = pass_list
        config["fixed_point"] = fixed_point
        case = TestCase(target, config, {"kind": "file", "path": str(model.resolve())},
                        model_bytes=loaded.SerializeToString(), input_seed=seed,
                        input_shapes=shapes or None)
        with Sandbox(jobs=1, timeout=timeout) as sandbox:
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
                bid, _ = handle_finding(BundleStore(save), sandbox, case, result,
                                        adapter.version(), FindingPolicy())
                console.print(f"bundle: {save / bid}")
        raise typer.Exit(1)
