"""Where a worker's time goes: milliseconds per case of each stage of the differential test.

Runs the first ``N`` generated cases of a campaign with seed 0 and the target's default
configuration (the cases of ``benchmarks/throughput.py``) through
:func:`fuzzer.execution.pipeline.run_case` in one process, and sums each stage's time from
``CaseResult.timings`` (seconds). A case that kills the process (the target's own memory
errors) is skipped: the cases run in a forked child, and the next child starts after it.

Prints, per stage, milliseconds per case over all cases, the cases the target returned
unchanged and, for those, the reference stage's share (zero where the reference run is
skipped for them).

    python benchmarks/stage_times.py [--cases 1500] [--target onnxoptimizer]
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
from collections import Counter
from typing import Any

from throughput import campaign_cases


def _run_range(cases: list[Any], first: int, report: Any) -> None:
    """Run ``cases[first:]``, sending ``("at", index)`` before each case and
    ``("case", (stage seconds, changed))`` after it through ``report`` (a queue)."""
    import onnxruntime

    from fuzzer.execution.pipeline import run_case
    from oracles import load_oracles

    onnxruntime.set_default_logger_severity(4)
    load_oracles()
    for index in range(first, len(cases)):
        report.put(("at", index))
        result = run_case(cases[index])
        report.put(("case", (result.timings, result.changed)))
    report.put(("end", None))


def stage_times(cases: list[Any]) -> tuple[Counter[str], int, int, float]:
    """Stage seconds summed over ``cases``, the cases run, those unchanged, and the
    reference seconds of the unchanged ones."""
    context = multiprocessing.get_context("fork")
    totals: Counter[str] = Counter()
    count = unchanged = 0
    unchanged_reference = 0.0
    first = 0
    while first < len(cases):
        report = context.Queue()
        child = context.Process(target=_run_range, args=(cases, first, report))
        child.start()
        last, ended = first, False
        while not ended:
            try:
                kind, value = report.get(timeout=1.0)
            except queue.Empty:
                if not child.is_alive():
                    break
                continue
            if kind == "at":
                last = value
            elif kind == "case":
                timings, changed = value
                totals.update(timings)
                count += 1
                if changed is False:
                    unchanged += 1
                    unchanged_reference += timings.get("reference", 0.0)
            else:
                ended = True
        child.join()
        first = len(cases) if ended else last + 1  # the case at ``last`` killed the child
    return totals, count, unchanged, unchanged_reference


def main() -> None:
    """Print milliseconds per case of each stage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1500)
    parser.add_argument("--target", default="onnxoptimizer")
    args = parser.parse_args()
    totals, count, unchanged, reference = stage_times(campaign_cases(args.target, args.cases))
    print(f"target {args.target}; {count} cases of seed 0 run, {unchanged} returned unchanged")
    for stage, seconds in totals.most_common():
        print(f"{stage:12s} {seconds / max(count, 1) * 1e3:7.3f} ms per case")
    print(f"{'all':12s} {sum(totals.values()) / max(count, 1) * 1e3:7.3f} ms per case")
    print(f"reference runs of unchanged models: {reference / max(count, 1) * 1e3:.3f} ms per case")


if __name__ == "__main__":
    main()
