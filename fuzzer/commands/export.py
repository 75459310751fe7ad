"""``optfuzz export pytest FOLDER [-o FILE]``: the bundles of a campaign folder as a standalone
pytest module, one test per bundle still worth testing (:mod:`fuzzer.triage.export`), for a
project's CI: each test fails while its bug reproduces."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands.command import Command
from fuzzer.errors import InputError

DEFAULT_MODULE = Path("test_optfuzz_bundles.py")


def pytest_export(
    folder: Path = typer.Argument(Path("crashes"), help="Campaign output folder."),
    out: Path = typer.Option(DEFAULT_MODULE, "--out", "-o", metavar="FILE",
                             help="The test module to write."),
) -> None:
    """Write a pytest module with one test per bundle of FOLDER that is not marked
    duplicate, invalid or fixed: it runs the bundle's repro.py in a fresh interpreter
    and fails while the bug reproduces (skips where the repro cannot run). Bundle
    folders are named relative to the module's folder."""
    from fuzzer.store.folder import BundleStore, damage_note
    from fuzzer.triage.export import exported, pytest_module

    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    if out.is_dir():
        raise InputError(f"{out}: a folder; give the test module's file name")
    chosen = exported(BundleStore(folder))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)  # as pytest's --junitxml does
        out.write_text(pytest_module(folder, chosen.tested, out), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{out}: cannot write ({exc.strerror or exc})") from None
    typer.echo(f"wrote {out}: {len(chosen.tested)} test(s)")
    for bundle_id, why in chosen.left_out:
        typer.echo(f"left out {bundle_id}: {why}")
    if chosen.damaged:
        typer.echo(damage_note(chosen.damaged), err=True)


COMMAND = Command(
    "export", help="Bundles of a campaign folder in another tool's form.",
    subcommands=(Command("pytest", pytest_export),))
