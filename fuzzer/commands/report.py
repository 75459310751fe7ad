"""``optfuzz report BUNDLE``: run the attached model once more, then write an upstream issue
draft (report.md), the before/after picture (graph.png), repro.py and the zip to attach,
into the bundle or ``--out``."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError


@options.grouped
def report(
    bundle: Path = typer.Argument(..., help="A bundle folder (with meta.json)."),
    out: Path = typer.Option(None, help="Write here instead of into the bundle."),
    execution: options.ExecutionArgs = None,
) -> None:
    """Run model.onnx of BUNDLE with inputs.npz under its configuration (the minimal
    pass list where localized), then write report.md, graph.png, repro.py and <id>.zip;
    "Actual" in report.md is what that run showed."""
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
        with execution.sandbox() as sandbox:
            files = write_report(bundle, meta, out or bundle, sandbox,
                                 timeout=execution.timeout)
    except FileNotFoundError as exc:
        missing = Path(str(exc.filename or exc.args[0])).name
        raise InputError(f"{bundle}: missing {missing}") from None
    except ValueError as exc:  # a damaged model.onnx, optimized.onnx or inputs.npz
        raise InputError(f"{bundle}: {' '.join(str(exc).split())}") from None
    except KeyError as exc:
        raise InputError(f"{meta_path}: {exc.args[0]}") from None
    except OSError as exc:
        raise InputError(f"{bundle}: {exc.strerror or exc}") from None
    observed = files.observed
    verdict = "reproduces" if observed.reproduces(meta.symptom) else \
        f"does not reproduce ({observed.problem or 'see Actual in report.md'})"
    typer.echo(f"run:        {meta.symptom} {verdict} with {observed.versions}\n"
               f"report:     {files.report}\npicture:    {files.picture}\n"
               f"attachment: {files.attachment}")


COMMAND = Command("report", report)
