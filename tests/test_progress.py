"""Progress of long commands: the sandbox says which stage its running case is in and how
many cases ended, and ``check`` shows both on a terminal while it waits."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from fuzzer.commands.progress import activity_text
from fuzzer.execution.sandbox import Sandbox
from tests.localize_models import chain, fake_case, fillers


def test_the_status_line_names_time_runs_and_stages() -> None:
    assert activity_text("checking m.onnx", 12.4, 0, []) == "checking m.onnx (12 s)"
    assert activity_text("reducing", 3, 7, ["optimize", "optimize", "reference"]) == \
        "reducing (3 s, 7 run(s) done, now: optimize, reference)"


def test_the_sandbox_reports_the_stage_of_its_running_case_and_the_cases_ended() -> None:
    case = fake_case(chain(["Neg", "Exp"]), fillers({3: "hang"}))
    with Sandbox(jobs=1, timeout=5.0) as box:
        assert box.busy_stages() == [] and box.finished == 0
        done = threading.Event()
        future = box.submit(case)
        future.add_done_callback(lambda _: done.set())
        seen: set[str] = set()
        while not done.wait(0.05):
            seen.update(box.busy_stages())
        assert future.result().findings[0].symptom == "hang"
        assert "optimize" in seen  # the pass hangs inside the target's call
        assert box.busy_stages() == [] and box.finished == 1


def test_check_shows_its_stage_on_a_terminal(tmp_path) -> None:
    import onnx

    model = tmp_path / "m.onnx"
    onnx.save(chain(["Neg", "Exp"]), model)
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "fuzzer", "check", str(model), "--target",
                           "fake", "--passes", "hang", "--timeout", "3",
                           "--reduce-seconds", "0"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "checking m.onnx" in proc.stderr and "now: optimize" in proc.stderr
    assert "hang" in proc.stdout
