"""Sandbox.call runs work on untrusted models in a worker: results, errors and deaths."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox, SandboxError
from tests.conftest import unary_chain_model


def _node_count(data: bytes) -> int:
    import onnx

    return len(onnx.load_from_string(data).graph.node)


def _die() -> None:
    os.abort()


def _fail() -> None:
    raise ValueError("bad model")


def test_call_returns_the_result(sandbox):
    assert sandbox.call(_node_count, unary_chain_model().SerializeToString()) == 2


def test_call_reraises_exceptions_and_survives_deaths(sandbox):
    with pytest.raises(ValueError, match="bad model"):
        sandbox.call(_fail)
    with pytest.raises(SandboxError, match="worker died"):
        sandbox.call(_die)
    assert sandbox.call(_node_count, unary_chain_model().SerializeToString()) == 2


def test_require_valid_makes_an_invalid_original_unusable(sandbox):
    model = unary_chain_model()
    model.graph.node[1].input[0] = "undefined"
    case = TestCase("fake", {"passes": ["clean"]}, {"kind": "bytes"},
                    model_bytes=model.SerializeToString(), require_valid=True)
    result = sandbox.run(case)
    assert result.findings == [] and "invalid original" in result.unusable


def test_a_pool_that_pebble_marks_broken_is_rebuilt_and_no_verdict_is_lost(monkeypatch):
    """Pebble marks a pool broken (and aborts its tasks) when a worker dies before the pool
    registered the task it took, which a target that crashes at once can cause; the sandbox
    rebuilds the pool and runs the lost cases again, so every case gets its verdict."""
    from concurrent.futures.process import BrokenProcessPool

    from pebble import ProcessPool

    real = ProcessPool.schedule
    calls = {"n": 0}

    def breaking(self: ProcessPool, *args, **kwargs):
        future = real(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 10:  # what pebble does on "All workers expired"
            self._pool_manager.handle_broken_pool(BrokenProcessPool("All workers expired"))
        return future

    monkeypatch.setattr(ProcessPool, "schedule", breaking)
    model = unary_chain_model().SerializeToString()
    cases = [TestCase("fake", {"passes": [bug]}, {"kind": "bytes"}, model_bytes=model)
             for bug in ("abort", "raise") * 15]
    with Sandbox(jobs=2, timeout=5.0) as box:
        verdicts = [f.result(timeout=120) for f in [box.submit(c) for c in cases]]
        assert box.alive and box.restarts == 1
    assert [v.findings[0].symptom if v.findings else v.unusable for v in verdicts] == \
        ["optimizer-abort", "optimizer-error"] * 15


def _temp_root() -> str:
    return tempfile.gettempdir()


def _leave_and_die() -> None:
    tempfile.mkdtemp(prefix="half-written-")
    os.abort()


def test_a_dead_workers_temporary_files_are_removed_and_the_rest_on_close():
    with Sandbox(jobs=1, timeout=10.0) as box:
        scratch = Path(box.scratch)
        assert Path(box.call(_temp_root)).parent == scratch  # a folder of its own
        with pytest.raises(SandboxError, match="worker died"):
            box.call(_leave_and_die)
        assert not list(scratch.glob("*/half-written-*"))
        assert Path(box.call(_temp_root)).parent == scratch  # its successor has one too
    assert not scratch.exists()


def _rebuilt_here(case):
    """A stand-in for the sandbox's rebuild of a dead worker's case: the case's model, no
    feeds, and the pid of the process that built it."""
    return case.model_bytes, {}, {"rebuilt_by": os.getpid()}


def test_a_dead_workers_case_is_rebuilt_in_a_worker_of_the_pool(monkeypatch):
    """The model of a case whose worker died is rebuilt for its bundle in one of the pool's
    own workers, not in a child forked from the calling process (whose other threads may
    hold an import lock forever in that child) and not on pebble's manager thread."""
    import fuzzer.execution.sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "_materialize_elsewhere", _rebuilt_here)
    data = unary_chain_model().SerializeToString()
    with Sandbox(jobs=1, timeout=10.0) as box:  # workers fork after the patch: they see it
        dead = box.run(TestCase("fake", {"passes": ["segv"]}, {"kind": "bytes"},
                                model_bytes=data))
        worker = box.call(os.getpid)
    assert dead.findings[0].symptom == "optimizer-abort"
    assert dead.artifacts is not None and dead.artifacts.model == data
    assert dead.source["rebuilt_by"] == worker != os.getpid()


def _dies_while_marked(case):
    """A rebuild whose worker dies (as when another case's crash takes the pool down under
    it) while the file named by ``OPTFUZZ_TEST_DIES`` holds a count above zero, which each
    death lowers by one; then :func:`_rebuilt_here`."""
    mark = Path(os.environ["OPTFUZZ_TEST_DIES"])
    left = int(mark.read_text())
    if left > 0:
        mark.write_text(str(left - 1))
        os._exit(1)
    return _rebuilt_here(case)


