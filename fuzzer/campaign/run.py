"""A fuzzing campaign: keep the workers busy with test cases, judge every result, and turn
findings into bundles (design.md, "Data flow").

One campaign owns its folder (:class:`fuzzer.store.lock.CampaignLock`) from start to end.
campaign.json records the settings and the run's provenance
(:mod:`fuzzer.campaign.provenance`) first thing, then the counters every :data:`SAVE_EVERY`
seconds and at the end; the folder's README.md (:mod:`fuzzer.campaign.readme`) is written
once, at the first start; ``--resume`` continues it only with the same settings
(:mod:`fuzzer.campaign.settings`), and first handles in full the pending findings its last
end left (:mod:`fuzzer.handling.pending`). A campaign that cannot go on (its finding thread or its
worker pool died, the disk is full) stops within seconds, saves what it can and raises
:class:`fuzzer.campaign.failure.CampaignError`; its folder stays resumable.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

# the generator is preloaded before the workers fork: a worker started after a crash would
# import it again, 0.2 s each
import generators.generate  # noqa: F401
from fuzzer.campaign.avoidance import KnownFaultAvoidance
from fuzzer.campaign.calibration import CaseTimeLimit
from fuzzer.campaign.failure import (
    CampaignError,
    as_campaign_error,
    disk_full,
    stopped,
)
from fuzzer.campaign.finding_thread import FindingWorker
from fuzzer.campaign.interrupt import StopRequest
from fuzzer.campaign.log import PROGRESS_SECONDS, close_log, open_log
from fuzzer.campaign.progress import render, summary
from fuzzer.campaign.provenance import add_run, run_provenance
from fuzzer.campaign.readme import write_readme
from fuzzer.campaign.settings import CampaignSettings, check_settings, saved_settings
from fuzzer.campaign.stats import CAMPAIGN_FILE, CampaignStats, rate_text
from fuzzer.campaign.stream import CaseStream, StreamConfig
from fuzzer.campaign.summary import write_summary
from fuzzer.errors import InputError
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import limit_malloc_arenas, release_free_memory
from fuzzer.execution.sandbox import CASE_PRELOAD, Sandbox, SandboxError
from fuzzer.handling.outcome import Handled
from fuzzer.handling.pending import describe, finish_pending
from fuzzer.store.folder import BundleStore, damage_note, is_disk_full
from fuzzer.store.lock import LOCK_FILE, CampaignLock
from fuzzer.store.pending import PendingStore, finish_command
from fuzzer.targets import get_target

__all__ = ["Campaign", "CampaignSettings", "run_campaign", "resume_state"]

#: cases per worker task at most (:meth:`fuzzer.execution.sandbox.Sandbox.submit_many`,
#: fewer while workers die often): pebble's traffic and the callbacks are paid once per
#: task. Against 8, 16 cut the campaign process's CPU from 0.24-0.34 to 0.16-0.21 ms per
#: case; against 16, 32 cut a worker's idle time between two tasks (about 1.5 ms each, a
#: twentieth of its time at 16) and raised the campaign's rate on
#: ``benchmarks/throughput.py``'s cases from a median 770 to 845 cases/s (six runs each,
#: in turn). The sandbox shrinks the batch as workers die more often.
BATCH = 32
#: the same in a guided campaign (``--guided``), which steers each case by the seed pool as
#: the coverage workers left it: with batches of 16 its case workers ran ahead of them, and
#: the climb to the fake target's planted branch (tests/test_guided.py) stopped at 4 of 6.
GUIDED_BATCH = 8
#: cases in flight per worker: three batches, so that no worker waits for the next one.
IN_FLIGHT_BATCHES = 3
#: seconds between campaign.json writes (the checkpoint a killed campaign resumes from);
#: ``OPTFUZZ_SAVE_EVERY`` sets another (a cluster campaign whose driver may be killed).
SAVE_EVERY = 10.0


def save_every() -> float:
    """Seconds between campaign.json writes: ``OPTFUZZ_SAVE_EVERY`` where set to a positive
    number, else :data:`SAVE_EVERY`."""
    try:
        seconds = float(os.environ.get("OPTFUZZ_SAVE_EVERY", ""))
    except ValueError:
        return SAVE_EVERY
    return seconds if seconds > 0 else SAVE_EVERY


FINISH_GRACE = 60.0  # seconds to finish queued findings (with reduction) at the end
#: seconds past the time limit that the cases in flight may take to come back; those still
#: running then are stopped unjudged (a batch of hanging cases would take its timeout per
#: case: minutes).
DRAIN_SECONDS = 5.0
_NOT_CONTENT = frozenset({LOCK_FILE, ".lock"})  # files a folder may hold and still be empty


def run_campaign(settings: CampaignSettings, console: Console | None = None,
                 campaign: type | None = None) -> CampaignStats:
    """Run a campaign until its time or case limit, the end of its sources, or Ctrl-C.

    ``campaign`` is the campaign class (a local one by default; :mod:`fuzzer.cluster.driver`
    passes its own). Returns the campaign's statistics (also saved as ``<out>/campaign.json``).

    Raises:
        InputError: another campaign holds the folder; or ``--resume`` found no campaign in a
            folder that is not empty, an unreadable campaign.json, or other settings (no case
            has run then).
        CampaignError: the campaign stopped early (finding thread or worker pool died, disk
            full); campaign.json is saved where the disk allowed, the folder is resumable.
    """
    console = console or Console()
    limit_malloc_arenas()  # before the campaign's threads: its RSS follows what it holds
    try:
        with CampaignLock(settings.out):
            return (campaign or Campaign)(settings, console).run()
    except OSError as exc:  # at start-up: the lock file, the folder, the first campaign.json
        if is_disk_full(exc):
            raise disk_full(exc, settings.out) from None
        raise


def resume_state(folder: Path, settings: CampaignSettings) -> tuple[CampaignStats | None,
                                                                    list[str]]:
    """The saved campaign in ``folder`` to continue with ``settings``, and the descriptions
    of the operational changes that ``settings.allow_change`` permitted; ``(None, [])`` for
    an empty or missing folder.

    Raises:
        InputError: no campaign.json in a folder that holds something else, an unreadable
            campaign.json, or settings that differ (see
            :func:`fuzzer.campaign.settings.check_settings`).
    """
    where = str(folder).rstrip("/") + "/"
    path = folder / CAMPAIGN_FILE
    if not path.is_file():
        if folder.is_dir() and any(p.name not in _NOT_CONTENT for p in folder.iterdir()):
            raise InputError(f"{where} holds no {CAMPAIGN_FILE} to resume; start without "
                             "--resume or choose another --out")
        return None, []
    try:
        data = json.loads(path.read_text())
        stats = CampaignStats.from_json(data)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} cannot be read ({exc}); start a new --out") from None
    changes = check_settings(folder, saved_settings(data), settings.record(),
                             settings.allow_change)
    return stats, changes


def check_scheduler(stats: CampaignStats | None, settings: CampaignSettings) -> None:
    """Refuse to continue a local campaign on Ray or a Ray campaign locally (their records
    of the cases run differ).

    Raises:
        InputError: ``stats`` (the saved campaign) ran on the other kind.
    """
    if stats is not None and stats.cases and bool(stats.cluster) != (settings.ray is not None):
        raise InputError(f"{settings.out} holds a campaign that ran "
                         f"{'on Ray' if stats.cluster else 'locally'}; resume it "
                         f"{'with' if stats.cluster else 'without'} --ray")


class Campaign:
    """One run of a campaign in a folder whose lock the caller holds; subclasses supply
    other workers (:meth:`_open_workers`), finding recorders (:meth:`_finding_worker`) and
    case loops (:meth:`_loop`)."""

    def __init__(self, settings: CampaignSettings, console: Console) -> None:
        self.settings, self.console = settings, console
        self.store = BundleStore(settings.out, batch_hits=True)
        self.target = get_target(settings.target)
        stats, changes = resume_state(self.store.root, settings) if settings.resume \
            else (None, [])
        for change in changes:
            console.print(f"setting changed: {change}", highlight=False)
        check_scheduler(stats, settings)
        self.stats = stats or CampaignStats(seed=settings.seed, target=settings.target)
        self.stats.settings = settings.record()
        self.stats.provenance = add_run(self.stats.provenance,
                                        run_provenance(settings.target, self.target.version()))
        self.stats.started = time.monotonic()
        self.stats.start_run()
        self.stats.save(self.store.root)
        write_readme(self.store.root, str(settings.out))
        self.log = open_log(self.store.root)
        self.log.info("run started: target %s, seed %s, jobs %s, %s%s", settings.target,
                      settings.seed, settings.jobs,
                      f"{settings.seconds:g} s" if settings.seconds else "no time limit",
                      ", resumed" if settings.resume else "")
        self.last_progress = time.monotonic()
        self.pools_replaced = 0
        self.stream = CaseStream(
            StreamConfig(settings.target, settings.seed, settings.generated, settings.generator,
                         settings.corpus, settings.passes, settings.input_shapes,
                         settings.fixed_passes, mutated=settings.mutated),
            self.target, self.stats.next_case, self.stats.corpus_next)
        for model_id in self.stats.unusable_models:
            self.stream.skip_model(model_id)
        self.first_case = self.stats.next_case
        self.done: queue.SimpleQueue[tuple[TestCase, CaseResult]] = queue.SimpleQueue()
        self.run_started = time.monotonic()
        self.run_cases = self.in_flight = self.corpus_in_flight = 0
        self.loop_ended = False
        self.corpus_cap = max(1, settings.jobs // 2)
        self.exhausted = False
        self.last_save = time.monotonic()
        self._lock = threading.Lock()
        self.time_limit = CaseTimeLimit(settings.timeout)
        self.avoidance = KnownFaultAvoidance() if settings.avoid_known else None
        self.guide = _guide(settings, self.store.root, self.target)
        self.batch = GUIDED_BATCH if self.guide is not None else BATCH
        self.sanitizer = _sanitizer(settings, self.target)
        self.witness = _witness(settings, self.target)
        if self.witness is not None:
            settings.policy = dataclasses.replace(settings.policy, witness=self.witness)
        self.findings = self._finding_worker()
        self.ctrl_c = StopRequest()
        self.documented_logged: set[str] = set()

    def _finding_worker(self) -> Any:
        """What records findings (a :class:`FindingWorker` thread in a local campaign)."""
        return FindingWorker(self.store, self._finding_sandbox, self.target.version(),
                             self.settings.policy, self._report, self.stats.failed_keys)

    def _finding_sandbox(self) -> Sandbox:
        """A one-worker sandbox for handling findings, with the campaign's limits."""
        settings = self.settings
        return Sandbox(1, settings.timeout, settings.memory_limit, sanitizer=self.sanitizer,
                       preload=CASE_PRELOAD)

    def _finish_pending(self) -> None:
        """On ``--resume``, handle in full the pending findings the last run's end left
        (:func:`fuzzer.handling.pending.finish_pending`, with the finding recorder's
        memories), one line each, before any new case; the run's time limit starts after
        them. Ctrl-C between two stops with the rest kept.

        Raises:
            KeyboardInterrupt: Ctrl-C was pressed.
            OSError: a write failed for lack of space.
            SandboxError: the sandbox of the findings stopped.
        """
        pending = PendingStore(self.store.root)
        total = pending.count()
        if not self.settings.resume or not total:
            return
        self.log.info("finishing %d pending finding(s)", total)
        done = [0]

        def progress(pending_id: str, outcome: Handled | None) -> None:
            done[0] += 1
            if outcome is not None:  # those kept are said once, with why, below
                self.console.print(f"pending finding {done[0]}/{total} {pending_id}: "
                                   f"{describe(outcome)}", markup=False, highlight=False)

        sandbox = self._finding_sandbox()
        try:
            run = finish_pending(self.store, pending, sandbox, self.settings.policy,
                                 self.findings.memo, self.findings.roots, self._report,
                                 progress, self.ctrl_c.check)
        finally:
            sandbox.close()
        for line in run.skipped + run.failed:
            self.log.info("pending finding kept: %s", line)
            self.console.print(f"pending finding kept: {line}", style="yellow", markup=False,
                               highlight=False, soft_wrap=True)
        self.run_started = time.monotonic()

    def _open_workers(self) -> Any:
        """The case workers: a sandbox of ``jobs`` processes (less the guide's)."""
        settings = self.settings
        return Sandbox(settings.jobs - (self.guide.jobs if self.guide else 0) or 1,
                       settings.timeout, settings.memory_limit, sanitizer=self.sanitizer,
                       batch=self.batch, preload=CASE_PRELOAD)

    def run(self) -> CampaignStats:
        """Run the case loop, finish the findings, save; see :func:`run_campaign`. Ctrl-C
        stops the loop between two cases (:mod:`fuzzer.campaign.interrupt`); a second press
        abandons the queued findings."""
        with self.ctrl_c:
            return self._run_interruptibly()

    def _run_interruptibly(self) -> CampaignStats:
        settings, findings = self.settings, self.findings
        interrupted, finished = False, False
        failure: CampaignError | None = None
        sandbox: Any = None
        try:
            sandbox = self._open_workers()
            live_console = self.console if settings.live else Console(quiet=True)
            with Live(self._panel(), console=live_console, refresh_per_second=2) as live:
                try:
                    self._finish_pending()
                    self._loop(sandbox, live)
                except KeyboardInterrupt:
                    interrupted = True
                except SandboxError as exc:
                    failure = stopped(str(exc))
                except CampaignError as exc:
                    failure = exc
                except OSError as exc:
                    if not is_disk_full(exc):
                        raise
                    failure = disk_full(exc, self.store.root)
                self.ctrl_c.raising = True  # from here a press abandons the queued findings
                self.stats.end_loop(self.run_cases, self.loop_seconds(), settings.seconds)
                self.loop_ended = True
                sandbox.close()
                live.update(self._panel())
                try:
                    findings.finish(FINISH_GRACE, quick=interrupted, abandon=failure is not None)
                except KeyboardInterrupt:  # a second Ctrl-C abandons the queued findings
                    interrupted = True
                    findings.finish(0.0, abandon=True)
                finished = True
        finally:
            if sandbox is not None:
                sandbox.close()
            if self.guide is not None:
                self.guide.close()
                self.stats.guided = self.guide.stats()
            if not finished:
                findings.finish(0.0, abandon=True)
            if self.sanitizer is not None:
                shutil.rmtree(self.sanitizer.folder, ignore_errors=True)
            if self.witness is not None:
                self.witness.close()
                shutil.rmtree(self.witness.runtime.folder, ignore_errors=True)
        if failure is None and findings.failure is not None:
            failure = as_campaign_error(findings.failure, "the finding thread", self.store.root)
        save_error = self._save()
        failure = failure or save_error
        self.console.print(summary(self.stats, self.run_cases, self.stats.last_run["seconds"],
                                   interrupted or failure is not None, str(settings.out)))
        for error in findings.errors[:5]:
            self.console.print(f"[red]finding not recorded[/red] ({error})", highlight=False)
        self._log_end(interrupted, failure)
        if findings.abandoned:
            self.console.print(f"{findings.abandoned} queued finding(s) not recorded",
                               highlight=False)
        damaged = damage_note(self.store.read_all()[1])
        if damaged:
            self.console.print(damaged, style="yellow", markup=False, highlight=False,
                               soft_wrap=True)
        if failure is not None:
            raise failure
        return self.stats

    def _loop(self, sandbox: Any, live: Live) -> None:
        """Keep ``sandbox`` busy and collect results until a limit or the end of the sources.

        Raises:
            CampaignError: the finding thread or the worker pool stopped.
            SandboxError: the pool refused a case.
            OSError: campaign.json could not be written.
        """
        while True:
            self.ctrl_c.check()
            self._fill(sandbox)
            if self.in_flight == 0 or self._past_drain():
                return
            self.findings.check()
            try:
                case, result = self.done.get(timeout=0.2)
            except queue.Empty:
                if not sandbox.alive:
                    raise stopped("the worker pool stopped") from None
                live.update(self._panel())
                continue
            self._collect(case, result)
            self._save_now_and_then(sandbox)

    def _save_now_and_then(self, sandbox: Any) -> None:
        """Every :func:`save_every` seconds: campaign.json, the log's progress line.

        Raises:
            OSError: campaign.json could not be written.
        """
        if time.monotonic() - self.last_save > save_every():
            self._checkpoint()
            self.stats.tick()
            self.stats.save(self.store.root)
            self.last_save = time.monotonic()
            self._log_progress(sandbox)
            release_free_memory()

    def _log_end(self, interrupted: bool, failure: CampaignError | None) -> None:
        """Log the run's end (how, cases, bundles, findings not recorded) and close the log."""
        for error in self.findings.errors:
            self.log.info("finding not recorded: %s", error)
        how = f"stopped: {failure}" if failure is not None else \
            "interrupted" if interrupted else "ended"
        seconds = float(self.stats.last_run.get("seconds") or 0.0)
        self.log.info("run %s: %d cases in %s s (%s/s), %d new bundles in all, %d hits",
                      how, self.run_cases, self.stats.last_run.get("seconds"),
                      rate_text(self.run_cases, seconds), self.stats.bundles_new,
                      self.stats.hits)
        close_log(self.log)

    def _log_progress(self, sandbox: Sandbox) -> None:
        """Log worker pools replaced since the last line, and progress every
        :data:`fuzzer.campaign.log.PROGRESS_SECONDS`."""
        replaced = sandbox.restarts + sandbox.recycled
        if replaced != self.pools_replaced:
            self.log.info("worker pool replaced: %d rebuilt after breaking, %d recycled for "
                          "memory growth", sandbox.restarts, sandbox.recycled)
            self.pools_replaced = replaced
        if time.monotonic() - self.last_progress >= PROGRESS_SECONDS:
            self.last_progress = time.monotonic()
            seconds = self.loop_seconds()
            self.log.info("progress: %d cases in %.0f s (%s/s), %d new bundles, %d hits",
                          self.run_cases, seconds, rate_text(self.run_cases, seconds),
                          self.stats.bundles_new, self.stats.hits)

    def _fill(self, sandbox: Sandbox) -> None:
        """Submit cases, a batch (:data:`BATCH`) at a time, while a whole batch fits under the
        in-flight bound, until a limit or the end of the sources."""
        cap = self.settings.jobs * IN_FLIGHT_BATCHES * self.batch
        while not self.exhausted and self.in_flight + self.batch <= cap \
                and not self._limit_reached():
            cases = []
            while len(cases) < self.batch and not self._limit_reached():
                corpus_ok = self.corpus_in_flight < self.corpus_cap
                try:
                    case = self.stream.draw(corpus_ok=corpus_ok)
                except StopIteration:
                    self.exhausted = True
                    break
                if self.guide is not None:
                    case = self.guide.steer(case, case.input_seed)
                    self.guide.measure(case)
                case = self.time_limit.apply(case)
                if self.avoidance is not None:
                    case = self.avoidance.apply(case)
                self.corpus_in_flight += _is_corpus(case)
                cases.append(case)
            for case, future in zip(cases, sandbox.submit_many(cases), strict=True):
                future.add_done_callback(lambda f, c=case: self.done.put((c, f.result())))
            self.in_flight += len(cases)

    def _collect(self, case: TestCase, result: CaseResult) -> None:
        """Count a finished case and queue its findings (blocks while the queue is full)."""
        self.in_flight -= 1
        self.corpus_in_flight -= _is_corpus(case)
        self.run_cases += 1
        self.stats.add(case, result)
        if self.time_limit.observe(case, result):
            limit = self.time_limit.limit
            self.log.info("time limit of generated cases: %s", f"{limit:g} s (calibrated from "
                          "their run times; a hang is confirmed at the whole timeout)"
                          if limit is not None else "the whole timeout")
        if self.avoidance is not None:
            self._avoid(case, result)
        if result.unusable and case.source.get("kind") == "corpus":
            self.stream.skip_model(case.source.get("model", ""))
        if result.documented:
            self._log_documented(result)
        elif result.findings and result.artifacts is not None:
            self.findings.put(case, result, self.ctrl_c.check)
        elif (lost := result.unrecordable()) is not None:
            self.findings.errors.append(lost)

    def _avoid(self, case: TestCase, result: CaseResult) -> None:
        """Count ``case`` for known-fault avoidance; log and record each feature it now
        leaves out of generated cases or draws again."""
        assert self.avoidance is not None
        changed = self.avoidance.observe(case, result)
        if not changed:
            return
        avoided = {a.feature: a for a in self.avoidance.avoided}
        with self._lock:
            self.stats.avoided = self.avoidance.to_json()
        for change in changed:
            feature = change[1:]
            if change[0] == "+":
                a = avoided[feature]
                self.log.info("avoiding %s in generated cases: %d of its %d cases ended in "
                              "%s", feature, round(a.share * a.cases), a.cases, a.ending[:160])
            else:
                self.log.info("drawing %s again: no known fault takes most of its cases any "
                              "more", feature)

    def _log_documented(self, result: CaseResult) -> None:
        """Log the first finding of each documented behaviour in this run; the rest are
        counted in campaign.json (they can be a seventh of all cases)."""
        name = str(result.documented)
        if name not in self.documented_logged:
            self.documented_logged.add(name)
            self.log.info("finding dropped (documented: %s): %s (later ones are counted in "
                          "campaign.json)", name[:200], result.findings[0].message[:200])

    def _checkpoint(self) -> None:
        # Cases still in flight are abandoned; a resumed campaign starts after the last one
        # drawn, so none is run twice.
        self.stats.next_case, self.stats.corpus_next = self.stream.index, \
            self.stream.corpus_drawn
        self.stats.failed_keys = self.findings.failures()

    def _save(self) -> CampaignError | None:
        """Write campaign.json and summary.html (with the pending findings left); the error
        if the disk is full."""
        self._checkpoint()
        self.stats.pending = PendingStore(self.store.root).count()
        self.stats.pending_command = finish_command(self.settings.out)
        self.stats.end_run()
        self.stats.tick(force=True)
        try:
            self.stats.save(self.store.root)
            write_summary(self.store.root, self.stats.to_json())
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            return disk_full(exc, self.store.root)
        return None

    def _past_drain(self) -> bool:
        """Whether the time limit passed over :data:`DRAIN_SECONDS` ago: the cases still in
        flight then (a batch whose cases hang, each until its timeout) are left to the
        sandbox's close, which stops them, and are said in the log. A case limit waits for
        every case (a run of ``--max-cases`` judges that many)."""
        limit = self.settings.seconds
        if limit is None or time.monotonic() - self.run_started < limit + DRAIN_SECONDS:
            return False
        self.log.info("time limit: %d case(s) still running %g s after it were stopped "
                      "unjudged", self.in_flight, DRAIN_SECONDS)
        return True

    def _limit_reached(self) -> bool:
        settings = self.settings
        if settings.seconds is not None and \
                time.monotonic() - self.run_started >= settings.seconds:
            return True
        return settings.max_cases is not None and self._cases_started() >= settings.max_cases

    def _cases_started(self) -> int:
        """Cases of this run handed to the workers so far."""
        return self.stream.index - self.first_case

    def _report(self, handled: Handled, message: str) -> None:
        with self._lock:
            self.stats.handled(handled.status, handled.bundle_id, handled.name, message,
                               handled.signature)
        if handled.status == "new":
            self.log.info("new bundle %s: %s", handled.bundle_id, message[:200])
        elif handled.status == "pending":
            self.log.info("finding kept in pending/ (%s): %s", handled.said[:200],
                          message[:200])
        elif handled.status not in ("hit", "merged"):
            self.log.info("finding dropped (%s%s): %s", handled.status,
                          f": {handled.said[:200]}" if handled.said else "", message[:200])

    def loop_seconds(self) -> float:
        """Seconds of this run's case loop: so far, or in all once it ended (the span
        :func:`fuzzer.campaign.stats.cases_per_second` divides by)."""
        if self.loop_ended:
            return float(self.stats.last_run.get("seconds") or 0.0)
        return time.monotonic() - self.run_started

    def _panel(self) -> Any:
        return render(self.stats, self.settings.seconds, self.run_cases, self.loop_seconds(),
                      str(self.settings.out), self.findings.pending())


