"""Throughput of a campaign with isolation vs. a bare in-process loop, in one run.

Both run the same cases: the first ``N`` generated cases of a campaign with seed 0 and the
target's default configuration (onnxoptimizer's default pass list; onnxruntime's
ORT_ENABLE_ALL with every transformer, the optimized model saved and loaded back, as its
target does):

- bare loop (one core, no isolation): per case, timed: the model and feeds built from the
  case's seed (as a campaign's worker builds them), optimize, two onnxruntime sessions, two
  runs, compare; the same loop on models built beforehand is printed too;
- campaign: ``run_campaign`` with N worker processes, twice over the same cases. The first
  run finds their root causes (each new bundle costs a determinism run, a float64 run and
  its repro.py in a fresh process); the timed run resumes the folder from case 0 again
  (``next_case`` reset in campaign.json), so its findings are hits of known root causes, as
  in the hours of an overnight campaign: the per-case path. It adds validation, every
  oracle, hit handling and inter-process traffic.

Prints cases/s of each, the new bundles of each campaign run, and the ratios (timed campaign
run / each bare loop). The machine is shared, so only the ratio measured in one run means
anything: the bare loops and the timed campaign run ``--repeats`` times in turn, and the
ratio that counts is the median of each repeat's own ratio (its campaign run over its bare
loop, run seconds before, so that both saw the machine in much the same state: a fixed
loop of pure Python moves by a third from one second to the next on a shared machine).
The ratio of the median rates is printed beside it.

The wall-clock ratio means what it says only while this machine has CPUs to spare: where
other sessions keep both busy, the kernel's autogroup scheduling (``sched_autogroup``) gives
this session one share of the CPUs however many processes it runs, so the 2-worker campaign
gets no more CPU than the 1-process bare loop and the ratio falls to about their ratio of
CPU per case. So each loop's CPU per case is measured too (the bare loop's own process time;
the campaign's process and its workers, with their children, from ``getrusage``), and the
ratio they allow on cores of the campaign's own is printed: ``jobs x bare CPU per case /
campaign CPU per case`` (its workers never wait for cases: they are always runnable). The
bare loop's CPU spent building the model and feeds from the seed (bare minus prebuilt) is
the generation's cost per case, printed as a share of the campaign's CPU per case.

    python benchmarks/throughput.py [--cases 3000] [--jobs 2] [--target onnxoptimizer]
                                    [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console


def campaign_cases(target_name: str, count: int, fixed_passes: bool = True) -> list[Any]:
    """The campaign's cases ``0 .. count - 1`` (seed 0, generated source) as drawn by its case
    stream: seeds, not yet models. With ``fixed_passes``, each in the target's default
    configuration; without, in the configurations a campaign draws."""
    from fuzzer.campaign.stream import CaseStream, StreamConfig
    from fuzzer.targets import get_target

    stream = CaseStream(StreamConfig(target_name, 0, fixed_passes=fixed_passes),
                        get_target(target_name), 0, 0)
    return [stream.draw(corpus_ok=False) for _ in range(count)]


def prebuilt(cases: list[Any]) -> list[tuple[Any, Any] | None]:
    """``(model, feeds)`` of each case, built in this process (None: unusable)."""
    from fuzzer.execution.pipeline import materialize_case

    built: list[tuple[Any, Any] | None] = []
    for case in cases:
        try:
            built.append(materialize_case(case)[:2])
        except Exception:  # unusable in the campaign too: it costs the attempt only
            built.append(None)
    return built


def _bare_range(cases: list[Any], target_name: str, first: int, progress: Any,
                built: list[tuple[Any, Any] | None] | None) -> None:
    """Run the bare loop from case ``first`` on, in a forked child; ``progress`` (shared
    ``[next case, seconds, CPU seconds]``) is updated after each case, so that a case that kills the
    child (the target's own memory errors) is skipped by the next child. Without ``built``
    (:func:`prebuilt`) each case's model and feeds are built from its seed in the timed
    part, as the campaign's workers do."""
    from fuzzer.execution.pipeline import materialize_case
    from fuzzer.execution.reference import make_session, run_session
    from fuzzer.targets import get_target
    from oracles.tolerance import compare_arrays

    target = get_target(target_name)
    for index in range(first, len(cases)):
        case = cases[index]
        start, cpu = time.perf_counter(), time.process_time()
        try:  # a failure is a finding; the loop goes on, as a campaign does
            model, feeds = built[index] if built else materialize_case(case)[:2]  # type: ignore[misc]
            expected = run_session(make_session(model.SerializeToString()), feeds)
            optimized = target.optimize(model, case.config)
            actual = run_session(make_session(optimized.SerializeToString()), feeds)
            for e, a in zip(expected.values(), actual.values(), strict=False):
                compare_arrays(e, a)
        except Exception:
            pass
        progress[1] += time.perf_counter() - start
        progress[2] += time.process_time() - cpu
        progress[0] = index + 1


def bare_loop(cases: list[Any], target_name: str,
              built: list[tuple[Any, Any] | None] | None = None) -> tuple[float, float]:
    """Cases/s and CPU seconds per case of (without ``built``: the model and feeds built
    from the case's seed) + optimize (target ``target_name``) + two sessions + two runs +
    compare, with no isolation: one process runs case after case (a forked child of this
    one, the imports already made; a case that kills it is skipped and not timed, and the
    next child goes on)."""
    context = multiprocessing.get_context("fork")
    progress = context.Array("d", [0.0, 0.0, 0.0], lock=False)
    skipped = 0
    while progress[0] < len(cases):
        child = context.Process(target=_bare_range,
                                args=(cases, target_name, int(progress[0]), progress, built))
        child.start()
        child.join()
        if child.exitcode != 0:  # the case at progress[0] killed it
            skipped += 1
            progress[0] += 1
    return (len(cases) - skipped) / progress[1], progress[2] / (len(cases) - skipped)


def campaign(out: Path, count: int, jobs: int, target: str, resume: bool) -> dict[str, Any]:
    """One campaign run of ``count`` cases on ``target`` (seed 0, default configuration,
    no localization or reduction) in ``out``: its cases/s over the case loop (from start-up
    to the last result; without the final summary.html), the bundles in ``out``, and the
    CPU seconds per case of the campaign's process (``parent``) and of all of them (``cpu``:
    with its workers and their children, each reaped by the end of the run)."""
    from fuzzer.campaign.run import CampaignSettings, run_campaign
    from fuzzer.handling.outcome import FindingPolicy

    settings = CampaignSettings(out=out, max_cases=count, jobs=jobs, target=target, seed=0,
                                fixed_passes=True, live=False, resume=resume,
                                policy=FindingPolicy(localize=False, reduce_seconds=0))
    before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                  resource.RUSAGE_CHILDREN)]
    stats = run_campaign(settings, Console(quiet=True))
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                 resource.RUSAGE_CHILDREN)]
    spent = [a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
             for a, b in zip(after, before, strict=True)]
    run = stats.last_run
    return {"rate": run["cases"] / run["seconds"], "bundles": stats.bundles_new,
            "parent": spent[0] / count, "cpu": sum(spent) / count}


