"""Campaigns on a real multi-node Ray cluster on this machine (``ray.cluster_utils.Cluster``:
one head and two worker nodes of one CPU each, on loopback, held by a child process:
:mod:`tests.ray_nodes`): planted bugs found, a worker node killed mid-campaign, the driver
killed and the campaign resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzzer.campaign.avoidance import exploring
from fuzzer.campaign.stream import StreamConfig
from fuzzer.cluster.actors import CaseRunner
from fuzzer.cluster.plan import RANGE_SIZE, RangePlan, compact, expand
from tests.ray_nodes import Nodes
from tests.test_cli_check import optfuzz

ray = pytest.importorskip("ray")
pytest.importorskip("ray.cluster_utils")

PLANTED = "raise,segv,drop-node,invalid,bloat"
#: correct filler passes in the pool: most configurations are clean, so a few hundred cases
#: make tens of findings, not hundreds
FILLER = ",".join(f"nop-{i}" for i in range(40))
QUICK = "raise,drop-node,invalid,bloat"  # no worker to replace after each finding
SYMPTOMS = {"optimizer-error", "optimizer-abort", "output-mismatch", "invalid-model", "bloat"}
CASES = 4 * RANGE_SIZE


@pytest.fixture
def cluster() -> Nodes:
    """A head and two worker nodes, one CPU each (so each hosts one case actor)."""
    nodes = Nodes.start(2)
    yield nodes
    nodes.shutdown()


def fuzz_args(address: str, out: Path, *more: str, planted: str = PLANTED) -> list[str]:
    # without known-fault avoidance: the features it leaves out depend on the order in
    # which ranges come back, and two runs here must run the same cases
    return ["fuzz", "--ray", address, "--target", "fake", "--source", "generated",
            "--passes", f"{planted},{FILLER}", "--seed", "3", "--out", str(out), "--quiet",
            "--reduce-seconds", "0", "--no-avoid-known", *more]


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fuzzer", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def campaign(out: Path) -> dict:
    try:
        return json.loads((out / "campaign.json").read_text())
    except (OSError, ValueError):
        return {}


def wait_for(condition, seconds: float = 240.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def ray_titles(raylet: int) -> list[str]:
    """The process titles of the Ray workers that the raylet of process id ``raylet``
    started."""
    titles = []
    for entry in Path("/proc").iterdir():
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if entry.name.isdigit() and parent == raylet:
                titles.append((entry / "cmdline").read_bytes().split(b"\0")[0].decode())
        except (OSError, ValueError, IndexError):
            continue
    return titles


def bundles(out: Path) -> dict[str, dict]:
    """The bundles of ``out`` once its pending findings are handled: on a loaded machine a
    campaign's finish keeps in ``pending/`` what its grace period could not reduce (kept,
    not lost), and ``optfuzz triage --pending`` makes bundles and hits of them."""
    if any((out / "pending").glob("*")):
        done = subprocess.run([sys.executable, "-m", "fuzzer", "triage", "--pending", str(out)],
                              capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-2000:]
        assert not any((out / "pending").glob("*")), done.stdout[-2000:]
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/meta.json")}


def test_range_cases_are_the_same_on_any_runner():
    config = StreamConfig("fake", seed=5, passes=PLANTED.split(","))
    plan = RangePlan(generated=True, corpus_positions=0)
    a, b = CaseRunner(config, 5.0, None), CaseRunner(config, 5.0, None)
    second = plan.at(1)
    cases = a.cases(second, [])
    assert len(cases) == RANGE_SIZE and cases == b.cases(second, [])
    assert cases != a.cases(plan.at(2), [])
    assert [c.source["seed"] for c in cases[10:20]] == \
        [c.source["seed"] for c in b.cases(second, [])[10:20]]


def test_a_runner_leaves_out_the_features_the_driver_avoids():
    """The driver hands each range the features it avoids; the runner's generated cases
    name them in their source, but for the exploring seeds, and their models go without."""
    runner = CaseRunner(StreamConfig("fake", seed=5, passes=["clean"]), 30.0, None)
    try:
        result = runner.run(RangePlan(generated=True, corpus_positions=0).at(1), [], 0, 20,
                            ["ir:3"])
    finally:
        runner.close()
    assert len(result.runs) == 20
    avoiding = [(case, run) for case, run in result.runs if "avoid" in case.source]
    assert [case for case, _ in result.runs if "avoid" not in case.source] == \
        [case for case, _ in result.runs if exploring(case.source)]
    assert avoiding and all(case.source["avoid"] == ["ir:3"] and
                            run.source["ir_version"] != 3 for case, run in avoiding)


def test_plan_alternates_corpus_and_generated_and_records_intervals():
    plan = RangePlan(generated=True, corpus_positions=RANGE_SIZE + 5)
    kinds = [plan.at(n).kind for n in range(6)]
    assert kinds == ["corpus", "generated", "corpus", "generated", "generated", "generated"]
    assert plan.at(2).count == 5 and plan.at(4).start == 2 * RANGE_SIZE
    assert RangePlan(generated=False, corpus_positions=10).at(1) is None
    assert compact({0, 1, 2, 5}) == [[0, 3], [5, 6]] and expand([[0, 3], [5, 6]]) == {0, 1, 2, 5}


@pytest.mark.slow
def test_killing_a_worker_node_loses_no_bundle(cluster, tmp_path):
    nodes = cluster
    calm, stormy = tmp_path / "calm", tmp_path / "stormy"
    proc = start(fuzz_args(nodes.address, stormy, "--max-cases", str(CASES)))
    # the node is removed while its case actor runs a range (Ray titles the actor's process
    # with the method it runs)
    wait_for(lambda: "ray::CaseRunner.run" in ray_titles(nodes.raylets[0])
             or proc.poll() is not None)
    nodes.remove(0)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    stats = campaign(stormy)
    assert stats["cluster"]["done"] == [[0, CASES // RANGE_SIZE]] and stats["cases"] == CASES
    assert stats["cluster"]["lost_cases_total"] > 0  # the dead node's actor held a range
    # the same campaign on the two nodes left finds exactly the same bundles
    calm_run = optfuzz(*fuzz_args(nodes.address, calm, "--max-cases", str(CASES)))
    assert calm_run.returncode == 0, calm_run.stderr[-2000:]
    assert campaign(calm)["cluster"]["lost_cases_total"] == 0  # a segfault kills no actor
    found, expected = bundles(stormy), bundles(calm)
    # a bundle is its root cause; its folder's name starts with the symptom of the fault's
    # first finding, and the killed node's ranges run again later, so a fault that shows two
    # symptoms (drop-node: wrong outputs, or an invalid model) may be met first as the other
    keys = [m["root_cause"] for m in found.values()]
    assert set(keys) == {m["root_cause"] for m in expected.values()}
    assert {m["symptom"] for m in found.values()} >= SYMPTOMS
    assert len(keys) == len(set(keys))  # one bundle per root cause
    # a finding counted but not recorded names itself in campaign.log (its tail says why)
    assert sum(m["hits"] for m in found.values()) >= sum(m["hits"] for m in expected.values()), \
        (stormy / "campaign.log").read_text()[-3000:]


@pytest.mark.slow
def test_killing_the_driver_and_resuming_completes_the_same_ranges(cluster, tmp_path):
    nodes = cluster
    out = tmp_path / "crashes"
    # ranges become done one by one as their findings settle; with campaign.json written
    # every 10 s the whole campaign could end between two writes (it did, on a quick run),
    # so the driver checkpoints every 0.5 s here and the kill comes soon after 2 are done
    total = 64 * RANGE_SIZE
    proc = start(fuzz_args(nodes.address, out, "--max-cases", str(total), planted=QUICK),
                 env={"OPTFUZZ_SAVE_EVERY": "0.5"})
    wait_for(lambda: len(expand(campaign(out).get("cluster", {}).get("done", []))) >= 2
             or proc.poll() is not None)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    before = campaign(out)
    done = expand(before["cluster"]["done"])
    partial = {int(k): v for k, v in before["cluster"]["partial"].items()}
    assert done and len(done) < total // RANGE_SIZE
    assert before["cases"] == RANGE_SIZE * len(done) + sum(partial.values())
    left = total - before["cases"]
    resumed = optfuzz(*fuzz_args(nodes.address, out, "--resume", "--max-cases", str(left),
                                 planted=QUICK))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = campaign(out)
    assert after["cluster"]["done"] == [[0, total // RANGE_SIZE]] and after["cases"] == total
    assert not after["cluster"]["partial"]
    keys = [m["root_cause"] for m in bundles(out).values()]
    assert len(keys) == len(set(keys)) and {m["symptom"] for m in bundles(out).values()} \
        >= SYMPTOMS - {"optimizer-abort"}


def test_resuming_a_local_campaign_on_ray_is_refused(chain_file, tmp_path):
    out = tmp_path / "crashes"
    args = ("fuzz", "--target", "fake", "--source", "dir", "--corpus", str(chain_file.parent),
            "--passes", "clean", "--out", str(out), "--quiet", "--jobs", "1")
    assert optfuzz(*args, "--max-cases", "1").returncode == 0
    proc = optfuzz(*args, "--resume", "--ray", "ray://127.0.0.1:1")
    assert proc.returncode == 2 and "ran locally; resume it without --ray" in proc.stderr
