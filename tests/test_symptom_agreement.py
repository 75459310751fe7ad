"""Every symptom's repro.py check agrees with its oracle: on a bug of the fake target that
shows the symptom, the campaign's worker and the bundle's repro.py both see it; on the fixed
release of that bug, neither does. A new symptom without a planted bug here fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from fuzzer.execution.case import TestCase
from fuzzer.execution.pipeline import materialize_case
from fuzzer.execution.sandbox import Sandbox
from fuzzer.report.repro import CANNOT_RUN, FIXED, REPRODUCES, render_repro
from fuzzer.store.npz import npz_bytes
from oracles import symptom_names
from tests.conftest import unary_chain_model

#: symptom -> (fake pass that shows it, task category of the case).
PLANTED: dict[str, tuple[str, str | None]] = {
    "optimizer-abort": ("segv", None),
    "optimizer-error": ("raise", None),
    "hang": ("hang", None),
    "invalid-model": ("invalid", None),
    "load-failure": ("load-fail", None),
    "runtime-failure": ("run-fail", None),
    "output-mismatch": ("drop-node", None),
    "metric-drift": ("drop-node", "classification"),
    "bloat": ("bloat", None),
    "metadata-change": ("rename-output", None),
}
ROOT = Path(__file__).resolve().parents[1]


#: symptoms whose planted bugs have tests of their own (a slow pass needs scaled models, a
#: memory error the sanitizer runtime).
PLANTED_ELSEWHERE = {"slow": "tests/test_slow.py", "memory-error": "tests/test_sanitizer.py"}


def test_every_symptom_has_a_planted_bug():
    assert set(PLANTED) | set(PLANTED_ELSEWHERE) == set(symptom_names())


def _bundle(folder: Path, symptom: str, config: dict, task: str | None,
            memory_limit: int | None = 4 << 30) -> TestCase:
    """A bundle folder (model.onnx, inputs.npz, repro.py) and the case it holds."""
    model = unary_chain_model(("Neg", "Exp", "Cos"), shape=(4, 5))
    case = TestCase("fake", config, {"kind": "test"}, model_bytes=model.SerializeToString(),
                    task=task, input_seed=3)
    _, feeds, _ = materialize_case(case)
    folder.mkdir()
    onnx.save(model, folder / "model.onnx")
    (folder / "inputs.npz").write_bytes(npz_bytes(feeds))
    (folder / "repro.py").write_text(render_repro(
        "test", symptom, "fake", config, "1.0", timeout=3.0, memory_limit=memory_limit,
        task=task))
    return TestCase("fake", config, {"kind": "test"}, model_bytes=model.SerializeToString(),
                    feeds=feeds, task=task)


def _repro(folder: Path, fixed: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, OPTFUZZ_FAKE_FIXED=fixed,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "repro.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)


def _campaign_sees(case: TestCase) -> set[str]:
    """The symptoms a campaign worker finds for ``case``. The pool is closed before any
    repro.py starts: a worker forked while a subprocess is being started would inherit the
    pipe that tells the parent the exec happened, and the start would wait forever."""
    with Sandbox(jobs=1, timeout=3.0) as box:
        return {f.symptom for f in box.run(case).findings}


@pytest.mark.slow
@pytest.mark.parametrize("symptom", sorted(PLANTED))
def test_repro_and_oracle_agree(symptom, tmp_path, monkeypatch):
    bug, task = PLANTED[symptom]
    config = {"passes": [bug], "fixed_point": False}
    case = _bundle(tmp_path / "bundle", symptom, config, task)
    campaign = _campaign_sees(case)
    repro = _repro(tmp_path / "bundle")
    assert symptom in campaign
    assert repro.returncode == REPRODUCES, (repro.stdout, repro.stderr)
    monkeypatch.setenv("OPTFUZZ_FAKE_FIXED", bug)  # inherited by freshly forked workers
    fixed = _campaign_sees(case)
    repro_fixed = _repro(tmp_path / "bundle", fixed=bug)
    assert symptom not in fixed
    assert repro_fixed.returncode == FIXED, (repro_fixed.stdout, repro_fixed.stderr)


@pytest.mark.slow
def test_repro_limits_its_memory(tmp_path):
    """repro.py caps its child's address space as campaign workers do: a pass that
    allocates 3 GiB fails under a 2 GiB limit and runs under none."""
    config = {"passes": ["hog"], "fixed_point": False}
    _bundle(tmp_path / "capped", "optimizer-error", config, None, memory_limit=2 << 30)
    _bundle(tmp_path / "free", "optimizer-error", config, None, memory_limit=None)
    capped, free = _repro(tmp_path / "capped"), _repro(tmp_path / "free")
    assert capped.returncode == REPRODUCES and "MemoryError" in capped.stdout, capped.stdout
    assert free.returncode == FIXED, free.stdout


@pytest.mark.slow
def test_repro_cannot_run_without_its_model(tmp_path):
    _bundle(tmp_path / "bundle", "optimizer-error", {"passes": ["raise"]}, None)
    (tmp_path / "bundle" / "model.onnx").unlink()
    assert _repro(tmp_path / "bundle").returncode == CANNOT_RUN
