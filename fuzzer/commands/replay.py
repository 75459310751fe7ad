"""``optfuzz replay [DIR|BUNDLE]``: re-run every bundle against the installed versions, record
fixed / still failing / changed symptom in meta.json, exit 1 while any bundle still fails
or cannot be checked (a damaged bundle counts: a regression check must not pass on what it
could not run), 0 when all are fixed.

With ``--against SPEC`` (repeatable: ``onnxslim==0.1.80``, a wheel or sdist file, a source
checkout), each SPEC is installed once into a cached environment of its own and each bundle
of its package runs its repro.py there instead (:mod:`fuzzer.upstream`; ``--timeout`` and
``--memory-limit-gib`` are its child's limits); the verdicts go into meta.json's
``upstream``. ``--junitxml FILE`` writes the results as JUnit XML. ``--target T`` runs each
bundle's model through another target instead (:mod:`fuzzer.triage.cross_target`) and
records in meta.json's ``cross_targets`` whether it breaks that one too."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError


@options.grouped
def replay(
    folder: Path = typer.Argument(Path("crashes"), help="Campaign output folder, or one "
                                  "bundle's folder."),
    against: list[str] | None = typer.Option(
        None, "--against", help="Replay against this build of the target instead of the "
        "installed one: NAME==VERSION, a wheel or sdist file, or a source checkout "
        "(repeatable)."),
    junitxml: Path | None = typer.Option(
        None, "--junitxml", help="Also write the results to this file as JUnit XML."),
    other: str | None = typer.Option(
        None, "--target", metavar="TARGET", help="Run each bundle's model through this "
        "other target instead (its default configuration) and record whether it breaks "
        "it too."),
    jobs: options.Jobs = 1,
    timeout: options.Timeout = options.DEFAULT_TIMEOUT,
    memory_limit_gib: options.MemoryLimit = options.DEFAULT_MEMORY_GIB,
    symptom: options.Symptom = None,
    pass_name: options.PassName = None,
    builds: options.BuildArgs = None,
) -> None:
    """Re-run every bundle of FOLDER against the installed versions (or each --against
    build); exit 1 while any still fails (or changed symptom, or cannot run, or a
    build cannot be installed), 0 when all are fixed."""
    from rich.console import Console

    from fuzzer.commands.bundles import select_bundles
    from fuzzer.store.folder import damage_note
    from fuzzer.triage.junit import INSTALL_ERROR
    from fuzzer.triage.replay import FAILING
    from fuzzer.upstream.spec import parse_spec

    selection = select_bundles(folder, symptom, pass_name)
    if other is not None:
        if against or junitxml is not None:
            raise InputError("--target runs the bundles on another target: no --against "
                             "or --junitxml")
        from fuzzer.targets import cli_target

        cli_target(other)  # an unknown or uninstalled target is one line
        raise typer.Exit(_cross(selection, other, jobs,
                                options.ExecutionArgs(timeout, memory_limit_gib)))
    specs = [parse_spec(text) for text in against or []]
    if junitxml is not None and not junitxml.resolve().parent.is_dir():
        raise InputError(f"--junitxml {junitxml}: no folder {junitxml.parent}")
    console = Console(highlight=False, soft_wrap=True)
    counts: dict[str, int] = {}
    cases: list[Any] = []
    limits = options.ExecutionArgs(timeout, memory_limit_gib)
    results = _against(console, selection, specs, builds, limits) if specs else \
        _installed(selection, jobs, limits)
    for line, case in results:
        console.print(line)
        cases.append(case)
        counts[case.status] = counts.get(case.status, 0) + 1
    if junitxml is not None:
        _write_junit(junitxml, cases)
    checked = sum(n for s, n in counts.items() if s != INSTALL_ERROR)
    what = f" against {len(specs)} build(s)" if specs else ""
    summary = ", ".join(f"{n} {_label(s)}" for s, n in sorted(counts.items()))
    console.print(f"replayed {checked} bundle(s){what}: {summary or 'nothing to do'}")
    if selection.damaged:
        console.print(damage_note(selection.damaged), style="yellow", markup=False)
    failed = any(counts.get(s) for s in (*FAILING, INSTALL_ERROR))
    raise typer.Exit(1 if selection.damaged or failed else 0)


def _cross(selection: Any, target_name: str, jobs: int,
           limits: options.ExecutionArgs) -> int:
    """Run every selected bundle on ``target_name``, print one line each and a summary;
    returns the exit code: 1 where a bundle could not be checked (damaged or unusable), 0
    otherwise (breaking another target is a finding, not a failure of the command)."""
    from rich.console import Console

    from fuzzer.store.folder import damage_note
    from fuzzer.triage.cross_target import UNUSABLE, cross_replay_all

    console = Console(highlight=False, soft_wrap=True)
    counts: dict[str, int] = {}
    with limits.sandbox(jobs) as sandbox:
        for verdict in cross_replay_all(selection.store, selection.metas, sandbox,
                                        target_name):
            detail = f": {verdict.observed} ({verdict.message})" if verdict.observed else \
                (f": {verdict.message}" if verdict.message else "")
            console.print(f"{verdict.bundle_id:<34} {target_name} {verdict.status}"
                          f"{_escape(detail[:200])}")
            counts[verdict.status] = counts.get(verdict.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    console.print(f"ran {sum(counts.values())} bundle(s) on {target_name}: "
                  f"{summary or 'nothing to do (every bundle is of that target)'}")
    if selection.damaged:
        console.print(damage_note(selection.damaged), style="yellow", markup=False)
    return 1 if selection.damaged or counts.get(UNUSABLE) else 0


def _installed(selection: Any, jobs: int,
               limits: options.ExecutionArgs) -> Iterator[tuple[str, Any]]:
    """(line, JUnit case) of each bundle replayed against the installed versions."""
    from fuzzer.triage.junit import JUnitCase
    from fuzzer.triage.replay import replay_all, sanitized_sandboxes

    targets = {m.id: m.target.name for m in selection.metas}
    with contextlib.ExitStack() as stack:
        sandbox = stack.enter_context(limits.sandbox(jobs))
        sanitized = sanitized_sandboxes(selection.metas, jobs, limits.timeout, stack)
        for result in replay_all(selection.store, selection.metas, sandbox, sanitized):
            was = f" (was {_label(result.previous)})" if result.previous and \
                result.previous != result.status else ""
            detail = f": {result.observed}" if result.status == "changed" else ""
            yield (f"{result.bundle_id:<34} {_styled(result.status, detail)}{was}",
                   JUnitCase("installed", result.bundle_id, targets[result.bundle_id],
                             result.status, result.message))


def _against(console: Any, selection: Any, specs: list[Any], builds: options.BuildArgs,
             limits: options.ExecutionArgs) -> Iterator[tuple[str, Any]]:
    """(line, JUnit case) of each bundle checked against each SPEC, and of each SPEC that
    could not be installed or matched no bundle (a rich status shows the install or run
    at hand)."""
    from fuzzer.triage.junit import INSTALL_ERROR, JUnitCase

    with console.status("") as status:
        checks = builds.checks(limits, notify=status.update)
        for item in checks.against(selection.store, selection.metas, specs):
            if item.problem is not None:
                yield (f"[red]error: {_escape(item.problem)}[/red]",
                       JUnitCase(item.spec.text, "install", "", INSTALL_ERROR, item.problem))
                continue
            verdict = item.verdict
            detail = f": {verdict.observed or verdict.message}" \
                if verdict.status in ("changed", "untestable") else ""
            yield (f"{item.meta.id:<34} {_escape(item.spec.text)} ({verdict.version}) "
                   f"{_styled(verdict.status, detail)}",
                   JUnitCase(item.spec.text, item.meta.id, item.meta.target.name,
                             verdict.status, verdict.message, verdict.seconds))


def _write_junit(path: Path, cases: list[Any]) -> None:
    from fuzzer.triage.junit import write_junit

    try:
        write_junit(path, cases)
    except OSError as exc:
        raise InputError(f"--junitxml {path}: {exc.strerror or exc}") from None


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _styled(status: str, detail: str = "") -> str:
    label, style = _look(status)
    text = _escape(f"{label}{detail}")
    return f"[{style}]{text}[/{style}]" if style else text


def _look(status: str) -> tuple[str, str]:
    from fuzzer.triage.table import STATUS_LOOK

    return STATUS_LOOK.get(status, (status, ""))


def _label(status: str) -> str:
    return _look(status)[0]


COMMAND = Command("replay", replay)
