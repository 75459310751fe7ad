"""Benchmark: how a Ray campaign scales with nodes, and how many nodes one driver can serve.

Per round, three campaigns of the same target, seed and duration, each run as a user runs
it (``optfuzz fuzz``, a fresh ``--out`` each):

- local: ``--jobs 2`` on this machine, no Ray;
- Ray, 1 node: ``--ray ADDRESS`` against a real local cluster of one node with one CPU (a
  head node: one case actor);
- Ray, 2 nodes: the same cluster with a second node of one CPU joined (two case actors).

The cluster is ``ray.cluster_utils.Cluster`` (a head and, for the second figure, a worker
node: each its own raylet and object store on loopback, on ports of its own, so that
another Ray instance on the machine is neither joined nor stopped); the second node joins
before the 2-node campaign and is removed after it; the cluster is shut down at the end.
An untimed campaign on the new cluster comes first (``--warmup``).

Cases/s is each campaign's own count over its case loop's seconds (campaign.json
``last_run``). The machine's speed drifts from minute to minute (a shared host), so the kinds
alternate for ``--rounds`` rounds and ratios are taken per round; the median round decides.
From the 2-node campaign of that round (campaign.json ``cluster.driver_cpu_s``), the
driver's CPU: its whole process (Ray's client threads, campaign.json, the loop) per 1,000
cases, its bookkeeping per range of cases collected, and per finding recorded; and from
those, how many nodes of one CPU (case actors) one driver core can serve at this rate of
cases and findings per node.

Wall-clock rates compare fairly only on an idle machine: where other sessions keep the CPUs
busy, the kernel's autogroup scheduling gives each session one share however many processes
it runs. A local campaign's workers share one session; Ray starts each actor's process in a
session of its own, so on a busy machine each case actor gets a share of its own and Ray
beats the local campaign by about the number of actors, which an idle machine would not show.

Usage: python benchmarks/ray_scaling.py [--seconds 60] [--rounds 3] [--target onnxoptimizer]
[--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def campaign(out: Path, seconds: float, target: str, ray: str | None) -> dict:
    """Run one campaign (on Ray at ``ray``, an address, where given) and return its
    campaign.json."""
    command = [sys.executable, "-m", "fuzzer", "fuzz", "--target", target, "--source",
               "generated", "--seconds", str(seconds), "--out", str(out), "--quiet",
               "--reduce-seconds", "0", *(["--ray", ray] if ray else ["--jobs", "2"])]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads((out / "campaign.json").read_text())


def rate(stats: dict) -> float:
    """Cases per second of a campaign's last run."""
    run = stats["last_run"]
    return run["cases"] / max(run["seconds"], 1e-9)


def start_cluster() -> Any:
    """A local cluster of one head node with one CPU (no dashboard)."""
    from ray import cluster_utils

    nodes = cluster_utils.Cluster(initialize_head=True,
                                  head_node_args={"num_cpus": 1, "include_dashboard": False})
    nodes.wait_for_nodes()
    return nodes


