"""One stage driver: campaign workers import fuzzer/execution/stage_driver.py and every
bundle's repro.py carries the same file verbatim, with no stage driver of its own beside it;
the file imports nothing of optfuzz, so the script runs where optfuzz is not installed."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import pytest

from fuzzer.execution import pipeline, stage_driver
from fuzzer.report.repro import render_repro
from oracles import symptom_names

SOURCE = inspect.getsource(stage_driver)
#: what the driver may import: the standard library modules it uses and the runtimes.
ALLOWED = {"collections", "functools", "time", "traceback", "typing", "numpy", "onnx",
           "onnxruntime"}
#: calls that run a stage: outside the driver, repro.py makes none of them.
STAGE_CALLS = {"make_session", "run_session", "InferenceSession", "check_model", "validate",
               "interface_feeds"}


def _imported_modules(tree: ast.AST) -> set[str]:
    """The top-level package of every import in ``tree``, at any depth."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else (node.module or "").split(".")[0])
    return names


def _called(tree: ast.AST) -> set[str]:
    """The names of every function or method called in ``tree``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def _top_level_names(tree: ast.Module) -> list[str]:
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


def test_the_driver_imports_nothing_of_optfuzz():
    imported = _imported_modules(ast.parse(SOURCE))
    assert not imported & {"fuzzer", "oracles", "generators", "tests", "."}
    assert imported <= ALLOWED, imported - ALLOWED
    assert "__future__" not in imported  # repro.py holds the file mid-script


def test_the_driver_runs_where_optfuzz_is_not_importable(tmp_path):
    (tmp_path / "stage_driver.py").write_text(SOURCE)
    check = ("import sys\n"
             "sys.modules.update(fuzzer=None, oracles=None, generators=None)  # unimportable\n"
             "import stage_driver\n"
             "print(stage_driver.StageDriver(None, None, ['materialize']).stage)\n")
    done = subprocess.run([sys.executable, "-E", "-c", check], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["materialize"]


def test_workers_run_the_driver_module():
    assert pipeline.StageDriver is stage_driver.StageDriver


@pytest.mark.parametrize("symptom", [s for s in symptom_names() if s != "slow"])
def test_repro_py_carries_the_driver_verbatim_and_no_other(symptom):
    script = render_repro("fake-bundle", symptom, "fake", {"passes": ["drop-node"]}, "1.0",
                          timeout=30.0)
    assert script.count(SOURCE) == 1
    names = _top_level_names(ast.parse(script))
    assert sorted(n for n in set(names) if names.count(n) > 1) == []  # nothing redefined
    own = ast.parse(script.replace(SOURCE, ""))  # the script without the driver
    driver_names = set(_top_level_names(ast.parse(SOURCE)))
    assert not driver_names & set(_top_level_names(own))
    assert not _called(own) & STAGE_CALLS, _called(own) & STAGE_CALLS
    assert "StageDriver" in _called(own)  # the harness drives the test with it


def test_a_slow_repro_times_sessions_of_the_driver():
    """``slow``'s test times the target on the scaled models (a series, no stage of one
    test), building its reference sessions with the driver's functions."""
    script = render_repro("fake-bundle", "slow", "fake", {"passes": ["slow-quadratic"]}, "1.0",
                          timeout=30.0)
    assert script.count(SOURCE) == 1
    own = ast.parse(script.replace(SOURCE, ""))
    assert not set(_top_level_names(ast.parse(SOURCE))) & set(_top_level_names(own))
    assert not _called(own) & (STAGE_CALLS - {"make_session", "run_session"})


def test_the_time_of_the_stage_running_now_counts_before_it_ends() -> None:
    """The slow oracle's quick look weighs the optimizer's time against the reference run's
    right after that run, before the driver leaves its stage."""
    from fuzzer.execution.stage_driver import StageDriver

    driver = StageDriver(None, None, ["materialize", "reference", "optimize"])
    assert driver.seconds_in("reference") is None  # never ran
    driver.enter("reference")
    running = driver.seconds_in("reference")
    assert running is not None and running >= 0.0 and "reference" not in driver.timings
    driver.enter("optimize")
    assert driver.seconds_in("reference") == driver.timings["reference"] >= running
