"""Sandbox(preload=CASE_PRELOAD): a campaign's workers start with what building its cases
imports, so a worker replaced every MAX_TASKS cases does not import the generator again;
a sandbox without it (a one-shot command's) does not import the generator at all."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import CASE_PRELOAD, Sandbox

    def imported_by_a_case(case):
        from fuzzer.execution.pipeline import run_case
        before = set(sys.modules)
        run_case(case)
        return sorted(set(sys.modules) - before)

    if __name__ == "__main__":
        case = TestCase("fake", {"passes": ["clean"]},
                        {"kind": "generated", "seed": 3, "generator": "v2"})
        with Sandbox(1, preload=CASE_PRELOAD if sys.argv[1] == "warm" else ()) as box:
            print("generator" if "generators.generate" in sys.modules else "no generator")
            print(",".join(box.call(imported_by_a_case, case)))
""")


def run(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True,
                          text=True, timeout=300, check=True)
    return done.stdout.splitlines()


def test_a_preloaded_worker_imports_nothing_to_build_a_generated_case():
    parent, imported = run("warm")
    assert parent == "generator"
    assert not [m for m in imported.split(",") if m.startswith(("generators", "numpy"))]


def test_without_preload_the_caller_does_not_import_the_generator():
    parent, imported = run("cold")
    assert parent == "no generator"
    assert "generators.generate" in imported.split(",")


WARM = textwrap.dedent("""
    import os
    import fuzzer.execution.reference as reference
    from fuzzer.execution.sandbox import Sandbox

    real, threads = reference.warm_up, []

    def counted():
        before = len(os.listdir("/proc/self/task"))
        real()
        threads.append(len(os.listdir("/proc/self/task")) - before)

    reference.warm_up = counted
    if __name__ == "__main__":
        with Sandbox(1) as box:
            print(threads, box.call(os.getpid) != os.getpid())
""")


def test_workers_fork_from_a_process_whose_runtime_registries_are_built():
    """Every fork-mode sandbox builds onnxruntime's and onnx's registries in the caller
    before its workers fork (reference.warm_up), and that leaves no thread behind: a thread
    of the caller would not exist in the forked workers."""
    done = subprocess.run([sys.executable, "-c", WARM], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.split() == ["[0]", "True"]


def test_the_warm_up_builds_a_session_once_per_process(monkeypatch):
    """Only the first warm-up of a process builds a session: a later sandbox, made beside a
    pool that may fork at any moment, must not hold onnxruntime's locks at a fork."""
    import fuzzer.execution.reference as reference

    built: list[bytes] = []
    real = reference.make_session
    monkeypatch.setattr(reference, "make_session",
                        lambda data, *a: built.append(data) or real(data, *a))
    reference.warm_up.cache_clear()
    reference.warm_up()
    reference.warm_up()
    assert len(built) == 1