def driver_figures(stats: dict) -> dict[str, float]:
    """The driver's CPU of one Ray campaign (campaign.json ``cluster.driver_cpu_s``)."""
    cost = stats["cluster"]["driver_cpu_s"]
    cases = max(stats["last_run"]["cases"], 1)
    findings = sum(stats["findings"].values())
    return {"cases": cases, "findings": findings, "range_size": stats["cluster"]["range_size"],
            "total_s": cost["total"], "loop_s": cost["loop_seconds"],
            "per_1000": cost["total"] / cases * 1000,
            "bookkeeping_per_1000": cost["per_range"] / stats["cluster"]["range_size"] * 1000,
            "per_range": cost["per_range"], "ranges": cost["ranges"],
            "per_finding": cost["per_finding"], "findings_recorded": cost["findings"],
            "actors": stats["cluster"]["actors"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="onnxoptimizer")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--warmup", type=float, default=15.0,
                        help="seconds of an untimed campaign on the new cluster first (a new "
                             "cluster's first actors start slower than any later)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="optfuzz-ray-scaling-"))
    rounds = []
    nodes = start_cluster()
    try:
        if args.warmup > 0:
            campaign(root / "warmup", args.warmup, args.target, nodes.address)
        for number in range(args.rounds):
            local = campaign(root / f"local-{number}", args.seconds, args.target, None)
            one = campaign(root / f"ray1-{number}", args.seconds, args.target, nodes.address)
            second = nodes.add_node(num_cpus=1)
            nodes.wait_for_nodes()
            try:
                two = campaign(root / f"ray2-{number}", args.seconds, args.target,
                               nodes.address)
            finally:
                nodes.remove_node(second)
            rounds.append({"local": local, "one": one, "two": two,
                           "scaling": rate(two) / rate(one), "vs_local": rate(two) / rate(local)})
            print(f"round {number + 1}: local, 2 jobs {rate(local):7.1f} cases/s; Ray, 1 node "
                  f"{rate(one):7.1f} ({one['cluster']['actors']} case actor); Ray, 2 nodes "
                  f"{rate(two):7.1f} ({two['cluster']['actors']} case actors); 2 nodes / 1 "
                  f"node {rounds[-1]['scaling']:.2f}; 2 nodes / local "
                  f"{rounds[-1]['vs_local']:.2f}", flush=True)
    finally:
        nodes.shutdown()
    middle = sorted(rounds, key=lambda r: r["scaling"])[len(rounds) // 2]
    print(f"median of {len(rounds)} rounds: Ray 2 nodes / 1 node "
          f"{statistics.median(r['scaling'] for r in rounds):.2f}; Ray 2 nodes / local 2 jobs "
          f"{statistics.median(r['vs_local'] for r in rounds):.2f}")
    print(f"median round: local 2 jobs {rate(middle['local']):.1f} cases/s, Ray 1 node "
          f"{rate(middle['one']):.1f} cases/s, Ray 2 nodes {rate(middle['two']):.1f} cases/s")

    for label, stats in (("1 node", middle["one"]), ("2 nodes", middle["two"])):
        d = driver_figures(stats)
        print(f"driver, {label}: {d['total_s']:.1f} s CPU over a {d['loop_s']:.1f} s loop, "
              f"{d['cases']} cases, {d['findings']} findings: {d['per_1000']:.3f} s per 1,000 "
              f"cases in all; bookkeeping {d['per_range'] * 1e3:.2f} ms per range of "
              f"{d['range_size']} ({d['bookkeeping_per_1000'] * 1e3:.1f} ms per 1,000 cases, "
              f"{d['ranges']} ranges); {d['per_finding'] * 1e3:.2f} ms per finding recorded "
              f"({d['findings_recorded']} recorded)")
    d = driver_figures(middle["two"])
    per_node_rate = rate(middle["two"]) / d["actors"]  # cases/s of one node of one CPU
    findings_per_case = d["findings_recorded"] / d["cases"]  # hits cost it nothing extra
    total_per_node = per_node_rate * d["per_1000"] / 1000
    bookkeeping_per_node = per_node_rate * (d["bookkeeping_per_1000"] / 1000
                                            + findings_per_case * d["per_finding"])
    print(f"per node of one CPU: {per_node_rate:.1f} cases/s, {findings_per_case:.4f} "
          "findings recorded per case")
    print(f"driver CPU per node: {total_per_node * 100:.2f}% of a core in all -> one driver "
          f"core serves {1 / max(total_per_node, 1e-12):,.0f} such nodes (the bound to plan "
          f"with); its bookkeeping alone {bookkeeping_per_node * 100:.3f}% -> "
          f"{1 / max(bookkeeping_per_node, 1e-12):,.0f}")
    print(f"folders in {root}")


if __name__ == "__main__":
    main()