@pytest.mark.parametrize("deaths", [2, 3])
def test_a_rebuild_whose_worker_dies_is_tried_again_and_a_lost_one_says_why(
        monkeypatch, tmp_path, deaths):
    """A segfault found while the pool broke under the rebuild of its model lost its finding
    without a word (a cluster campaign recorded 10 of its 12 segfault findings): the rebuild
    is tried again, and where every try dies the result says why it cannot be recorded."""
    import fuzzer.execution.sandbox as sandbox_module

    mark = tmp_path / "dies"
    mark.write_text(str(deaths))
    monkeypatch.setenv("OPTFUZZ_TEST_DIES", str(mark))
    monkeypatch.setattr(sandbox_module, "_materialize_elsewhere", _dies_while_marked)
    data = unary_chain_model().SerializeToString()
    with Sandbox(jobs=1, timeout=10.0) as box:  # workers fork after the patch: they see it
        dead = box.run(TestCase("fake", {"passes": ["segv"]}, {"kind": "bytes"},
                                model_bytes=data))
    assert dead.findings[0].symptom == "optimizer-abort"
    if deaths < sandbox_module.REBUILD_ATTEMPTS:
        assert dead.artifacts is not None and dead.artifacts.model == data
        assert dead.unrecordable() is None
    else:
        assert dead.artifacts is None
        assert "could not be rebuilt (its worker died" in dead.unrecordable()
        assert dead.unrecordable().startswith("optimizer-abort: ")


_LATE_IMPORTS = """
import sys

import generators.generate  # as a campaign has them: fuzzer/campaign/run.py, its stream
from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.targets import get_target

get_target("fake")


def loaded():
    return sorted(sys.modules)


with Sandbox(jobs=1, timeout=30.0) as box:
    here = set(sys.modules)
    for seed, bug in enumerate(["clean", "drop-node", "bloat", "invalid", "raise"]):
        box.run(TestCase("fake", {"passes": [bug]},
                         {"kind": "generated", "seed": seed, "generator": "v2"},
                         input_seed=seed))
    there = box.call(loaded)
ours = ("fuzzer.", "oracles.", "generators.", "statistics")
print(sorted(m for m in set(there) - here if m.startswith(ours)))
"""


def test_a_worker_imports_nothing_of_ours_that_its_caller_had_not_imported():
    """Every module of ours a worker imports while it runs cases (materialization, every
    oracle, the scaling probe) is imported by a caller that has the target and the
    generator (as a campaign has) before the workers fork: a worker
    forked while another thread of the caller was importing one would wait forever on its
    import lock."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _LATE_IMPORTS], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_a_worker_starts_with_what_it_inherited_frozen(sandbox):
    """gc.freeze in the worker's initializer: its full collections skip the objects forked
    from the campaign process (and leave their pages shared)."""
    import gc

    assert sandbox.call(gc.get_freeze_count) > 10_000


def test_a_new_sandbox_removes_the_scratch_folders_of_killed_owners(tmp_path, monkeypatch):
    """A sandbox whose owner was killed before its close leaves its scratch folder; the next
    sandbox removes it, and keeps those of owners still running and of other pid
    namespaces (a container sharing the temporary folder)."""
    import subprocess
    import sys

    from fuzzer.execution import scratch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killed.kill()
    killed.wait()
    namespace = scratch.pid_namespace()
    assert namespace  # the test machine shows its pid namespace
    left = tmp_path / f"{scratch.SCRATCH_PREFIX}{namespace}-{killed.pid}-abc"
    (left / "123").mkdir(parents=True)
    running = tmp_path / f"{scratch.SCRATCH_PREFIX}{namespace}-{os.getpid()}-def"
    elsewhere = tmp_path / f"{scratch.SCRATCH_PREFIX}{namespace + 1}-{killed.pid}-ghi"
    for folder in (running, elsewhere):
        folder.mkdir()
    with Sandbox(jobs=1, timeout=10.0) as box:
        assert Path(box.scratch).parent == tmp_path
        assert not left.exists()
        assert running.exists() and elsewhere.exists()
    assert not Path(box.scratch).exists()


def test_a_call_whose_pool_breaks_before_it_runs_runs_again_on_the_new_pool():
    """pebble's scheduler thread takes a task off its queue before the pool breaks and
    never sends it (its workers are gone): the call must not wait for it forever."""
    import threading
    from concurrent.futures.process import BrokenProcessPool

    data = unary_chain_model().SerializeToString()
    with Sandbox(jobs=1, timeout=30.0) as box:
        old = box._workers.current
        manager = old._pool_manager
        held: list = []
        taken = threading.Event()

        def hold(task) -> None:  # the task is taken and goes nowhere
            held.append(task)
            taken.set()

        manager.schedule = hold
        breaker = threading.Thread(target=lambda: taken.wait(60) and
                                   manager.handle_broken_pool(BrokenProcessPool("planted")))
        breaker.start()
        answer: list = []
        caller = threading.Thread(target=lambda: answer.append(box.call(_node_count, data)),
                                  daemon=True)
        caller.start()
        caller.join(120)  # a bound on a deadlock, not a speed: the call needs about a second
        breaker.join()
        assert held and answer == [len(unary_chain_model().graph.node)]
        assert box._workers.current is not old and box.restarts == 1
