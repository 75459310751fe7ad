"""``optfuzz triage [DIR]``: the root causes (bundles) of a campaign folder in the order a
maintainer reads them (new first, then severity class, then hits), each with its breaking
pass, symptom, hits, variants, node counts, trigger and status, and how many sightings were
merged into them. ``--rebucket`` applies today's root-cause bucketing to the folder in place
(:mod:`fuzzer.campaign.rebucket`)."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands import options
from fuzzer.errors import InputError

MIN_WIDTH = 170  # columns of the table when the output is not a terminal


def register(app: typer.Typer) -> None:
    """Add the ``triage`` command to ``app``."""

    @app.command()
    @options.grouped
    def triage(
        folder: Path = typer.Argument(Path("crashes"), help="Campaign output folder."),
        as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
        symptom: options.Symptom = None,
        pass_name: options.PassName = None,
        rebucket: bool = typer.Option(
            False, "--rebucket", help="Re-bucket FOLDER in place by root cause: merge bundles "
            "of one root cause (the others become variants), move documented behaviour to "
            "FOLDER/documented/; runs every bundle again (execution options)."),
        execution: options.ExecutionArgs = None,
        jobs: options.Jobs = 1,
    ) -> None:
        """List the root causes (bundles) of FOLDER, new first, then by severity and hits,
        with breaking pass, hits, variants, sizes, trigger and status; remembers what it
        showed (FOLDER/.triage.json) so that the next triage marks only newer bundles as
        new. With --rebucket, re-bucket a folder of any earlier optfuzz instead."""
        from rich.console import Console

        from fuzzer.store.folder import BundleStore, damage_note
        from fuzzer.triage.rows import TriageFilter, rows_json, triage_rows
        from fuzzer.triage.state import load_state, mark_seen
        from fuzzer.triage.table import status_counts, triage_table

        if not folder.is_dir():
            raise InputError(f"{folder}: not a folder")
        if rebucket:
            if as_json or symptom or pass_name:
                raise InputError("--rebucket works on the whole folder: no --json, --symptom "
                                 "or --pass")
            raise typer.Exit(run_rebucket(folder, execution, jobs))
        options.check_symptom(symptom)
        state = load_state(folder)
        try:
            rows, damaged = triage_rows(folder, state["seen"], TriageFilter(symptom, pass_name))
        except KeyError as exc:
            raise InputError(str(exc.args[0])) from None
        mark_seen(BundleStore(folder), {r.id: r.hits for r in rows})
        if as_json:
            typer.echo(rows_json(rows))
            if damaged:  # stdout stays JSON
                typer.echo(damage_note(damaged), err=True)
            return
        console = Console()
        if not console.is_terminal:  # logs and pipes: wide enough for every column
            console = Console(width=max(console.width, MIN_WIDTH))
        since = state["last_triage"] or "never"
        console.print(triage_table(rows, f"{folder} (last triage: {since})"))
        console.print(status_counts(rows), highlight=False)
        if damaged:
            console.print(damage_note(damaged), style="yellow", markup=False, soft_wrap=True)


def run_rebucket(folder: Path, execution: options.ExecutionArgs, jobs: int) -> int:
    """``triage --rebucket``: hold the folder's campaign lock (no campaign may write while
    bundles move), re-bucket, print one line per change and the summary; return the exit
    status (0 done, 1 a write failed or the worker pool stopped).

    Raises:
        InputError: a live campaign holds the folder.
    """
    from rich.console import Console

    from fuzzer.campaign.rebucket import rebucket
    from fuzzer.execution.sandbox import SandboxError
    from fuzzer.store.folder import BundleStore, damage_note
    from fuzzer.store.lock import CampaignLock, CampaignLocked

    console = Console(highlight=False, soft_wrap=True)
    lock = CampaignLock(folder)
    try:
        with lock, execution.sandbox(jobs) as sandbox:
            store = BundleStore(folder)
            summary = rebucket(store, sandbox, lambda line: console.print(line, markup=False))
    except CampaignLocked:
        owner = lock.owner()
        who = f" (pid {owner.pid} on host {owner.host})" if owner else ""
        raise InputError(f"{folder}: a campaign is running in it{who}; rebucket after it "
                         "ends") from None
    except (OSError, SandboxError) as exc:
        typer.echo(f"error: rebucketing stopped, no model lost; run it again: {exc}", err=True)
        return 1
    console.print(summary.line())
    if store.damaged():
        console.print(damage_note(store.damaged()), style="yellow", markup=False)
    return 0
