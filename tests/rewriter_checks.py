"""Checks shared by the tests of the rewriter targets whose configuration is the set of
rewrites left enabled (onnxsim, onnxslim): a sandbox for their planted cases
(:mod:`tests.planted_cases`), the campaign's configuration draws, a coverage run through the
CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fuzzer.execution.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """Two workers with a 60 s case timeout (a loaded machine must not turn a simplifier's
    run into a hang); a test module takes it over the conftest's by importing it."""
    with Sandbox(jobs=2, timeout=60) as sb:
        yield sb


def check_configurations(target: Any, pool: list[str]) -> None:
    """``target``'s campaign draws name only its own rewrites, and only those of ``pool``
    when ``--passes`` narrows it to them."""
    rng = random.Random(0)
    available = set(target.available_passes())
    for _ in range(50):
        config = target.configurations(rng, None)
        assert config["passes"] is None or set(config["passes"]) <= available
    for _ in range(20):
        assert set(target.configurations(rng, pool)["passes"]) <= set(pool)


def coverage_report(target: str, passes: list[str], cases: int, folder: Path) -> dict[str, Any]:
    """Run ``optfuzz coverage --target target --passes ... --json`` in a child process (one
    job) and return its per-pass report; asserts the command succeeded."""
    out = folder / "coverage.json"
    proc = subprocess.run([sys.executable, "-m", "fuzzer", "coverage", "--target", target,
                           "--cases", str(cases), "--jobs", "1", "--passes", ",".join(passes),
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text())["passes"]
