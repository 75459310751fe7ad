"""``optfuzz triage [DIR]``: the root causes (bundles) of a campaign folder in the order a
maintainer reads them (regressed, then unreported open ones, then new first, severity class,
hits), each with its breaking pass, symptom, hits, variants, node counts (``unreduced`` where
model.onnx is the model as found, with the command that reduces it under the table), message
or crash site, trigger, status (``not replayed`` until ``optfuzz replay`` ran with the
installed versions) and state (``optfuzz mark``), and how many sightings were merged into
them; bundles marked duplicate or invalid are hidden unless ``--all``. ``--sarif FILE`` also
writes the bundles as SARIF 2.1.0 (:mod:`fuzzer.triage.sarif`). ``--rebucket`` applies
today's root-cause bucketing to the folder in place (:mod:`fuzzer.triage.rebucket`);
``--pending`` finishes the pending findings a campaign's end left
(:mod:`fuzzer.handling.pending`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError

if TYPE_CHECKING:  # imported where used: --help stays fast
    from rich.console import Console

    from fuzzer.campaign.stats import CampaignStats
    from fuzzer.handling.outcome import RootCauseMemo

MIN_WIDTH = 200  # columns of the table when the output is not a terminal


@options.grouped
def triage(
    folder: Path = typer.Argument(Path("crashes"), help="Campaign output folder."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
    symptom: options.Symptom = None,
    pass_name: options.PassName = None,
    everything: bool = typer.Option(
        False, "--all", help="Show bundles marked duplicate or invalid too."),
    sarif: Path | None = typer.Option(
        None, "--sarif", metavar="FILE", help="Also write the bundles as SARIF 2.1.0 to "
        "FILE (one result per bundle; those marked duplicate or invalid suppressed)."),
    rebucket: bool = typer.Option(
        False, "--rebucket", help="Re-bucket FOLDER in place by root cause: merge bundles "
        "of one root cause (the others become variants), move documented behaviour to "
        "FOLDER/documented/; runs every bundle again (execution options)."),
    pending: bool = typer.Option(
        False, "--pending", help="Finish the pending findings of FOLDER (FOLDER/pending/, "
        "left by a campaign's end): localize, reduce, key and verify each as the "
        "campaign would have, then store a bundle or a hit and remove it (execution "
        "and reducer options)."),
    execution: options.ExecutionArgs = None,
    jobs: options.Jobs = 1,
    reduce_seconds: options.PendingReduceSeconds = None,
) -> None:
    """List the root causes (bundles) of FOLDER, regressed and unreported ones first, then
    new, then by severity and hits, with breaking pass, hits, variants, sizes (unreduced
    ones marked, with the command that reduces them), message or crash site, trigger,
    status (not replayed until optfuzz replay ran) and state; remembers what it showed
    (FOLDER/.triage.json) so that the next triage marks only newer bundles as new. With
    --rebucket, re-bucket a folder of any earlier optfuzz instead; with --pending, finish
    the findings a campaign's end left unreduced."""
    from rich.console import Console

    from fuzzer.store.folder import BundleStore, damage_note
    from fuzzer.store.pending import PendingStore, finish_command
    from fuzzer.triage.rows import TriageFilter, hide_dismissed, rows_json, triage_rows
    from fuzzer.triage.sarif import write_sarif
    from fuzzer.triage.state import load_state, mark_seen
    from fuzzer.triage.table import reduce_lines, status_counts, triage_table

    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    if rebucket or pending:
        flag = "--rebucket" if rebucket else "--pending"
        if as_json or symptom or pass_name or everything or sarif or (rebucket and pending):
            raise InputError(f"{flag} works on the whole folder: no --json, --symptom, "
                             "--pass, --all, --sarif" +
                             (" or --pending" if rebucket else ""))
        raise typer.Exit(run_rebucket(folder, execution, jobs) if rebucket else
                         run_pending(folder, execution, jobs, reduce_seconds))
    options.check_symptom(symptom)
    state = load_state(folder)
    try:
        every_row, damaged = triage_rows(folder, state["seen"],
                                         TriageFilter(symptom, pass_name))
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    rows, hidden = hide_dismissed(every_row, everything)
    mark_seen(BundleStore(folder), {r.id: r.hits for r in rows})
    notes = [f"{hidden} bundle(s) marked duplicate or invalid hidden; --all shows them"
             ] if hidden else []
    if sarif is not None:
        try:
            write_sarif(sarif, folder, every_row)
        except OSError as exc:
            raise InputError(f"{sarif}: cannot write ({exc.strerror or exc})") from None
        notes.append(f"wrote {sarif}: {len(every_row)} result(s)")
    if as_json:
        typer.echo(rows_json(rows))
        for line in [*notes, damage_note(damaged)]:  # stdout stays JSON
            if line:
                typer.echo(line, err=True)
        return
    console = Console()
    if not console.is_terminal:  # logs and pipes: wide enough for every column
        console = Console(width=max(console.width, MIN_WIDTH))
    since = state["last_triage"] or "never"
    console.print(triage_table(rows, f"{folder} (last triage: {since})", console.width))
    console.print(status_counts(rows), highlight=False)
    for line in [*reduce_lines(rows), *notes]:
        console.print(line, markup=False, highlight=False)
    left = PendingStore(folder).count()
    if left:
        console.print(f"{left} pending finding(s) not reduced yet; finish them with "
                      f"{finish_command(folder)}", markup=False, highlight=False)
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

    from fuzzer.execution.sandbox import SandboxError
    from fuzzer.handling.crash_state import SANITIZED_SLOWDOWN, Witnesses
    from fuzzer.store.folder import BundleStore, damage_note
    from fuzzer.triage.rebucket import rebucket

    console = Console(highlight=False, soft_wrap=True)
    try:
        with campaign_lock(folder, "rebucket"), execution.sandbox(jobs) as sandbox, \
                contextlib.closing(Witnesses(execution.timeout * SANITIZED_SLOWDOWN)) as states:
            store = BundleStore(folder)
            summary = rebucket(store, sandbox, lambda line: console.print(line, markup=False),
                               states)
    except (OSError, SandboxError) as exc:
        typer.echo(f"error: rebucketing stopped, no model lost; run it again: {exc}", err=True)
        return 1
    console.print(summary.line())
    if store.damaged():
        console.print(damage_note(store.damaged()), style="yellow", markup=False)
    return 0


