"""``optfuzz target build``: instrumented builds of a target from its source distribution.

``--coverage`` builds with gcov instrumentation (``optfuzz coverage --code`` and ``optfuzz
fuzz --guided`` read it), ``--sanitize`` with AddressSanitizer and UndefinedBehaviorSanitizer
(``optfuzz fuzz --build sanitize``). Each goes into its own folder of the user's cache
(:mod:`fuzzer.builds`); the installed package is left alone.
"""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands.command import Command
from fuzzer.errors import InputError


def build(
    target: str = typer.Argument(..., help="Target to build (onnxoptimizer)."),
    coverage: bool = typer.Option(False, "--coverage", help="gcov instrumentation."),
    sanitize: bool = typer.Option(False, "--sanitize",
                                  help="AddressSanitizer + UndefinedBehaviorSanitizer."),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Parallel compile jobs."),
    sdist: Path | None = typer.Option(None, "--sdist", exists=True, dir_okay=False,
                                      help="Build from this sdist, not the index's."),
) -> None:
    """Build the installed version of TARGET from its sdist with instrumentation."""
    from fuzzer.builds import builder

    kinds = [k for k, on in (("coverage", coverage), ("sanitize", sanitize)) if on]
    if not kinds:
        raise InputError("say which build: --coverage, --sanitize or both")
    make = builder(target)
    for kind in kinds:
        record = make(kind, jobs=jobs, sdist=sdist,
                      say=lambda line: typer.echo(line, err=True))
        typer.echo(f"{kind} build of {target} {record.version} ready in "
                   f"{record.seconds:.0f} s: {record.folder}")


def builds() -> None:
    """List the instrumented builds in the cache."""
    import json

    from fuzzer.builds.record import MANIFEST, builds_root

    found = sorted(builds_root().glob(f"*/{MANIFEST}"))
    for path in found:
        data = json.loads(path.read_text())
        typer.echo(f"{data['target']} {data['version']} {data['kind']}: "
                   f"{data['seconds']:.0f} s, {data['folder']}")
    if not found:
        typer.echo("no builds; make one with `optfuzz target build onnxoptimizer "
                   "--coverage`")


COMMAND = Command(
    "target", help="Instrumented builds of a target (coverage, sanitizers).",
    subcommands=(Command("build", build), Command("builds", builds)))
