"""``optfuzz bisect BUNDLE|DIR [--target-versions A..B]``: find the first release of the
bundle's target that shows the bug and, where the newest release no longer does, the first
that fixed it (:mod:`fuzzer.upstream.bisect`). Each release probed is installed once into a
cached environment (shared by the bundles of a folder) and runs the bundle's repro.py
(``--timeout`` and ``--memory-limit-gib`` are its child's limits); the result goes into
meta.json's ``regression``. Exit 1 where a bundle could not be bisected (no
release gave a verdict, its target has no package, a damaged bundle), else 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError


@options.grouped
def bisect(
    folder: Path = typer.Argument(..., help="One bundle's folder, or a campaign output "
                                  "folder (each bundle is bisected)."),
    target_versions: str | None = typer.Option(
        None, "--target-versions", help="Only releases in this inclusive range: A..B, "
        "A.. or ..B (default: every release)."),
    symptom: options.Symptom = None,
    pass_name: options.PassName = None,
    execution: options.ExecutionArgs = None,
    builds: options.BuildArgs = None,
) -> None:
    """Binary-search the releases of each bundle's target (newest first) for the last
    good, first bad and first fixed release; record them in meta.json's regression."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from fuzzer.commands.bundles import select_bundles
    from fuzzer.store.folder import damage_note
    from fuzzer.upstream.releases import Releases

    selection = select_bundles(folder, symptom, pass_name)
    Releases().between(target_versions)  # refuse a bad range before any work
    console = Console(highlight=False, soft_wrap=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    failed = bool(selection.damaged)
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("bisecting", total=len(selection.metas))
        checks = builds.checks(execution, lambda text: progress.update(task,
                                                                       description=text))
        releases: dict[str, Any] = {}
        for meta in selection.metas:
            line, done = _bisect_one(selection.store, meta, checks, releases, builds,
                                     target_versions)
            progress.console.print(f"{meta.id:<34} {line}", markup=False)
            failed = failed or not done
            progress.advance(task)
    console.print(f"bisected {len(selection.metas)} bundle(s)")
    if selection.damaged:
        console.print(damage_note(selection.damaged), style="yellow", markup=False)
    raise typer.Exit(1 if failed else 0)


def _bisect_one(store: Any, meta: Any, checks: Any, releases: dict[str, Any],
                builds: options.BuildArgs, target_versions: str | None) -> tuple[str, bool]:
    """Bisect one bundle; return its line and whether some release gave a verdict.
    ``releases`` caches each package's listing (or the InputError of listing it)."""
    from fuzzer.upstream.bisect import bisect
    from fuzzer.upstream.checks import target_package
    from fuzzer.upstream.records import record_regression
    from fuzzer.upstream.releases import list_releases

    package = target_package(meta)
    if package is None:
        return f"target {meta.target.name} names no package to install other releases of", \
            False
    if package not in releases:
        try:
            releases[package] = list_releases(package, builds.find_links)
        except InputError as exc:
            releases[package] = exc
    listed = releases[package]
    if isinstance(listed, InputError):
        return f"error: {listed}", False
    chosen = listed.between(target_versions)
    probe = checks.probe_release(store.path(meta.id), meta, package)
    regression = bisect(chosen.versions, probe, found=meta.target.version,
                        left_out=chosen.skipped)
    record_regression(store, meta.id, regression)
    return regression.summary(), regression.newest_checked is not None


COMMAND = Command("bisect", bisect)