@contextlib.contextmanager
def campaign_lock(folder: Path, what: str) -> Iterator[None]:
    """Hold ``folder``'s campaign lock while ``what`` (e.g. ``"rebucket"``) changes it: no
    campaign may write meanwhile.

    Raises:
        InputError: a live campaign holds the folder.
    """
    from fuzzer.store.lock import CampaignLock, CampaignLocked

    lock = CampaignLock(folder)
    try:
        with lock:
            yield
    except CampaignLocked:  # only its taking raises it
        owner = lock.owner()
        who = f" (pid {owner.pid} on host {owner.host})" if owner else ""
        raise InputError(f"{folder}: a campaign is running in it{who}; {what} after it "
                         "ends") from None


def run_pending(folder: Path, execution: options.ExecutionArgs, jobs: int,
                reduce_seconds: float | None) -> int:
    """``triage --pending``: hold the folder's campaign lock, handle every pending finding
    in full (:func:`fuzzer.handling.pending.finish_pending`) as the campaign would have
    (localization and, unless ``reduce_seconds`` is given, the bound of each reduction in
    seconds as campaign.json records the campaign's; 120 where it records none, as
    ``fuzz --resume`` does), one line each under a
    progress bar, then update campaign.json and summary.html where the folder has a
    readable campaign.json. Returns the exit status: 0 every pending finding finished, 1
    some are left (unreadable ones skipped, a handling that failed, or a write or the worker
    pool that stopped; none is lost).

    Raises:
        InputError: FOLDER has no pending/ folder, or a live campaign holds it.
    """
    from rich.console import Console
    from rich.progress import Progress

    from fuzzer.execution.sandbox import SandboxError
    from fuzzer.handling.outcome import FindingPolicy, Handled, RootCauseMemo
    from fuzzer.handling.pending import describe, finish_pending
    from fuzzer.localize.memo import LocalizationMemo
    from fuzzer.report.refresh import flush_and_refresh
    from fuzzer.store.folder import BundleStore
    from fuzzer.store.pending import PENDING_DIR, PendingStore

    kept = PendingStore(folder)
    if not kept.folder.is_dir():
        raise InputError(f"{folder}: no {PENDING_DIR}/ folder, so no pending findings to "
                         "finish")
    console = Console(highlight=False, soft_wrap=True)
    with campaign_lock(folder, "finish its pending findings"):
        total = kept.count()
        if not total:
            console.print(f"no pending findings in {kept.folder}")
            return 0
        stats = _campaign_stats(folder, console)
        settings = (stats.settings if stats is not None else None) or {}
        if reduce_seconds is None:
            reduce_seconds = float(settings.get("reduce_seconds", FindingPolicy.reduce_seconds))
        policy = FindingPolicy(localize=bool(settings.get("localize", True)),
                               reduce_seconds=reduce_seconds)
        roots = RootCauseMemo(stats.failed_keys if stats is not None else None)

        def report(handled: Handled, message: str) -> None:
            if stats is not None:
                stats.handled(handled.status, handled.bundle_id, handled.name, message,
                              handled.signature)

        store = BundleStore(folder)
        try:
            with execution.sandbox(jobs) as sandbox, \
                    Progress(console=console, transient=True,
                             disable=not console.is_terminal) as bar:
                task = bar.add_task("pending findings", total=total)

                def progress(pending_id: str, outcome: Handled | None) -> None:
                    bar.advance(task)
                    if outcome is not None:  # those kept are said once, with why, below
                        console.print(f"{pending_id}: {describe(outcome)}", markup=False)

                run = finish_pending(store, kept, sandbox, policy,
                                     LocalizationMemo.of_bundles(store.index()), roots,
                                     report, progress)
            flush_and_refresh(store)
            _save_stats(folder, stats, roots)
        except (OSError, SandboxError) as exc:
            typer.echo(f"error: finishing pending findings stopped, none lost; run it "
                       f"again: {exc}", err=True)
            return 1
    for line in run.skipped + run.failed:
        console.print(f"kept in {PENDING_DIR}/: {line}", style="yellow", markup=False)
    new = sum(o.status == "new" for o in run.outcomes)
    console.print(f"{len(run.outcomes)} of {total} pending finding(s) finished: {new} new "
                  f"bundle(s); {kept.count()} left in {kept.folder}")
    return 1 if kept.count() else 0


def _campaign_stats(folder: Path, console: Console) -> CampaignStats | None:
    """The folder's campaign record (:class:`fuzzer.campaign.stats.CampaignStats`), None
    where it has none or an unreadable one (said on ``console``)."""
    from fuzzer.campaign.stats import CAMPAIGN_FILE, CampaignStats

    try:
        return CampaignStats.load(folder)
    except (OSError, ValueError) as exc:
        console.print(f"{CAMPAIGN_FILE} unreadable, left as it is: {exc}", style="yellow",
                      markup=False)
        return None


def _save_stats(folder: Path, stats: CampaignStats | None, roots: RootCauseMemo) -> None:
    """Write the campaign record ``stats`` (None: nothing) back with what the pending
    findings' handling counted, the failed root-cause keys ``roots`` knows and the pending
    findings left, then summary.html.

    Raises:
        OSError: a file cannot be written.
    """
    from fuzzer.campaign.summary import write_summary
    from fuzzer.store.pending import PendingStore, finish_command

    if stats is None:
        return
    stats.failed_keys = roots.failures()
    stats.pending = PendingStore(folder).count()
    stats.pending_command = finish_command(folder)
    stats.save(folder)
    write_summary(folder, stats.to_json())


COMMAND = Command("triage", triage)
