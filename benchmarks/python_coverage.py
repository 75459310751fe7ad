"""What coverage.py's tracing costs a Python target's cases: the same cases with and without
the per-case collector (:class:`fuzzer.edges.python_coverage.CoverageCollector`), in one run.

Two measures, each case run once per mode before the next case (so that the machine's load
drifts alike for every mode), each mode first in turn:

- in this process, :func:`fuzzer.execution.pipeline.run_case` untraced, traced with the
  arcs read from the tracer's own sets (what the workers do) and traced with coverage.py's
  public ``get_data()`` / ``erase()`` after each case: the whole case and its ``optimize``
  stage alone;
- in workers: two one-worker sandboxes, one untraced and one with the target's coverage
  (:func:`fuzzer.edges.kinds.edge_setup`), each case submitted to one and then the other.

The first ``--warm-up`` cases run in every mode and are not counted (lazy imports, the
tracer's first look at each file). Prints seconds per case of each mode and the ratio to the
untraced run. The machine is shared: only ratios measured in one run mean anything.

    python benchmarks/python_coverage.py --target onnxslim [--cases 200] [--seed 0]
        [--warm-up 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

#: in-process modes: untraced, and the collector's two ways of reading the arcs.
MODES = ("untraced", "traced", "traced-public")


def cases(target: str, count: int, seed: int) -> list[Any]:
    """``count`` generated cases of ``target`` (its campaign stream's first ones)."""
    from fuzzer.campaign.stream import CaseStream, StreamConfig
    from fuzzer.targets import get_target

    return list(islice(iter(CaseStream(StreamConfig(target, seed), get_target(target))),
                       count))


def in_process(target: str, drawn: list[Any], warm_up: int
               ) -> dict[str, dict[str, list[float]]]:
    """``{mode: {"case": [s], "optimize": [s]}}`` of ``drawn`` past the first ``warm_up``,
    each case run in every mode of :data:`MODES` in turn."""
    from fuzzer.edges.python_coverage import CoverageCollector, resolve_sources
    from fuzzer.execution.pipeline import run_case
    from fuzzer.targets import get_target

    sources = resolve_sources(get_target(target).coverage_modules)
    collectors = {"untraced": None, "traced": CoverageCollector(sources),
                  "traced-public": CoverageCollector(sources, public=True)}
    times: dict[str, dict[str, list[float]]] = {m: {"case": [], "optimize": []}
                                                for m in MODES}
    for i, case in enumerate(drawn):
        # each mode first in turn: a case's first run pays for what later runs find cached
        for mode in MODES[i % len(MODES):] + MODES[:i % len(MODES)]:
            collector = collectors[mode]
            start = time.perf_counter()
            if collector is not None:
                collector.start()
            result = run_case(case)
            if collector is not None:
                collector.collect()
            took = time.perf_counter() - start
            if i >= warm_up:
                times[mode]["case"].append(took)
                times[mode]["optimize"].append(result.timings.get("optimize", 0.0))
    return times


def in_workers(target: str, drawn: list[Any], warm_up: int) -> dict[str, list[float]]:
    """``{"untraced": [s], "traced": [s]}``: each case's wall time through a one-worker
    sandbox without and with the target's coverage, past the first ``warm_up``."""
    from fuzzer.edges.kinds import edge_setup
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.targets import get_target

    folder = Path(tempfile.mkdtemp(prefix="python-coverage-"))
    setup = edge_setup(get_target(target), folder / "edges")
    times: dict[str, list[float]] = {"untraced": [], "traced": []}
    with Sandbox(1, 60.0) as plain, Sandbox(1, 60.0, edges=setup) as traced:
        plain.call(time.time)
        traced.call(time.time)
        for i, case in enumerate(drawn):
            order = (("untraced", plain), ("traced", traced))
            for mode, sandbox in order[i % 2:] + order[:i % 2]:
                start = time.perf_counter()
                sandbox.submit(case).result()
                if i >= warm_up:
                    times[mode].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="a target of code_coverage 'python'")
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warm-up", type=int, default=5)
    args = parser.parse_args()
    drawn = cases(args.target, args.cases + args.warm_up, args.seed)
    print(f"{args.target}: {args.cases} cases (+{args.warm_up} warm-up), seed {args.seed}")
    local = in_process(args.target, drawn, args.warm_up)
    for part in ("case", "optimize"):
        base = sum(local["untraced"][part])
        cells = [f"{mode} {sum(local[mode][part]) / args.cases * 1000:7.2f} ms"
                 + ("" if mode == "untraced" else f" ({sum(local[mode][part]) / base:.2f}x)")
                 for mode in MODES]
        print(f"in process, {part:8s}: " + ", ".join(cells))
    workers = in_workers(args.target, drawn, args.warm_up)
    plain, traced = sum(workers["untraced"]), sum(workers["traced"])
    median = statistics.median(t / p for t, p in zip(workers["traced"], workers["untraced"],
                                                     strict=True))
    print(f"in workers, case    : untraced {plain / args.cases * 1000:7.2f} ms, traced "
          f"{traced / args.cases * 1000:7.2f} ms ({traced / plain:.2f}x; median per case "
          f"{median:.2f}x)")


if __name__ == "__main__":
    main()
