"""Coverage-guided campaigns (``optfuzz fuzz --guided``): a seed pool steered by the target's
own branch edges, as AFL's queue is.

A share of the workers measure the target's own code (their own sandbox, :class:`EdgeSetup`:
a coverage build's counters, coverage.py's arcs of a Python target's rewrite sources, see
:mod:`fuzzer.edges.kinds`); the campaign sends them copies of the cases it runs, as many as
they keep up with: the newest waiting copy goes to the next worker free, older ones are
dropped once more than :data:`WAITING_PER_WORKER` per worker wait. A measured
case whose edge features (edge, hit-count bucket) include one never seen joins the pool.
Later cases are, half of the time, mutations (:mod:`generators.mutate`) of a pool seed chosen
by energy: the sum over the features the seed brought of ``1 / cases that hit it``, so seeds
of rare edges are mutated most (the "rare edge" power schedule of AFLFast, Böhme et al.,
CCS 2016, and FairFuzz, Lemieux and Sen, ASE 2018), damped by the square root of the times
it was chosen. Findings come only from the ordinary workers, so verdicts and speed stay those
of the ordinary build. The pool is kept in ``<out>/queue.jsonl`` (one seed's source per line)
and read back by ``--resume``.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.edges.setup import EdgeSetup
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.mutated import MAX_LINEAGE, lineage

QUEUE_FILE = "queue.jsonl"
#: share of drawn cases that mutate a pool seed, once the pool has one.
MUTATE_SHARE = 0.5
#: measured cases in flight per coverage worker (more would only queue up).
IN_FLIGHT_PER_WORKER = 2
#: copies of drawn cases that wait for a coverage worker, per worker; past them the oldest
#: is dropped. The campaign draws its cases in batches (``GUIDED_BATCH`` of
#: :mod:`fuzzer.campaign.run`) while only ``IN_FLIGHT_PER_WORKER`` copies fit in flight:
#: without a wait the coverage worker of a 2-job onnxslim campaign measured 59 of 400 cases
#: and was idle most of the time.
WAITING_PER_WORKER = 8


@dataclass
class Seed:
    """One pool entry.

    Attributes:
        source: the case source that rebuilds its model (generated, corpus or mutated).
        config: the target configuration it ran with.
        found: edge features it reached first.
        chosen: times it was picked as a parent.
    """

    source: dict[str, Any]
    config: dict[str, Any]
    found: frozenset[int] = frozenset()
    chosen: int = 0


@dataclass
class SeedPool:
    """The seeds that reached new edge features, and how often each feature was hit.

    Attributes:
        seeds: pool entries in the order they joined.
        hits: edge feature -> measured cases that took it.
    """

    seeds: list[Seed] = field(default_factory=list)
    hits: Counter[int] = field(default_factory=Counter)

    def observe(self, case: TestCase, features: frozenset[int]) -> Seed | None:
        """Count ``features`` of a measured case; the new seed if any is new, else None."""
        new = frozenset(f for f in features if f not in self.hits)
        self.hits.update(features)
        if not new:
            return None
        seed = Seed(dict(case.source), dict(case.config), new)
        self.seeds.append(seed)
        return seed

    def energy(self, seed: Seed) -> float:
        """Rare-edge energy of ``seed`` (see the module docstring)."""
        rare = sum(1.0 / max(1, self.hits[f]) for f in seed.found)
        return rare / (1 + seed.chosen) ** 0.5

    def choose(self, rng: random.Random) -> Seed:
        """A seed drawn with probability proportional to its energy.

        Raises:
            IndexError: the pool is empty.
        """
        weights = [self.energy(s) for s in self.seeds]
        seed = rng.choices(self.seeds, weights=weights)[0] if sum(weights) > 0 else \
            rng.choice(self.seeds)
        seed.chosen += 1
        return seed


class Guide:
    """Steers a campaign's cases by the coverage of the target's own code that the
    ``setup``'s workers measure. A thread of its own hands the waiting copies to them.

    Args:
        setup: the coverage workers' set-up (coverage kind, build or sources, counter
            folder).
        jobs: coverage workers.
        timeout: per-case timeout in seconds.
        memory_limit: per-worker address-space limit in bytes.
        folder: the campaign folder (``queue.jsonl`` is kept there).
        seed: the campaign seed (the choice of parents is deterministic given the results).
        resume: read the pool back from ``queue.jsonl``.
    """

    def __init__(self, setup: EdgeSetup, jobs: int, timeout: float,
                 memory_limit: int | None, folder: Path, seed: int, resume: bool) -> None:
        from fuzzer.execution.sandbox import Sandbox

        self.sandbox = Sandbox(jobs, timeout, memory_limit, edges=setup)
        # a coverage worker starts afresh (spawn, the build's imports): wait for one before
        # the campaign's cases begin, so that the first cases are measured too and a short
        # campaign is steered as a long one starts
        self.sandbox.call(_ready)
        self.jobs = jobs
        self.pool = SeedPool()
        self.queue_file = folder / QUEUE_FILE
        self.rng = random.Random(seed)
        self.measured = self.in_flight = 0
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiting: deque[TestCase] = deque(maxlen=jobs * WAITING_PER_WORKER)
        self._closing = False
        self._feeder = threading.Thread(target=self._feed, name="guide-feeder", daemon=True)
        self._feeder.start()
        if resume and self.queue_file.is_file():
            for line in self.queue_file.read_text().splitlines():
                try:
                    entry = json.loads(line)
                    self.pool.seeds.append(Seed(entry["source"], entry["config"]))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a kill

    def steer(self, case: TestCase, case_seed: int) -> TestCase:
        """``case``, or in :data:`MUTATE_SHARE` of the draws a mutation of a pool seed
        (seeded by ``case_seed``) with that seed's configuration."""
        with self._lock:
            if not self.pool.seeds or self.rng.random() >= MUTATE_SHARE or \
                    case.source.get("kind") == "corpus":
                return case
            parent = self.pool.choose(self.rng)
        if lineage(parent.source) >= MAX_LINEAGE:
            return case
        source = {"kind": "mutated", "seed": case_seed, "parent": parent.source}
        return TestCase(case.target, dict(parent.config), source, input_seed=case_seed,
                        input_shapes=case.input_shapes)

    def measure(self, case: TestCase) -> None:
        """Queue a copy of ``case`` for the coverage workers (the oldest waiting copy is
        dropped when :data:`WAITING_PER_WORKER` per worker wait)."""
        with self._room:
            self._waiting.append(case)
            self._room.notify()

    def _feed(self) -> None:
        """Hand the newest waiting copy to the coverage workers whenever they have room,
        until :meth:`close`."""
        from fuzzer.execution.sandbox import SandboxError

        while True:
            with self._room:
                while not self._closing and (
                        not self._waiting or
                        self.in_flight >= self.jobs * IN_FLIGHT_PER_WORKER):
                    self._room.wait()
                if self._closing:
                    return
                case = self._waiting.pop()
                self.in_flight += 1
            try:
                future = self.sandbox.submit(case)
            except SandboxError:
                return  # closed under us
            future.add_done_callback(lambda f, c=case: self._measured(c, f.result()))

    def _measured(self, case: TestCase, result: CaseResult) -> None:
        with self._room:
            self.in_flight -= 1
            self.measured += 1
            self._room.notify()
            if result.unusable or not result.edges:
                return
            seed = self.pool.observe(case, result.edges)
        if seed is not None:
            with self.queue_file.open("a") as out:
                out.write(json.dumps({"source": seed.source, "config": seed.config}) + "\n")

    def stats(self) -> dict[str, int]:
        """Pool size, distinct edge features and measured cases."""
        with self._lock:
            return {"seeds": len(self.pool.seeds), "edge_features": len(self.pool.hits),
                    "measured": self.measured}

    def close(self) -> None:
        """Stop handing out copies (those waiting are dropped) and the coverage workers."""
        with self._room:
            self._closing = True
            self._room.notify_all()
        self._feeder.join()
        self.sandbox.close()


def _ready() -> bool:
    """Nothing: a call that returns once a worker is up."""
    return True
