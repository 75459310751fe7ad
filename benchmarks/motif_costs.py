"""Which generator features a target's time goes to: per motif and per interface form, the
share of the target's own optimize time against the share of cases, over a campaign's cases.

The cases are a campaign's first ``N`` generated cases (seed 0, drawn by its case stream with
the configurations a campaign draws), built beforehand; each is optimized once, timed, in a
forked child with a per-case alarm of ``--timeout`` seconds (a case past it counts its
timeout). A feature's *cost ratio* is its share of the time over its share of the cases: 1
for a feature whose cases cost what the average case costs, 10 for one whose cases cost ten
times as much. Both shares come from the same run, so the ratio means what it says on a
shared machine; the milliseconds beside it do not.

A model holds one or two motifs and any number of interface forms (the features known-fault
avoidance counts, :func:`fuzzer.campaign.avoidance.features`), so a case counts once under
each of its features, and the shares of a column need not add up to 1.

    python benchmarks/motif_costs.py [--target onnxslim] [--cases 1000] [--top 15]
"""

from __future__ import annotations

import argparse
import multiprocessing
import signal
import time
from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table
from throughput import campaign_cases

#: the feature kinds tabled (:func:`fuzzer.campaign.avoidance.features`; ``ir:3`` is left out).
KINDS = ("motif", "interface")


def _timed(target_name: str, count: int, timeout: int, out: Any) -> None:
    """In a child: build and optimize each case; send ``(features, seconds)`` per usable
    case, then None."""
    import logging

    import onnxruntime

    from fuzzer.campaign.avoidance import features
    from fuzzer.execution.pipeline import materialize_case
    from fuzzer.targets import get_target

    onnxruntime.set_default_logger_severity(4)
    logging.disable(logging.CRITICAL)  # the targets log and print as they go
    target = get_target(target_name)

    def alarm(*_: Any) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, alarm)
    for case in campaign_cases(target_name, count, fixed_passes=False):
        try:
            model, _, built = materialize_case(case)
        except Exception:  # unusable in a campaign too
            continue
        names = features(built.provenance)  # the features known-fault avoidance counts
        names += [f"{kind}:(none)" for kind in KINDS
                  if not any(n.startswith(f"{kind}:") for n in names)]
        start = time.perf_counter()
        signal.alarm(timeout)
        try:
            target.optimize(model, case.config)
        except BaseException:  # a failure is a finding; its time counts as any other's
            pass
        finally:
            signal.alarm(0)
        out.put((names, time.perf_counter() - start))
    out.put(None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="onnxslim")
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--timeout", type=int, default=10, help="seconds per case")
    parser.add_argument("--top", type=int, default=15, help="rows of each kind printed")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_timed, args=(args.target, args.cases, args.timeout, queue))
    child.start()
    seconds: dict[str, list[float]] = defaultdict(list)
    total, cases = 0.0, 0
    while (item := queue.get()) is not None:
        names, took = item
        total, cases = total + took, cases + 1
        for name in names:
            seconds[name].append(took)
    child.join()
    console = Console()
    console.print(f"{args.target}: {cases} usable cases of the first {args.cases}, "
                  f"{1e3 * total / max(cases, 1):.1f} ms of optimize per case on average")
    for kind in KINDS:
        table = Table(title=f"per {kind}, by share of the time")
        table.add_column(kind, overflow="fold")  # a name wraps, never cut
        for col in ("cases", "case share", "time share", "cost ratio", "ms/case"):
            table.add_column(col, justify="right", no_wrap=True)
        rows = sorted(((k, v) for k, v in seconds.items() if k.startswith(f"{kind}:")),
                      key=lambda kv: -sum(kv[1]))
        for name, took in rows[:args.top]:
            case_share, time_share = len(took) / cases, sum(took) / total
            table.add_row(name.split(":", 1)[1], str(len(took)), f"{case_share:.3f}",
                          f"{time_share:.3f}", f"{time_share / case_share:.2f}",
                          f"{1e3 * sum(took) / len(took):.1f}")
        console.print(table)


if __name__ == "__main__":
    main()
