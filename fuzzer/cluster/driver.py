"""The driver of a cluster campaign (``optfuzz fuzz --ray [ADDRESS]``).

Long-lived :class:`fuzzer.cluster.actors.CaseRunner` actors, one per worker slot (one per CPU
the cluster offers, ``--jobs`` caps it), run ranges of cases (:mod:`fuzzer.cluster.plan`);
results come back to the driver, which alone writes ``crashes/``. Findings go to a few
:class:`fuzzer.cluster.actors.FindingHandler` actors (:mod:`fuzzer.cluster.findings`), so
localization and reduction run on the cluster, not on the driver.

A range is *done* when its results are counted and its last finding is written; only then
does campaign.json list it (``cluster.done``, half-open intervals of range numbers; a range
cut by ``--max-cases`` is listed under ``cluster.partial`` with the cases run). Killing the
driver therefore loses nothing that ``--resume`` does not run again. An actor that dies (its
node is gone) loses the ranges it held: they are counted as lost cases and run once more on
another actor; Ray restarts the actor where a node has room, and it gets work again once it
answers.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import time
from typing import Any

from rich.console import Console, Group

from fuzzer.campaign.run import Campaign, check_scheduler, resume_state, run_campaign
from fuzzer.campaign.settings import CampaignSettings
from fuzzer.campaign.stats import CampaignStats
from fuzzer.cluster.actors import CaseRunner, FindingHandler, RangeResult
from fuzzer.cluster.findings import ClusterFindings
from fuzzer.cluster.liveness import Liveness
from fuzzer.cluster.nodes import NodeStats
from fuzzer.cluster.plan import CaseRange, RangePlan, compact, expand
from fuzzer.errors import InputError
from fuzzer.localize.memo import LocalizationMemo

#: ranges held by one case actor at a time, run at once (their cases share its sandbox).
RANGES_PER_ACTOR = 2
#: findings queued or being handled past which no new range is handed out (backpressure):
#: a few batches per handler (:data:`fuzzer.cluster.findings.BATCH`).
FINDINGS_BACKLOG = 256
#: one finding handler per this many case actors, at least one, at most MAX_HANDLERS.
ACTORS_PER_HANDLER = 8
MAX_HANDLERS = 8
#: times a range is run before its cases count as lost for good (resume runs it again).
RANGE_ATTEMPTS = 2
_WAIT = 0.2  # seconds of one wait for results


@dataclasses.dataclass(frozen=True)
class Portion:
    """Part of a range handed to an actor: ``count`` cases from ``offset`` of ``case_range``,
    on its ``attempt``-th try."""

    case_range: CaseRange
    offset: int
    count: int
    attempt: int = 1

    @property
    def key(self) -> tuple[int, int]:
        """Identity of the portion among those in flight."""
        return self.case_range.number, self.offset


def connect(address: str) -> Any:
    """Start a local Ray instance (``address`` empty) or join the cluster at ``address``
    (``auto``, ``host:port`` or ``ray://host:port``); return the ``ray`` module.

    Raises:
        InputError: Ray is not installed, or the cluster cannot be reached.
    """
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'optfuzz[ray]'") from None
    try:
        ray.init(address=address or None, log_to_driver=False, logging_level=logging.WARNING,
                 ignore_reinit_error=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(f"--ray {address or '(local)'}: cannot start or join Ray "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                         ) from None
    return ray


def run_cluster_campaign(settings: CampaignSettings,
                         console: Console | None = None) -> CampaignStats:
    """Run the campaign of ``settings`` on Ray (``settings.ray``); see
    :func:`fuzzer.campaign.run.run_campaign` for what it returns and raises.

    Raises:
        InputError: also when Ray is missing or unreachable, or with ``--guided``.
    """
    if settings.guided:
        raise InputError("--guided does not run on Ray yet; leave out --ray or --guided")
    if settings.resume:  # a folder it cannot continue is refused before Ray starts
        check_scheduler(resume_state(settings.out, settings)[0], settings)
    ray = connect(settings.ray or "")
    try:
        return run_campaign(settings, console, ClusterCampaign)
    finally:
        ray.shutdown()


class ActorPool:
    """The case actors and the ranges each holds.

    Attributes:
        actors: CaseRunner actor handles.
        in_flight: result ref -> (actor index, portion).
        liveness: which actors are up.
        recycled: always 0 (Ray owns the processes).
    """

    def __init__(self, ray: Any, count: int, settings: CampaignSettings, config: Any) -> None:
        self.ray = ray
        runner = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0,
                            max_concurrency=RANGES_PER_ACTOR)(CaseRunner)
        self.actors = [runner.remote(config, settings.timeout, settings.memory_limit)
                       for _ in range(count)]
        self.in_flight: dict[Any, tuple[int, Portion]] = {}
        self.liveness = Liveness(ray, self.actors)
        self.recycled = 0
        self.alive = True

    @property
    def restarts(self) -> int:
        """Actor failures seen."""
        return self.liveness.deaths

    def free_actor(self) -> int | None:
        """An actor that is up and holds fewer than :data:`RANGES_PER_ACTOR` ranges."""
        load = collections.Counter(index for index, _ in self.in_flight.values())
        free = [i for i in range(len(self.actors))
                if self.liveness.up(i) and load[i] < RANGES_PER_ACTOR]
        return min(free, key=lambda i: load[i]) if free else None

    def submit(self, index: int, portion: Portion, skipped: list[str],
               avoid: list[str]) -> None:
        """Hand ``portion`` to actor ``index``, its generated cases leaving out the features
        in ``avoid`` (:mod:`fuzzer.campaign.avoidance`)."""
        ref = self.actors[index].run.remote(portion.case_range, skipped, portion.offset,
                                            portion.count, avoid)
        self.in_flight[ref] = (index, portion)

    def close(self) -> None:
        """Stop every actor (ranges in flight are abandoned: not done, so resumable)."""
        for actor in self.actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # already gone with its node
                pass
        self.in_flight.clear()


class ClusterCampaign(Campaign):
    """A campaign whose cases run on Ray actors (see the module docstring)."""

    def __init__(self, settings: CampaignSettings, console: Console) -> None:
        import ray

        self.ray = ray
        offered = int(ray.cluster_resources().get("CPU", 1))
        self.actor_count = max(1, min(offered, settings.jobs) if settings.jobs else offered)
        super().__init__(settings, console)
        record = self.stats.cluster
        self.plan = RangePlan(settings.generated or settings.mutated,
                              self.stream.corpus_positions())
        if record and record.get("range_size") != self.plan.size:
            raise InputError(f"{settings.out} holds ranges of {record.get('range_size')} "
                             f"cases; this optfuzz makes ranges of {self.plan.size}")
        try:
            self.done = expand(record.get("done", []))
            self.partial = {int(k): int(v) for k, v in record.get("partial", {}).items()}
        except (TypeError, ValueError) as exc:
            raise InputError(f"{settings.out}/campaign.json: unreadable range record "
                             f"({exc}); start a new --out") from None
        self.lost_before = int(record.get("lost_cases_total", 0))
        self.nodes = NodeStats()
        self.skipped = set(self.stats.unusable_models)
        self.retry: collections.deque[Portion] = collections.deque(
            Portion(r, self.partial[r.number], r.count - self.partial[r.number])
            for r in (self.plan.at(n) for n in sorted(self.partial)) if r is not None)
        self.upcoming = self.plan.pending(self.done | set(self.partial))
        self.unsettled: dict[tuple[int, int], list[Any]] = {}
        self.dispatched = 0
        self.range_seconds = 0.0
        self.ranges_collected = 0
        self._last_panel = 0.0
        self.cpu_started = time.process_time()

    def _finding_worker(self) -> ClusterFindings:
        # a second thread per handler, for ``cut`` while a batch is handled: the driver
        # gives each handler one batch at a time (fuzzer.cluster.findings)
        handler = self.ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0,
                                  max_concurrency=2)(FindingHandler)
        count = min(MAX_HANDLERS, max(1, self.actor_count // ACTORS_PER_HANDLER))
        settings = self.settings
        # the folder's bundles are known faults: each handler tries their passes first
        memo = LocalizationMemo.of_bundles(self.store.index())
        handlers = [handler.remote(self.target.version(), settings.policy, settings.timeout,
                                   settings.memory_limit, self.stats.failed_keys, memo)
                    for _ in range(count)]
        return ClusterFindings(self.ray, handlers, self.store, self._report,
                               self._finding_settled, self.stats.failed_keys, memo)

    def _open_workers(self) -> ActorPool:
        return ActorPool(self.ray, self.actor_count, self.settings, self.stream.config)

    def run(self) -> CampaignStats:
        """Run the campaign (see :meth:`fuzzer.campaign.run.Campaign.run`); stop the
        finding handlers at the end."""
        try:
            return super().run()
        finally:
            for handler in self.findings.handlers:
                try:
                    self.ray.kill(handler, no_restart=True)
                except Exception:  # already gone with its node
                    pass

    def _cases_started(self) -> int:
        return self.dispatched

    def _next_portion(self) -> Portion | None:
        """The next range (or part of one) to run: ranges lost with an actor and parts left
        by an earlier run first; cut at the case limit. None when the sources are done."""
        if self.retry:
            portion = self.retry.popleft()
        else:
            case_range = next(self.upcoming, None)
            if case_range is None:
                return None
            portion = Portion(case_range, 0, case_range.count)
        if self.settings.max_cases is not None:
            left = self.settings.max_cases - self.dispatched
            if portion.count > left:
                self.retry.appendleft(dataclasses.replace(
                    portion, offset=portion.offset + left, count=portion.count - left))
                portion = dataclasses.replace(portion, count=left)
        return portion

    def _fill(self, pool: ActorPool) -> None:
        pool.liveness.refresh()
        while not self._limit_reached() and self.findings.pending() < FINDINGS_BACKLOG:
            index = pool.free_actor()
            if index is None:
                return
            portion = self._next_portion()
            if portion is None:
                self.exhausted = True
                return
            pool.submit(index, portion, sorted(self.skipped),
                        self.avoidance.names() if self.avoidance is not None else [])
            self.dispatched += portion.count

    def _loop(self, pool: ActorPool, live: Any) -> None:
        while True:
            self.ctrl_c.check()
            self.findings.check()
            if not self.exhausted:
                self._fill(pool)
            ranges = list(pool.in_flight)
            if not ranges and (self.exhausted or self._limit_reached()):
                return
            refs = ranges + self.findings.refs()
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=_WAIT) if refs \
                else ([], [])
            for ref in ready:
                if self.findings.owns(ref):
                    self.findings.complete(ref)
                else:
                    self._collect_range(pool, ref)
            if time.monotonic() - self._last_panel >= 0.5:
                live.update(self._panel())
                self._last_panel = time.monotonic()
            self._save_now_and_then(pool)

    def _collect_range(self, pool: ActorPool, ref: Any) -> None:
        """Count a range's results and queue its findings; a range lost with its actor is
        counted and queued to run again (up to :data:`RANGE_ATTEMPTS` times)."""
        started = time.process_time()
        index, portion = pool.in_flight.pop(ref)
        try:
            result: RangeResult = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the actor or its node died
            pool.liveness.mark_down(index)
            self.nodes.lose(portion.count)
            self.dispatched -= portion.count
            if portion.attempt < RANGE_ATTEMPTS:
                self.retry.appendleft(dataclasses.replace(portion, attempt=portion.attempt + 1))
            self.log.info("range %d (%d cases from %d) lost with its actor: %s",
                          portion.case_range.number, portion.count, portion.offset,
                          type(exc).__name__)
            return
        self.nodes.add(result.node, result.address, len(result.runs), result.seconds)
        self.run_cases += len(result.runs)
        for case, run in result.runs:
            if run.unusable and case.source.get("kind") == "corpus":
                self.skipped.add(case.source.get("model", ""))
        findings = [(c, r) for c, r in result.runs
                    if r.findings and r.artifacts is not None and not r.documented]
        self.findings.errors += [lost for _, r in result.runs
                                 if (lost := r.unrecordable()) is not None]
        self.unsettled[portion.key] = [len(findings), result.runs, portion]
        for case, run in findings:
            self.findings.put(case, run, portion.key)
        if not findings:
            self._range_done(portion.key)
        self.range_seconds += time.process_time() - started
        self.ranges_collected += 1

    def _finding_settled(self, key: tuple[int, int]) -> None:
        entry = self.unsettled.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] <= 0:
            started = time.process_time()
            self._range_done(key)
            self.range_seconds += time.process_time() - started

    def _range_done(self, key: tuple[int, int]) -> None:
        """Count a portion's cases and mark its range (or the part of it) done."""
        _, runs, portion = self.unsettled.pop(key)
        for case, run in runs:
            self.stats.add(case, run)
            if self.avoidance is not None:
                self._avoid(case, run)
        number, end = portion.case_range.number, portion.offset + portion.count
        if end >= portion.case_range.count:
            self.done.add(number)
            self.partial.pop(number, None)
        else:
            self.partial[number] = end

    def _checkpoint(self) -> None:
        seconds = time.monotonic() - self.run_started
        nodes = self.nodes.to_json(seconds)
        recorded = max(self.findings.recorded, 1)
        self.stats.failed_keys = self.findings.failures()
        self.stats.cluster = {
            "range_size": self.plan.size, "done": compact(self.done),
            "partial": {str(k): v for k, v in sorted(self.partial.items())},
            "actors": self.actor_count, "handlers": len(self.findings.handlers),
            "lost_cases_total": self.lost_before + self.nodes.lost_cases, **nodes,
            "driver_cpu_s": {
                "per_finding": round(self.findings.driver_seconds / recorded, 6),
                "per_range": round(self.range_seconds / max(self.ranges_collected, 1), 6),
                "findings": self.findings.recorded, "ranges": self.ranges_collected,
                "total": round(time.process_time() - self.cpu_started, 3),
                "loop_seconds": round(self.stats.last_run.get("seconds", seconds), 3)},
        }

    def _panel(self) -> Any:
        seconds = time.monotonic() - self.run_started
        return Group(super()._panel(), self.nodes.table(seconds, self.actor_count))
