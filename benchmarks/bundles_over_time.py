"""Benchmark: bundles over campaign time, against the buckets the first-wave key would make.

Runs ``optfuzz fuzz`` on onnxoptimizer (the README's campaign: generated graphs and the onnx
wheel's models, 2 workers) for ``--minutes`` and reads the campaign's timeline
(campaign.json): at each checkpoint (1, 2, 5 and 10 minutes by default) it prints the cases,
the findings, the bundles (one per root cause) and the distinct first-wave signatures of the
same findings (``target | localized passes | symptom | normalized message [| WL hash]``,
what optfuzz bucketed by before root causes). Then it lists every bundle first seen after
``--spot-check`` minutes with its breaking pass, symptom, trigger and message, so that a
person can check that late bundles are distinct bugs, not splits of earlier ones.

    python benchmarks/bundles_over_time.py [--minutes 10] [--jobs 2] [--out DIR]
        [--checkpoints 1,2,5,10] [--spot-check 5]

A growing bundle count is good news when it comes from distinct bugs; the first-wave column
shows how fast the same findings would fill ``crashes/`` without root-cause bucketing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def at(timeline: list[dict], seconds: float) -> dict | None:
    """The last timeline point at or before ``seconds`` of campaign time (None if none)."""
    before = [p for p in timeline if p["t"] <= seconds + 5]
    return before[-1] if before else None


def late_bundles(out: Path, started: dt.datetime, after_s: float) -> list[dict]:
    """Meta of the bundles in ``out`` first seen more than ``after_s`` seconds after
    ``started``, oldest first."""
    found = []
    for meta_path in out.glob("*/meta.json"):
        meta = json.loads(meta_path.read_text())
        first = dt.datetime.fromisoformat(meta["first_seen"].replace("Z", "+00:00"))
        if (first - started).total_seconds() > after_s:
            found.append(meta)
    return sorted(found, key=lambda m: m["first_seen"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--checkpoints", default="1,2,5,10")
    parser.add_argument("--spot-check", type=float, default=5.0)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bundles-over-time-"))
    started = dt.datetime.now(dt.timezone.utc)
    command = ["optfuzz", "fuzz", "--minutes", str(args.minutes), "--jobs", str(args.jobs),
               "--out", str(out), "--quiet"]
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
        return 1
    stats = json.loads((out / "campaign.json").read_text())
    timeline = stats["timeline"]
    print(f"\n{'minute':>6} {'cases':>8} {'findings':>9} {'bundles':>8} "
          f"{'first-wave buckets':>19} {'ratio':>6}")
    for minute in (float(m) for m in args.checkpoints.split(",")):
        if minute > args.minutes:
            continue
        point = at(timeline, minute * 60)
        if point is None:
            continue
        bundles, signatures = point["bundles"], point.get("signatures", 0)
        ratio = f"{signatures / bundles:.1f}" if bundles else "-"
        print(f"{minute:>6g} {point['cases']:>8} {point['findings']:>9} {bundles:>8} "
              f"{signatures:>19} {ratio:>6}")
    documented = stats.get("documented", {})
    print(f"\ndocumented behaviour counted, not bundled: {sum(documented.values())} "
          f"{json.dumps(documented)}")
    print(f"merged after reduction: {stats.get('merged', 0)}; dropped: "
          f"{json.dumps(stats.get('dropped', {}))}")
    late = late_bundles(out, started, args.spot_check * 60)
    print(f"\nbundles first seen after minute {args.spot_check:g}: {len(late)}")
    for meta in late:
        print(f"  {meta['id']}: {meta.get('breaking_pass')} "
              f"(+{','.join(meta.get('enabling_passes') or []) or '-'}) "
              f"{meta['nodes']['minimized']} node(s); {meta['message'][:90]}")
        if meta.get("trigger"):
            print(f"      trigger: {meta['trigger']}")
    print(f"\nfolder: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