def replay_from_start(out: Path) -> None:
    """Let a resumed run of the campaign in ``out`` start at case 0 again."""
    path = out / "campaign.json"
    state = json.loads(path.read_text())
    state["next_case"] = 0
    path.write_text(json.dumps(state))


def main() -> None:
    """Measure both rates in one run and print them with their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--target", default="onnxoptimizer")
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs of each loop, in turn; the median of the repeats' "
                             "own ratios counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "crashes"
        first = campaign(out, args.cases, args.jobs, args.target, resume=False)
        cases = campaign_cases(args.target, args.cases)
        built = prebuilt(cases)
        rates: dict[str, list[float]] = {"bare": [], "built": [], "campaign": []}
        cpu: dict[str, list[float]] = {"bare": [], "built": [], "campaign": [], "parent": []}
        for _ in range(max(1, args.repeats)):
            for name, loop_built in (("bare", None), ("built", built)):
                loop_rate, loop_cpu = bare_loop(cases, args.target, loop_built)
                rates[name].append(loop_rate)
                cpu[name].append(loop_cpu)
            replay_from_start(out)
            timed = campaign(out, args.cases, args.jobs, args.target, resume=True)
            rates["campaign"].append(timed["rate"])
            cpu["campaign"].append(timed["cpu"])
            cpu["parent"].append(timed["parent"])
    bare, bare_built, rate = (statistics.median(rates[k]) for k in ("bare", "built", "campaign"))
    models = [b[0] for b in built if b is not None]
    nodes = sum(len(m.graph.node) for m in models) / max(1, len(models))
    print(f"target {args.target}; cases 0..{args.cases - 1} of seed 0, "
          f"{nodes:.1f} nodes on average; load average {os.getloadavg()[0]:.1f}")
    print(f"campaign, first run, {args.jobs} workers     : {first['rate']:8.1f} cases/s "
          f"({first['bundles']} new bundles)")
    runs = ", ".join(f"{k} {' '.join(f'{r:.0f}' for r in v)}" for k, v in rates.items())
    print(f"rates of each run (cases/s): {runs}")
    print(f"bare loop, 1 core                  : {bare:8.1f} cases/s (median)")
    print(f"bare loop on prebuilt models, 1 core: {bare_built:8.1f} cases/s (median)")
    print(f"campaign again, {args.jobs} workers         : {rate:8.1f} cases/s (median; "
          f"{timed['bundles'] - first['bundles']} new bundles)")
    for name, loop, median in (("bare loop", "bare", bare),
                               ("prebuilt bare loop", "built", bare_built)):
        own = [c / b for c, b in zip(rates["campaign"], rates[loop], strict=True)]
        print(f"ratio campaign / {name + ':':19s} {statistics.median(own):5.2f} (median of "
              f"the repeats' own: {' '.join(f'{r:.2f}' for r in own)}; of the median "
              f"rates: {rate / median:.2f})")
    # CPU per case does not depend on what else the machine runs: what the wall-clock ratio
    # would be on cores of our own, were the workers never idle
    ms = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
    cores = min(args.jobs, os.cpu_count() or 1)
    print(f"CPU per case (ms, median): bare loop {ms['bare']:.2f} (of which building the model "
          f"and feeds {ms['bare'] - ms['built']:.2f}: {1 - ms['built'] / ms['bare']:.0%}); "
          f"campaign {ms['campaign']:.2f}, of which its own process {ms['parent']:.2f}")
    print(f"generation (model and feeds) per case: {ms['bare'] - ms['built']:.2f} ms, "
          f"{(ms['bare'] - ms['built']) / ms['campaign']:.0%} of the campaign's CPU per case")
    print(f"ratio from CPU per case, {cores} cores: {cores * ms['bare'] / ms['campaign']:.2f} "
          f"(= {cores} x {ms['bare']:.2f} / {ms['campaign']:.2f})")


if __name__ == "__main__":
    main()
