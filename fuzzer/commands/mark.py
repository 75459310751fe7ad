"""``optfuzz mark BUNDLE STATE [ARGUMENT]``: record what became of a bundle upstream (reported,
a duplicate, invalid, fixed, open again) in its meta.json (:mod:`fuzzer.triage.marks`);
``optfuzz triage`` orders and hides bundles by it."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands.command import Command
from fuzzer.errors import InputError
from fuzzer.triage.marks import USAGE


def mark(
    bundle: Path | None = typer.Argument(None, metavar="BUNDLE",
                                         help="A bundle folder (with meta.json)."),
    words: list[str] | None = typer.Argument(None, metavar="STATE [ARGUMENT]",
                                             help=f"One of: {USAGE}."),
) -> None:
    """Set the state of BUNDLE: reported URL, duplicate-of OTHER (a bundle of the same
    folder), invalid REASON, fixed VERSION, or open; the earlier state is kept in its
    history. A bundle marked fixed that a later campaign hits becomes regressed."""
    from fuzzer.triage.marks import mark_bundle, state_text

    if bundle is None:
        raise InputError(f"usage: optfuzz mark BUNDLE {{{USAGE}}}")
    try:
        record = mark_bundle(bundle, list(words or []))
    except OSError as exc:
        raise InputError(f"{bundle}: cannot write meta.json ({exc.strerror or exc})") \
            from None
    typer.echo(f"{bundle}: {state_text(record)}")


COMMAND = Command("mark", mark)
