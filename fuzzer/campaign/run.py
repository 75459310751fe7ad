"""A fuzzing campaign: keep the workers busy with test cases, judge every result, and turn
findings into bundles (design.md, "Data flow")."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from fuzzer.campaign.finding_thread import FindingWorker
from fuzzer.campaign.progress import render, summary
from fuzzer.campaign.record import FindingPolicy
from fuzzer.campaign.stats import CampaignStats
from fuzzer.campaign.stream import CaseStream, StreamConfig
from fuzzer.campaign.summary import write_summary
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.sandbox import DEFAULT_MEMORY_LIMIT, DEFAULT_TIMEOUT, Sandbox
from fuzzer.store.folder import BundleStore
from fuzzer.targets import get_target

IN_FLIGHT_PER_JOB = 8
SAVE_EVERY = 10.0  # seconds between campaign.json writes
FINISH_GRACE = 60.0  # seconds to finish queued findings (with reduction) at the end


@dataclass
class CampaignSettings:
    """Everything ``optfuzz fuzz`` was asked for.

    Attributes:
        seconds: duration limit in seconds (None: no limit).
        max_cases: case limit (None: no limit).
        jobs: worker processes.
        timeout: per-case timeout in seconds.
        memory_limit: per-worker address-space limit in bytes.
        resume: continue the campaign saved in ``out``.
    """

    out: Path
    target: str = "onnxoptimizer"
    seconds: float | None = None
    max_cases: int | None = None
    jobs: int = 2
    seed: int = 0
    generated: bool = True
    generator: str = "v2"
    corpus: list[Any] = field(default_factory=list)
    passes: list[str] | None = None
    fixed_passes: bool = False
    input_shapes: dict[str, list[int]] | None = None
    timeout: float = DEFAULT_TIMEOUT
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    policy: FindingPolicy = field(default_factory=FindingPolicy)
    resume: bool = False
    live: bool = True


def run_campaign(settings: CampaignSettings, console: Console | None = None) -> CampaignStats:
    """Run a campaign until its time or case limit, the end of its sources, or Ctrl-C.

    Returns the campaign's statistics (also saved as ``<out>/campaign.json``).
    """
    console = console or Console()
    store = BundleStore(settings.out, batch_hits=True)
    target = get_target(settings.target)
    stats = CampaignStats.load(store.root) if settings.resume else None
    if stats is None or stats.target != settings.target:
        stats = CampaignStats(seed=settings.seed, target=settings.target)
    stats.started = time.monotonic()
    stream = CaseStream(StreamConfig(settings.target, stats.seed, settings.generated,
                                     settings.generator, settings.corpus, settings.passes,
                                     settings.input_shapes, settings.fixed_passes), target,
                         stats.next_case,
                         stats.corpus_next)
    for model_id in stats.unusable_models:
        stream.skip_model(model_id)
    done: queue.SimpleQueue[tuple[TestCase, CaseResult]] = queue.SimpleQueue()
    version = target.version()
    run_started, run_cases, in_flight, interrupted = time.monotonic(), 0, 0, False
    corpus_in_flight, corpus_cap = 0, max(1, settings.jobs // 2)
    exhausted = False
    lock = threading.Lock()

    def report(bid: str, created: bool, message: str) -> None:
        with lock:
            if created:
                stats.bundles_new += 1
                stats.newest = f"{bid}: {message[:80]}"
            else:
                stats.hits += 1

    findings = FindingWorker(store, lambda: Sandbox(1, settings.timeout, settings.memory_limit),
                             version, settings.policy, report)
    last_save = time.monotonic()

    def limit_reached() -> bool:
        if settings.seconds is not None and time.monotonic() - run_started >= settings.seconds:
            return True
        return settings.max_cases is not None and stream.index - stats.next_case >= \
            settings.max_cases

    def panel() -> Any:
        return render(stats, settings.seconds, run_cases, time.monotonic() - run_started,
                      str(settings.out), findings.pending())

    sandbox = Sandbox(settings.jobs, settings.timeout, settings.memory_limit)
    try:
        live_console = console if settings.live else Console(quiet=True)
        with Live(panel(), console=live_console, refresh_per_second=2) as live:
            try:
                while True:
                    while not exhausted and in_flight < settings.jobs * IN_FLIGHT_PER_JOB \
                            and not limit_reached():
                        try:
                            case = stream.draw(corpus_ok=corpus_in_flight < corpus_cap)
                        except StopIteration:
                            exhausted = True
                            break
                        corpus_in_flight += _is_corpus(case)
                        future = sandbox.submit(case)
                        future.add_done_callback(lambda f, c=case: done.put((c, f.result())))
                        in_flight += 1
                    if in_flight == 0:
                        break
                    try:
                        case, result = done.get(timeout=0.2)
                    except queue.Empty:
                        live.update(panel())
                        continue
                    in_flight -= 1
                    corpus_in_flight -= _is_corpus(case)
                    run_cases += 1
                    stats.add(case, result)
                    if result.unusable and case.source.get("kind") == "corpus":
                        stream.skip_model(case.source.get("model", ""))
                    if result.findings and result.artifacts is not None:
                        findings.put(case, result)
                    if time.monotonic() - last_save > SAVE_EVERY:
                        stats.next_case, stats.corpus_next = stream.index, stream.corpus_drawn
                        stats.tick()
                        stats.save(store.root)
                        last_save = time.monotonic()
            except KeyboardInterrupt:
                interrupted = True
            stats.last_run = {"cases": run_cases,
                              "seconds": round(time.monotonic() - run_started, 3)}
            sandbox.close()
            live.update(panel())
            try:
                findings.finish(FINISH_GRACE, quick=interrupted)
            except KeyboardInterrupt:  # a second Ctrl-C abandons the queued findings
                interrupted = True
    finally:
        sandbox.close()
    # Cases still in flight are abandoned; a resumed campaign starts after the last one
    # drawn, so none is run twice.
    stats.next_case, stats.corpus_next = stream.index, stream.corpus_drawn
    stats.tick(force=True)
    stats.save(store.root)
    write_summary(store.root, stats.to_json())
    console.print(summary(stats, run_cases, stats.last_run["seconds"], interrupted,
                          str(settings.out)))
    for error in findings.errors[:5]:
        console.print(f"[red]finding not recorded[/red] ({error})", highlight=False)
    return stats


def _is_corpus(case: TestCase) -> int:
    return int(case.source.get("kind") == "corpus")
