"""``optfuzz replay [DIR]``: re-run every bundle against the installed versions, record
fixed / still failing / changed symptom in meta.json, exit 1 while any bundle still fails
or cannot be checked (a damaged bundle counts: a regression check must not pass on what it
could not run), 0 when all are fixed."""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer

from fuzzer.commands import options
from fuzzer.errors import InputError


def register(app: typer.Typer) -> None:
    """Add the ``replay`` command to ``app``."""

    @app.command()
    def replay(
        folder: Path = typer.Argument(Path("crashes"), help="Campaign output folder."),
        jobs: options.Jobs = 1,
        timeout: options.Timeout = options.DEFAULT_TIMEOUT,
        memory_limit_gib: options.MemoryLimit = options.DEFAULT_MEMORY_GIB,
        symptom: options.Symptom = None,
        pass_name: options.PassName = None,
    ) -> None:
        """Re-run every bundle of FOLDER against the installed versions; exit 1 while any
        still fails (or changed symptom, or cannot run), 0 when all are fixed."""
        from rich.console import Console

        from fuzzer.store.folder import BundleStore, damage_note
        from fuzzer.targets import target_names
        from fuzzer.triage.replay import FAILING, replay_all, sanitized_sandboxes
        from fuzzer.triage.rows import TriageFilter

        if not folder.is_dir():
            raise InputError(f"{folder}: not a folder")
        options.check_symptom(symptom)
        store = BundleStore(folder)
        metas, damaged = store.read_all()
        keep = TriageFilter(symptom, pass_name)
        metas = [m for m in metas if keep.accepts(m)]
        unknown = sorted({m.target.name for m in metas} - set(target_names()))
        if unknown:
            raise InputError(f"bundles name unknown target(s) {unknown}")
        console = Console(highlight=False, soft_wrap=True)
        counts: dict[str, int] = {}
        with contextlib.ExitStack() as stack:
            sandbox = stack.enter_context(options.sandbox(timeout, memory_limit_gib, jobs))
            sanitized = sanitized_sandboxes(metas, jobs, timeout, stack)
            for result in replay_all(store, metas, sandbox, sanitized):
                counts[result.status] = counts.get(result.status, 0) + 1
                label, style = _look(result.status)
                was = f" (was {_label(result.previous)})" if result.previous and \
                    result.previous != result.status else ""
                detail = f": {result.observed}" if result.status == "changed" else ""
                console.print(f"{result.bundle_id:<34} [{style}]{label}{detail}[/{style}]{was}")
        summary = ", ".join(f"{n} {_label(s)}" for s, n in sorted(counts.items()))
        console.print(f"replayed {len(metas)} bundle(s): {summary or 'nothing to do'}")
        if damaged:
            console.print(damage_note(damaged), style="yellow", markup=False)
        raise typer.Exit(1 if damaged or any(counts.get(s) for s in FAILING) else 0)


def _look(status: str) -> tuple[str, str]:
    from fuzzer.triage.table import STATUS_LOOK

    return STATUS_LOOK.get(status, (status, ""))


def _label(status: str) -> str:
    return _look(status)[0]
