"""``optfuzz report BUNDLE``: an upstream issue draft (report.md), the before/after picture
(graph.png) and the zip to attach, written into the bundle or ``--out``."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.errors import InputError


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""

    @app.command()
    def report(
        bundle: Path = typer.Argument(..., help="A bundle folder (with meta.json)."),
        out: Path = typer.Option(None, help="Write here instead of into the bundle."),
    ) -> None:
        """Write report.md, graph.png and <id>.zip for BUNDLE."""
        from fuzzer.report.build import write_report
        from fuzzer.store.meta import meta_problem, read_meta

        meta_path = bundle / "meta.json"
        if not meta_path.is_file():
            raise InputError(f"{bundle}: not a bundle (no meta.json)")
        try:
            meta = read_meta(meta_path)
        except (OSError, ValueError) as exc:
            raise InputError(f"{bundle}: damaged bundle ({meta_problem(exc)})") from None
        try:
            files = write_report(bundle, meta, out or bundle)
        except FileNotFoundError as exc:
            raise InputError(f"{bundle}: missing {Path(str(exc.args[0])).name}") from None
        except ValueError as exc:  # a damaged model.onnx or optimized.onnx
            raise InputError(f"{bundle}: {' '.join(str(exc).split())}") from None
        except KeyError as exc:
            raise InputError(f"{meta_path}: {exc.args[0]}") from None
        typer.echo(f"report:     {files.report}\npicture:    {files.picture}\n"
                   f"attachment: {files.attachment}")