def _guide(settings: CampaignSettings, folder: Path, target: Any) -> Any:
    """The campaign's :class:`fuzzer.campaign.guided.Guide` (None unless ``--guided``):
    half of the workers, at least one, measuring the target's code as it declares
    (:mod:`fuzzer.edges.kinds`: its coverage build, coverage.py over its Python sources).

    Raises:
        InputError: the target cannot be measured here (no coverage build, coverage.py
            missing).
    """
    if not settings.guided:
        return None
    from fuzzer.campaign.guided import Guide
    from fuzzer.edges.kinds import edge_setup

    setup = edge_setup(target, folder / "edges")
    return Guide(setup, max(1, settings.jobs // 2), settings.timeout, settings.memory_limit,
                 folder, settings.seed, settings.resume)


def _witness(settings: CampaignSettings, target: Any) -> Any:
    """The campaign's :class:`fuzzer.handling.crash_state.CrashWitness`, or None: none asked
    for (``crash_states`` False, or None for a target without native code of its own), the
    cases run on the sanitize build already, a guided campaign (the sanitizer runtime sets
    the interpreter that multiprocessing starts processes with, and the coverage workers
    start by spawn), or there is no sanitize build here."""
    if settings.build == "sanitize" or settings.guided or settings.crash_states is False or \
            (settings.crash_states is None and target.reports_edges):
        return None  # guided: its coverage workers start by spawn, which the runtime redirects
    from fuzzer.handling.crash_state import SANITIZED_SLOWDOWN, CrashWitness

    return CrashWitness.for_target(target, settings.timeout * SANITIZED_SLOWDOWN)


def _sanitizer(settings: CampaignSettings, target: Any) -> Any:
    """The campaign's :class:`fuzzer.builds.sanitizer.SanitizerRuntime` (None unless
    ``--build sanitize``).

    Raises:
        InputError: the target has no sanitize build, or GCC's ASan runtime is missing.
    """
    if settings.build != "sanitize":
        return None
    from fuzzer.builds import sanitizer_build
    from fuzzer.builds.sanitizer import sanitizer_runtime

    return sanitizer_runtime(sanitizer_build(target))


def _is_corpus(case: TestCase) -> int:
    return int(case.source.get("kind") == "corpus")
