"""``optfuzz fuzz``: run a campaign."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError

SOURCES = ("generated", "mutated", "corpus", "bundled", "pypi", "hub", "dir")
#: Sources that are not corpus kinds.
MADE_SOURCES = ("generated", "mutated")


@options.grouped
def fuzz(
    *,
    limits: options.CampaignLimits = None,
    jobs: int = typer.Option(None, "--jobs", "-j", min=1, metavar="N", help="Worker processes "
                             "(default 2; with --ray: case actors, default one per CPU "
                             "the cluster offers).", rich_help_panel=options.EXECUTION),
    inputs: options.InputArgs = None,
    out: Path = typer.Option(Path("crashes"), metavar="FOLDER",
                             help="Output folder of bundles."),
    source: str = typer.Option(
        "generated,corpus", metavar="LIST", help="Comma list of: generated, mutated "
        "(graph-aware mutations of generated and corpus models), corpus (bundled models "
        "and --corpus folders), bundled, pypi, hub, dir."),
    corpus: list[Path] = typer.Option(None, "--corpus", metavar="FOLDER",
                                      help="Folder of .onnx files (repeatable)."),
    target: options.TargetChoice = None,
    fixed_passes: bool = typer.Option(
        False, "--fixed-passes", help="Run exactly --passes (default: the target's "
        "default list) in order for every case, instead of cycling configurations."),
    generator: str = typer.Option("v2", metavar="NAME", help="Graph generator."),
    execution: options.ExecutionArgs = None,
    reduce_seconds: options.ReduceSeconds = 120.0,
    no_localize: bool = typer.Option(False, "--no-localize", help="Skip localization."),
    avoid_known: bool = typer.Option(
        True, "--avoid-known/--no-avoid-known", help="Leave out of most generated cases "
        "the generator features (a motif, an interface form, IR 3) on which a known fault "
        "takes at least 80% of the cases, so that they reach the faults behind it."),
    resume: bool = typer.Option(False, help="Continue the campaign saved in --out "
                                "(refused if its settings differ)."),
    allow_change: str = typer.Option(
        None, "--allow-change", metavar="LIST", help="With --resume: comma list of "
        "settings that may differ from the saved campaign's: timeout, memory-limit, "
        "reduce-seconds, localize, avoid-known."),
    quiet: bool = typer.Option(False, help="No live progress display."),
    guided: bool = typer.Option(False, "--guided", help="Steer cases by the target's own "
                                "branch coverage: half of the workers run its coverage "
                                "build (`optfuzz target build TARGET --coverage`); "
                                "findings come from the others."),
    build: str = typer.Option(
        None, "--build", metavar="sanitize|coverage", help="Run the target's "
        "instrumented build: 'sanitize' runs every case under AddressSanitizer and "
        "UndefinedBehaviorSanitizer (`optfuzz target build TARGET --sanitize`; reports "
        "are memory-error findings); 'coverage' is --guided."),
    crash_states: bool = typer.Option(
        None, "--crash-states/--no-crash-states", help="Run each new native crash (a "
        "signal, an impossible allocation) once more on the target's sanitize build and "
        "key it by the sanitizer's crash type and top frames [default: on where `optfuzz "
        "target build TARGET --sanitize` made one]."),
    ray: str = typer.Option(
        None, "--ray", metavar="[ADDRESS]", help="Run on Ray: alone, a local Ray "
        "instance; 'auto' or ray://host:port joins a running cluster (needs the "
        "'ray' extra; see docs/ray.md)."),
) -> None:
    """Run a fuzzing campaign; findings land in OUT as one bundle per distinct bug."""
    from fuzzer.campaign.failure import CampaignError
    from fuzzer.campaign.run import run_campaign
    from fuzzer.campaign.settings import CampaignSettings, parse_allow_change
    from fuzzer.handling.outcome import FindingPolicy

    duration = limits.duration()
    sources = options.parse_list(source) or []
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise InputError(f"unknown source(s) {unknown}; known: {', '.join(SOURCES)}")
    adapter, _ = target.resolve()
    shapes = inputs.shapes()
    allowed = parse_allow_change(allow_change)
    kinds = corpus_kinds(sources, corpus or [])
    models = load_corpus(kinds, corpus or [])
    if build not in (None, "sanitize", "coverage"):
        raise InputError(f"unknown build {build!r}; known: sanitize, coverage")
    if build == "sanitize" and (guided or ray is not None):
        raise InputError("--build sanitize runs locally and unguided; leave out "
                         + ("--guided" if guided else "--ray"))
    guided = guided or build == "coverage"
    if crash_states and guided:
        raise InputError("--crash-states runs unguided (the sanitizer runtime would start "
                         "the coverage workers); leave out --crash-states or --guided")
    settings = CampaignSettings(
        out=out, target=adapter.name, seconds=duration,
        max_cases=limits.max_cases, jobs=jobs or (0 if ray else 2), seed=inputs.seed,
        generated="generated" in sources,
        mutated="mutated" in sources,
        generator=generator, corpus=models, corpus_kinds=kinds,
        corpus_dirs=list(corpus or []), passes=target.pass_list(), fixed_passes=fixed_passes,
        input_shapes=shapes,
        timeout=execution.timeout,
        memory_limit=options.memory_bytes(execution.memory_limit_gib),
        policy=FindingPolicy(localize=not no_localize, reduce_seconds=reduce_seconds),
        resume=resume, live=not quiet, allow_change=allowed, guided=guided,
        ray=None if ray is None else "" if ray == "local" else ray,
        build="sanitize" if build == "sanitize" else None, crash_states=crash_states,
        avoid_known=avoid_known)
    if not settings.generated and not settings.mutated and not models:
        raise InputError("no test cases: no generated or mutated source and an empty "
                         "corpus")
    try:
        if settings.ray is None:
            run_campaign(settings)
        else:
            from fuzzer.cluster.driver import run_cluster_campaign

            run_cluster_campaign(settings)
    except CampaignError as exc:  # one red line, exit 1; the folder stays resumable
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}",
                                   highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None


def corpus_kinds(sources: list[str], dirs: list[Path]) -> list[str]:
    """The corpus source kinds that ``--source`` names (``corpus`` = ``bundled`` plus ``dir``
    where ``--corpus`` folders are given; ``dir`` whenever they are), in order, once each."""
    kinds = []
    for name in sources:
        if name == "corpus":
            kinds += ["bundled"] + (["dir"] if dirs else [])
        elif name not in MADE_SOURCES:
            kinds.append(name)
    if dirs and "dir" not in kinds:
        kinds.append("dir")
    return list(dict.fromkeys(kinds))


def load_corpus(kinds: list[str], dirs: list[Path]) -> list:
    """Corpus models of the source ``kinds`` (see :func:`corpus_kinds`); ``dirs`` are the
    ``--corpus`` folders.

    Raises:
        InputError: a folder is missing, or a source cannot be listed.
    """
    if not kinds:
        return []
    for folder in dirs:
        if not folder.is_dir():
            raise InputError(f"--corpus {folder}: not a folder")
    try:
        from fuzzer.corpus import iter_models
    except ImportError:
        raise InputError("the corpus is not available in this installation") from None
    return list(iter_models(kinds, [str(d) for d in dirs]))


COMMAND = Command("fuzz", fuzz)
