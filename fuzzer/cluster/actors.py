"""What runs on the cluster's nodes: :class:`CaseRunner` (one per worker slot) runs ranges of
cases, :class:`FindingHandler` (a few per campaign) localizes, reduces and verifies findings.
Both are plain classes that the driver turns into Ray actors; each keeps a
:class:`fuzzer.execution.sandbox.Sandbox` of its own, so a case that kills its worker (a
segfault in the optimizer) kills a child of the actor, never the actor.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fuzzer.campaign.avoidance import avoiding
from fuzzer.campaign.calibration import CaseTimeLimit
from fuzzer.campaign.finding_thread import policy_at_hand
from fuzzer.campaign.stream import CaseStream, StreamConfig
from fuzzer.cluster.plan import CaseRange
from fuzzer.cluster.recording import RecordingStore, StoreOp
from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.memory import limit_malloc_arenas, release_free_memory
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import FindingPolicy, Handled, RootCauseMemo
from fuzzer.handling.record import handle_finding
from fuzzer.localize.memo import LocalizationMemo
from fuzzer.reduce.predicate import Cutoff
from fuzzer.targets import get_target

#: sandbox workers of an actor fork from a fork server: the actor's own threads (Ray's) may
#: hold a lock at the moment of a plain fork, and the worker would wait on it for ever.
ACTOR_START_METHOD = "forkserver"


def node_identity() -> tuple[str, str]:
    """``(node id, node address)`` of the Ray node this process runs on; ``("local",
    "127.0.0.1")`` outside Ray."""
    try:
        import ray

        context = ray.get_runtime_context()
        return context.get_node_id(), ray.util.get_node_ip_address()
    except Exception:  # not in a Ray worker
        return "local", "127.0.0.1"


@dataclass
class RangeResult:
    """The cases of one range and what each produced.

    Attributes:
        number: the range's number in the campaign's sequence.
        runs: ``(case, result)`` for each case, in order.
        node: id of the Ray node that ran them.
        address: that node's IP address.
        seconds: wall time of the range on the node.
    """

    number: int
    runs: list[tuple[TestCase, CaseResult]] = field(default_factory=list)
    node: str = ""
    address: str = ""
    seconds: float = 0.0


class SandboxActor:
    """Base of the actors: a one-worker sandbox made on first use and again after its pool
    stopped (:meth:`sandbox`), a ping (:meth:`pid`) and :meth:`close`. Subclasses set
    ``timeout`` (seconds per case) and ``memory_limit`` (bytes, or None)."""

    timeout: float
    memory_limit: int | None
    _sandbox: Sandbox | None = None
    _sandbox_lock = threading.Lock()  # an actor may run calls in threads of its own

    def sandbox(self) -> Sandbox:
        """The actor's sandbox (workers from a fork server, :data:`ACTOR_START_METHOD`)."""
        with self._sandbox_lock:
            if self._sandbox is None or not self._sandbox.alive:
                self._sandbox = Sandbox(1, self.timeout, self.memory_limit,
                                        start_method=ACTOR_START_METHOD)
            return self._sandbox

    def pid(self) -> int:
        """The actor's process id (a ping)."""
        return os.getpid()

    def close(self) -> None:
        """Stop the sandbox's worker."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


class CaseRunner(SandboxActor):
    """Runs ranges of a campaign's cases in a one-worker sandbox, generated cases within the
    limit calibrated from this actor's own run times (:mod:`fuzzer.campaign.calibration`).
    The driver makes it an actor that runs two calls at once (threads), so the next range's
    cases are queued in the sandbox while the last ones of the current range run and its
    results travel: the worker never waits between ranges.

    Args:
        config: the campaign's case stream (its corpus is the corpus list; mutated cases draw
            their corpus parents from it as in a local campaign).
        timeout: per-case timeout in seconds.
        memory_limit: the worker's address-space limit in bytes (None: none).
    """

    def __init__(self, config: StreamConfig, timeout: float, memory_limit: int | None) -> None:
        limit_malloc_arenas()
        self.config, self.timeout, self.memory_limit = config, timeout, memory_limit
        self.target = get_target(config.target_name)
        self.time_limit = CaseTimeLimit(timeout)  # calibrated on this actor's own cases

    def run(self, case_range: CaseRange, skipped: list[str], offset: int = 0,
            count: int | None = None, avoid: list[str] | None = None) -> RangeResult:
        """Run ``count`` cases (None: all) from ``offset`` of ``case_range`` (corpus models in
        ``skipped`` left out), the generated ones leaving out the features in ``avoid``
        (:func:`fuzzer.campaign.avoidance.avoiding`), and return every result."""
        started = time.monotonic()
        end = case_range.count if count is None else offset + count
        cases = self.cases(dataclasses.replace(case_range, start=case_range.start + offset,
                                               count=end - offset), skipped) \
            if case_range.kind == "corpus" else self.cases(case_range, skipped)[offset:end]
        cases = [avoiding(self.time_limit.apply(case), avoid or []) for case in cases]
        sandbox = self.sandbox()
        futures = [sandbox.submit(case) for case in cases]
        node, address = node_identity()
        runs = [(case, future.result()) for case, future in zip(cases, futures, strict=True)]
        for case, result in runs:
            self.time_limit.observe(case, result)
        return RangeResult(case_range.number, runs, node, address, time.monotonic() - started)

    def cases(self, case_range: CaseRange, skipped: list[str]) -> list[TestCase]:
        """The test cases of ``case_range``: the same on any node for the same settings."""
        config = self.config
        if case_range.kind == "corpus":
            stream = CaseStream(dataclasses.replace(config, generated=False, mutated=False),
                                self.target)
            for model_id in skipped:
                stream.skip_model(model_id)
            return stream.corpus_range(case_range.start, case_range.count)
        generated = dataclasses.replace(config, corpus=[],
                                        parents=config.parents or config.corpus or None)
        stream = CaseStream(generated, self.target, case_range.start)
        return [stream.draw(corpus_ok=False) for _ in range(case_range.count)]



class FindingHandler(SandboxActor):
    """Handles findings on a cluster node (:func:`fuzzer.handling.record.handle_finding`)
    against a :class:`fuzzer.cluster.recording.RecordingStore`; keeps its own localization
    and root-cause memos across findings.

    Args:
        version: the target's version (meta.json).
        policy: localization and reduction settings.
        timeout: per-case timeout in seconds.
        memory_limit: the worker's address-space limit in bytes (None: none).
        failures: the root-cause keys an earlier run failed on
            (:meth:`fuzzer.handling.outcome.RootCauseMemo.failures`).
        memo: the localization memo to start from (the driver's folder's bundles:
            :meth:`fuzzer.localize.memo.LocalizationMemo.of_bundles`); None: an empty one.
    """

    def __init__(self, version: str, policy: FindingPolicy, timeout: float,
                 memory_limit: int | None, failures: dict[str, Any] | None = None,
                 memo: LocalizationMemo | None = None) -> None:
        limit_malloc_arenas()
        # a cutoff of its own: :meth:`cut` ends this handler's reductions, nobody else's
        self.version, self.policy = version, dataclasses.replace(policy, cutoff=Cutoff())
        self.timeout, self.memory_limit = timeout, memory_limit
        self.memo = memo if memo is not None else LocalizationMemo()
        self.roots = RootCauseMemo(failures)

    def handle(self, batch: list[tuple[TestCase, CaseResult]], known: dict[str, str | None],
               quick: bool = False) -> list[tuple[Handled | None, list[StoreOp], str]]:
        """What became of each finding of ``batch``, in order, with the store writes each
        asks for; with ``quick``, no reduction and a bounded localization, and a new root
        cause ends ``pending`` (no bundle: the driver keeps the finding). ``known`` is the
        driver's bundle id -> root-cause key; a bundle that an earlier finding of the batch
        creates is known to the later ones. Past the moment :meth:`cut` set, every batch is
        handled quick. Per finding, the third item is an error line where handling failed
        (then the first is None).

        One call per batch, not per finding: most findings are hits of a known root cause,
        handled in milliseconds, and a Ray call per finding would cost as much again."""
        if quick:  # the campaign's grace period is over: a new root cause ends pending
            self.policy.cutoff.cut()
        policy = policy_at_hand(self.policy, quick)
        store = RecordingStore(known)
        out: list[tuple[Handled | None, list[StoreOp], str]] = []
        for case, result in batch:
            first = len(store.ops)
            try:
                handled = handle_finding(store, self.sandbox(),  # type: ignore[arg-type]
                                         case, result, self.version, policy, self.memo,
                                         self.roots)
            except Exception as exc:  # a bug of optfuzz: the campaign goes on, the driver
                del store.ops[first:]  # says why
                out.append((None, [], f"{type(exc).__name__}: {exc}"))
                continue
            out.append((handled, store.ops[first:], ""))
        release_free_memory()
        return out

    def failures(self) -> dict[str, Any]:
        """This handler's failed root-cause keys
        (:meth:`fuzzer.handling.outcome.RootCauseMemo.failures`)."""
        return self.roots.failures()

    def cut(self, seconds: float) -> None:
        """End the reductions and trigger probes under way (with the best model found so
        far) and those of every later finding ``seconds`` from now (0: at once): the
        campaign's grace period ends then, and the findings after it are handled quick. The
        driver calls it while :meth:`handle` runs (the actor has a second thread for it);
        ``seconds`` is relative, so the driver's and the node's clocks need not agree."""
        self.policy.cutoff.cut(time.monotonic() + max(0.0, seconds))
