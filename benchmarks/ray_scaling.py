"""Benchmark: a local campaign with 2 jobs against a Ray campaign with 2 case actors on this
machine (same target, seed and duration), and the driver's own cost, from which it estimates
how many nodes one driver can serve.

Both campaigns run as a user runs them (``optfuzz fuzz``, a fresh ``--out`` each); cases/s is
each campaign's own count over its case loop's seconds (campaign.json ``last_run``). The
machine's speed drifts from minute to minute (a shared host), so the two kinds alternate for
``--rounds`` rounds and the ratio is taken per round; the median round decides. The Ray
campaign starts a local Ray instance (``--ray``) and records the driver's CPU seconds per
range of cases collected and per finding recorded (campaign.json ``cluster.driver_cpu_s``).

Usage: python benchmarks/ray_scaling.py [--seconds 60] [--rounds 3] [--target onnxoptimizer]
[--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def campaign(out: Path, seconds: float, target: str, ray: bool) -> dict:
    """Run one campaign and return its campaign.json."""
    command = [sys.executable, "-m", "fuzzer", "fuzz", "--target", target, "--source",
               "generated", "--seconds", str(seconds), "--jobs", "2", "--out", str(out),
               "--quiet", "--reduce-seconds", "0", *(["--ray"] if ray else [])]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads((out / "campaign.json").read_text())


def rate(stats: dict) -> float:
    """Cases per second of a campaign's last run."""
    run = stats["last_run"]
    return run["cases"] / max(run["seconds"], 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="onnxoptimizer")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="optfuzz-ray-scaling-"))
    rounds = []
    for number in range(args.rounds):
        local = campaign(root / f"local-{number}", args.seconds, args.target, ray=False)
        cluster = campaign(root / f"ray-{number}", args.seconds, args.target, ray=True)
        rounds.append((rate(cluster) / rate(local), local, cluster))
        print(f"round {number + 1}: local, 2 jobs {rate(local):7.1f} cases/s "
              f"({local['bundles_new']} bundles); Ray, 2 case actors {rate(cluster):7.1f} "
              f"cases/s ({cluster['bundles_new']} bundles); ratio {rounds[-1][0]:.2f}",
              flush=True)
    ratio, local, cluster = sorted(rounds, key=lambda r: r[0])[len(rounds) // 2]
    print(f"ratio Ray / local, median of {len(rounds)} rounds: {ratio:.2f}")
    ray_rate = rate(cluster)

    record = cluster["cluster"]
    cost = record["driver_cpu_s"]
    findings = sum(cluster["findings"].values())
    cases = cluster["last_run"]["cases"]
    size = record["range_size"]
    per_node_rate = ray_rate  # this machine is one node of 2 CPUs
    findings_per_case = findings / max(cases, 1)
    driver_per_node = per_node_rate / size * cost["per_range"] + \
        per_node_rate * findings_per_case * cost["per_finding"]
    print(f"driver CPU per range of {size} cases: {cost['per_range'] * 1e3:.3f} ms "
          f"({cost['ranges']} ranges)")
    print(f"driver CPU per finding recorded: {cost['per_finding'] * 1e3:.3f} ms "
          f"({cost['findings']} findings; {findings_per_case:.3f} findings per case)")
    print(f"driver CPU per second per node of 2 CPUs: {per_node_rate:.1f} cases/s / {size} * "
          f"{cost['per_range'] * 1e3:.3f} ms + {per_node_rate:.1f} * {findings_per_case:.3f} * "
          f"{cost['per_finding'] * 1e3:.3f} ms = {driver_per_node * 1e3:.3f} ms")
    print(f"nodes one driver core can serve (bookkeeping only): 1 s / "
          f"{driver_per_node * 1e3:.3f} ms = {1 / max(driver_per_node, 1e-12):,.0f}")
    total = cost["total"] / max(cost["loop_seconds"], 1e-9)
    print(f"driver process CPU in all (Ray client threads, live display, campaign.json): "
          f"{cost['total']:.1f} s over {cost['loop_seconds']:.1f} s = {total * 100:.1f}% of a "
          f"core for 1 node -> 1 / {total:.4f} = {1 / max(total, 1e-12):,.0f} nodes per "
          "driver core (the bound to plan with)")
    print(f"folders in {root}")


if __name__ == "__main__":
    main()
