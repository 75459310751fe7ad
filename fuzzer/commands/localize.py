"""``optfuzz localize BUNDLE|MODEL``: find the pass(es) responsible for a finding.

On a bundle folder it re-runs ``model.onnx`` with ``inputs.npz`` under the bundle's target
configuration, localizes, and updates ``meta.json`` (``responsible_passes``,
``localization``). The bundle keeps its folder and id even when the signature changes (a
person may already have cited the id): the new signature is recorded as ``signature`` and the
old one appended to ``aliases``, where deduplication (:func:`fuzzer.findings.find_bundle`)
still finds it. On a model file it runs one test and prints the result.

Exit status: 0 localized, 1 not reproduced or not localized, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add the ``localize`` command to ``app``."""

    @app.command()
    def localize(
        path: Path = typer.Argument(..., help="A bundle folder (with meta.json) or an .onnx "
                                    "file."),
        passes: str = typer.Option(None, help="Comma list of passes to search (default: the "
                                   "bundle's configuration, or the target's default list)."),
        target: str = typer.Option(None, help="System under test (default: the bundle's, or "
                                   "onnxoptimizer)."),
        fixed_point: bool = typer.Option(None, "--fixed-point/--no-fixed-point",
                                         help="Run to a fixed point (default: as recorded)."),
        seed: int = typer.Option(0, help="Seed of synthesized inputs (model files)."),
        timeout: float = typer.Option(30.0, help="Per-run timeout, seconds."),
    ) -> None:
        """Find the minimal pass subsequence that still shows the finding of PATH."""
        from fuzzer.commands.fuzz import parse_list
        from fuzzer.commands.localize_run import load_subject, run_localization

        subject = load_subject(path, target, parse_list(passes), fixed_point, seed)
        code = run_localization(subject, timeout)
        raise typer.Exit(code)

