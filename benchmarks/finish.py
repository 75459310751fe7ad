"""Benchmark: does a campaign's finish keep its word on every target?

For each target, runs ``optfuzz fuzz --target T --minutes M --jobs J --quiet`` into a folder
of its own and measures, from outside:

- the overrun: the process's wall-clock time (start-up included) minus the ``M`` minutes
  asked for, against the bound ``FINISH_GRACE + 10`` seconds
  (:data:`fuzzer.campaign.run.FINISH_GRACE`: the finish's grace period);
- the bundles written, and those whose model.onnx is the model as found
  (:func:`fuzzer.triage.rows.is_unreduced`), each listed with its symptom: a campaign writes
  no unreduced bundle except where the symptom is not reduced by design (its record is not
  ``reducible``, e.g. a hang);
- the pending findings the finish kept (``pending/``) instead of writing them unreduced;
  then runs the command that finishes them, ``optfuzz triage --pending FOLDER``, and
  prints its wall-clock time and the bundles and hits it made of them.

    python benchmarks/finish.py [--targets LIST] [--minutes 5] [--jobs 2] [--out DIR]

Prints one table row per target and ``ok`` or ``OVER`` against the bound. The overrun
includes the start-up (imports, the first worker pool), so it overstates the finish by a
few seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fuzzer.campaign.run import FINISH_GRACE
from fuzzer.store.pending import PendingStore
from fuzzer.triage.rows import is_unreduced
from oracles.base import REGISTRY

#: the seven real targets, in the order of the README.
TARGETS = ("onnxoptimizer", "onnxruntime", "onnxruntime-transformers", "onnxsim",
           "onnxslim", "onnxscript", "version-converter")
SLACK = 10.0  # seconds past the grace period the finish may take


def bundles(folder: Path) -> list[dict]:
    """The meta.json of every bundle of ``folder``."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/meta.json"))]


def unreduced(metas: list[dict]) -> tuple[list[str], list[str]]:
    """(bundles left unreduced against the rules, those unreduced by design), by id."""
    wrong, by_design = [], []
    for meta in metas:
        nodes = meta.get("nodes") or {}
        if not is_unreduced(nodes.get("original"), nodes.get("minimized"),
                            nodes.get("minimal") is True):
            continue
        record = REGISTRY.get(meta["symptom"], None)
        exempt = record is not None and not record.reducible
        (by_design if exempt else wrong).append(f"{meta['id']} ({meta['symptom']})")
    return wrong, by_design


def run(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall-clock seconds of ``command`` and its result."""
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True)
    return time.monotonic() - start, proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="optfuzz-finish-"))
    bound = FINISH_GRACE + SLACK
    print(f"{args.minutes:g}-minute campaigns, {args.jobs} jobs, bound on the overrun "
          f"{bound:g} s; folders under {base}", flush=True)
    failed = False
    for target in args.targets.split(","):
        folder = base / target
        seconds, proc = run([sys.executable, "-m", "fuzzer", "fuzz", "--target", target,
                             "--minutes", str(args.minutes), "--jobs", str(args.jobs),
                             "--out", str(folder), "--quiet"])
        if proc.returncode != 0:
            print(f"{target}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
            failed = True
            continue
        overrun = seconds - args.minutes * 60
        metas = bundles(folder)
        wrong, by_design = unreduced(metas)
        pending = PendingStore(folder).count()
        verdict = "ok" if overrun <= bound and not wrong else "OVER"
        failed |= verdict != "ok"
        print(f"{target}: overrun {overrun:.1f} s [{verdict}], {len(metas)} bundles, "
              f"unreduced {len(wrong)}, unreduced by design {len(by_design)}, "
              f"pending {pending}", flush=True)
        for line in wrong:
            print(f"    unreduced: {line}")
        for line in by_design:
            print(f"    unreduced by design: {line}")
        if pending:
            took, done = run([sys.executable, "-m", "fuzzer", "triage", "--pending",
                              str(folder)])
            after = bundles(folder)
            print(f"    optfuzz triage --pending {folder}: exit {done.returncode} in "
                  f"{took:.0f} s; pending left {PendingStore(folder).count()}, bundles "
                  f"{len(metas)} -> {len(after)}, unreduced now {len(unreduced(after)[0])}",
                  flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
