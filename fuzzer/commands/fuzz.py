"""``optfuzz fuzz``: run a campaign."""

from __future__ import annotations

from pathlib import Path

import typer

from fuzzer.errors import InputError

SOURCES = ("generated", "corpus", "bundled", "pypi", "hub", "dir")


def parse_list(text: str | None) -> list[str] | None:
    """``"a,b, c"`` -> ``["a", "b", "c"]``; None or empty -> None."""
    items = [t.strip() for t in (text or "").split(",") if t.strip()]
    return items or None


def register(app: typer.Typer) -> None:
    """Add the ``fuzz`` command to ``app``."""

    @app.command()
    def fuzz(
        hours: float = typer.Option(None, help="Run for this many hours."),
        minutes: float = typer.Option(None, help="Run for this many minutes."),
        seconds: float = typer.Option(None, help="Run for this many seconds."),
        max_cases: int = typer.Option(None, "--max-cases", help="Stop after N cases."),
        jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Worker processes."),
        seed: int = typer.Option(0, help="Campaign seed (cases are deterministic from it)."),
        out: Path = typer.Option(Path("crashes"), help="Output folder of bundles."),
        source: str = typer.Option(
            "generated,corpus", help="Comma list of: generated, corpus (bundled models and "
            "--corpus folders), bundled, pypi, hub, dir."),
        corpus: list[Path] = typer.Option(None, "--corpus", help="Folder of .onnx files."),
        passes: str = typer.Option(None, help="Comma list of passes to draw from."),
        fixed_passes: bool = typer.Option(
            False, "--fixed-passes", help="Run exactly --passes (default: the target's "
            "default list) in order for every case, instead of cycling configurations."),
        input_shapes: list[str] = typer.Option(
            None, "--input-shapes", help="Dynamic dims, e.g. input:1,3,224,224."),
        target: str = typer.Option("onnxoptimizer", help="System under test."),
        generator: str = typer.Option("v2", help="Graph generator (v1 or v2)."),
        timeout: float = typer.Option(30.0, help="Per-case timeout, seconds."),
        memory_limit_gib: float = typer.Option(4.0, "--memory-limit-gib",
                                               help="Per-worker address-space limit, GiB."),
        reduce_seconds: float = typer.Option(120.0, "--reduce-seconds",
                                             help="Time bound of each reduction (0: off)."),
        no_localize: bool = typer.Option(False, "--no-localize", help="Skip localization."),
        resume: bool = typer.Option(False, help="Continue the campaign saved in --out."),
        quiet: bool = typer.Option(False, help="No live progress display."),
    ) -> None:
        """Run a fuzzing campaign; findings land in OUT as one bundle per distinct bug."""
        from fuzzer.campaign.record import FindingPolicy
        from fuzzer.campaign.run import CampaignSettings, run_campaign
        from fuzzer.targets import cli_target, require_passes
        from generators.inputs import InputSpecError, parse_input_shapes

        limits = [v for v in (hours and hours * 3600, minutes and minutes * 60, seconds) if v]
        if len(limits) > 1:
            raise InputError("give at most one of --hours, --minutes, --seconds")
        sources = parse_list(source) or []
        unknown = [s for s in sources if s not in SOURCES]
        if unknown:
            raise InputError(f"unknown source(s) {unknown}; known: {', '.join(SOURCES)}")
        adapter = cli_target(target)
        try:
            shapes = parse_input_shapes(input_shapes)
        except InputSpecError as exc:
            raise InputError(str(exc)) from None
        models = load_corpus(sources, corpus or [])
        pass_list = parse_list(passes)
        if pass_list:
            require_passes(adapter, pass_list)
        settings = CampaignSettings(
            out=out, target=target, seconds=limits[0] if limits else None,
            max_cases=max_cases, jobs=jobs, seed=seed, generated="generated" in sources,
            generator=generator, corpus=models, passes=pass_list, fixed_passes=fixed_passes,
            input_shapes=shapes or None,
            timeout=timeout, memory_limit=int(memory_limit_gib * (1 << 30)) or None,
            policy=FindingPolicy(localize=not no_localize, reduce_seconds=reduce_seconds),
            resume=resume, live=not quiet)
        if not settings.generated and not models:
            raise InputError("no test cases: no generated source and an empty corpus")
        run_campaign(settings)


def load_corpus(sources: list[str], dirs: list[Path]) -> list:
    """Corpus models of the named sources (``corpus`` = bundled models plus ``dirs``)."""
    kinds = []
    for name in sources:
        if name == "corpus":
            kinds += ["bundled"] + (["dir"] if dirs else [])
        elif name != "generated":
            kinds.append(name)
    if dirs and "dir" not in kinds:
        kinds.append("dir")
    if not kinds:
        return []
    for folder in dirs:
        if not folder.is_dir():
            raise InputError(f"--corpus {folder}: not a folder")
    try:
        from fuzzer.corpus import iter_models
    except ImportError:
        raise InputError("the corpus is not available in this installation") from None
    return list(iter_models(list(dict.fromkeys(kinds)), [str(d) for d in dirs]))
