"""Sandbox.submit_many: cases run several per worker task, and a death or a hang in a batch
is still the case's own (its stage in the shared array), the batch's other cases run again
(as one batch where the dead case is known)."""

from __future__ import annotations

from concurrent.futures import Future

from pebble import ProcessExpired

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import MAX_DEAD_BATCHES, Sandbox
from oracles.base import STAGES
from tests.conftest import unary_chain_model


def cases(*bugs: str) -> list[TestCase]:
    model = unary_chain_model().SerializeToString()
    return [TestCase("fake", {"passes": [bug]}, {"kind": "bytes", "bug": bug},
                     model_bytes=model) for bug in bugs]


def verdicts(results) -> list[tuple[str | None, str | None]]:
    """(symptom, stage) of each result's first finding; (None, None) for none."""
    return [(r.findings[0].symptom, r.findings[0].stage) if r.findings else (None, None)
            for r in results]


def test_a_batch_of_clean_cases_runs_as_one_task_with_every_result_its_own():
    with Sandbox(jobs=1, timeout=10.0, batch=4) as box:
        futures = box.submit_many(cases("clean", "raise", "drop-node", "clean"))
        results = [f.result(timeout=60) for f in futures]
    assert verdicts(results) == [(None, None), ("optimizer-error", "optimize"),
                                 ("output-mismatch", "compare"), (None, None)]
    assert [r.source["bug"] for r in results] == ["clean", "raise", "drop-node", "clean"]


def test_a_death_and_a_hang_in_a_batch_are_the_cases_own_and_the_rest_run_again():
    with Sandbox(jobs=1, timeout=3.0, batch=5) as box:
        futures = box.submit_many(cases("clean", "segv", "raise", "hang", "clean"))
        results = [f.result(timeout=120) for f in futures]
        assert box.alive
    assert verdicts(results) == [(None, None), ("optimizer-abort", "optimize"),
                                 ("optimizer-error", "optimize"), ("hang", "optimize"),
                                 (None, None)]
    assert "SIGSEGV" in results[1].findings[0].message
    assert results[1].artifacts is not None and results[3].artifacts is not None
    assert all(r.unusable is None for r in results)


def test_the_rest_of_a_batch_whose_case_killed_its_worker_runs_again_as_one_batch():
    """Only the case that was running is blamed, so the others (finished with their results
    lost, or not started) go back as one task, not one task each."""
    with Sandbox(jobs=1, timeout=10.0, batch=5) as box:
        batched: list[int] = []
        real = box._submit_batch
        box._submit_batch = lambda chunk: batched.append(len(chunk)) or real(chunk)
        results = [f.result(timeout=120)
                   for f in box.submit_many(cases("clean", "raise", "segv", "drop-node",
                                                  "clean"))]
    assert batched == [5, 4]
    assert verdicts(results) == [(None, None), ("optimizer-error", "optimize"),
                                 ("optimizer-abort", "optimize"),
                                 ("output-mismatch", "compare"), (None, None)]
    assert [r.source["bug"] for r in results] == ["clean", "raise", "segv", "drop-node",
                                                  "clean"]


def test_cases_go_one_per_task_while_workers_die_often():
    with Sandbox(jobs=1, timeout=10.0, batch=8) as box:
        for future in box.submit_many(cases(*["segv"] * 6)):
            future.result(timeout=120)
        assert box.death_rate * box.batch > MAX_DEAD_BATCHES
        batched: list[int] = []
        real = box._submit_batch
        box._submit_batch = lambda chunk: batched.append(len(chunk)) or real(chunk)
        results = [f.result(timeout=60) for f in box.submit_many(cases("raise", "clean"))]
    assert batched == []  # one case per task
    assert verdicts(results) == [("optimizer-error", "optimize"), (None, None)]


def test_batches_shrink_as_the_death_rate_grows():
    with Sandbox(jobs=1, timeout=10.0, batch=16) as box:
        sizes = []
        for rate in (0.0, 0.005, 0.02, 0.05, 0.1, 0.5):
            box.death_rate = rate
            sizes.append(box.batch_size())
    assert sizes == [16, 16, 5, 2, 1, 1]
    assert all(size * rate <= MAX_DEAD_BATCHES or size == 1
               for size, rate in zip(sizes, (0.0, 0.005, 0.02, 0.05, 0.1, 0.5), strict=True))


def test_a_death_nobody_saw_is_no_finding_and_its_batch_runs_again():
    """A task pebble ended as a death with no exit code (a worker it had stopped took the
    task: fuzzer.execution.pool) gives nothing to the case it names: all run again."""
    with Sandbox(jobs=1, timeout=10.0, batch=3) as box:
        real, orphaned = box._schedule, []

        def schedule(function, args, timeout, slots):
            if orphaned:
                return real(function, args, timeout, slots)
            orphaned.append(slots)
            box._slots.stages[slots[1]] = STAGES.index("optimize")  # the second case was running
            task: Future = Future()
            task.set_exception(ProcessExpired("Abnormal termination", code=None, pid=1))
            return task

        box._schedule = schedule
        results = [f.result(timeout=60) for f in box.submit_many(cases("clean", "clean",
                                                                       "raise"))]
    assert orphaned
    assert verdicts(results) == [(None, None), (None, None), ("optimizer-error", "optimize")]
