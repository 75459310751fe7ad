"""Throughput of a campaign with isolation vs. a bare in-process loop, in one run.

Both run the same generated ~10-node graphs through one target's default configuration
(onnxoptimizer's default pass list; onnxruntime's ORT_ENABLE_ALL with every transformer,
the optimized model saved and loaded back, as its target does):

- bare loop (one core, no isolation): optimize, two onnxruntime sessions, two runs, compare;
- campaign: ``run_campaign`` with N worker processes over the same models (saved as a corpus
  folder), which adds materialization, validation, oracles and inter-process traffic.

Prints cases/s of each and their ratio (campaign / bare). The machine is shared, so only
the ratio measured in one run means anything.

    python benchmarks/throughput.py [--models 3000] [--jobs 2] [--target onnxoptimizer]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import onnx
from rich.console import Console


def make_models(count: int, folder: Path) -> list[onnx.ModelProto]:
    """``count`` generated models of 8 to 14 nodes, also saved into ``folder``."""
    from generators import generate_model

    models, seed = [], 0
    while len(models) < count:
        model = generate_model(seed, nodes=(5, 9)).model
        seed += 1
        if 8 <= len(model.graph.node) <= 14:
            onnx.save(model, folder / f"m{len(models):05d}.onnx")
            models.append(model)
    return models


def bare_loop(models: list[onnx.ModelProto], target_name: str) -> float:
    """Cases/s of optimize (target ``target_name``, default configuration) + two sessions +
    two runs + compare, in this process."""
    from fuzzer.execution.reference import make_session, run_session
    from fuzzer.targets import get_target
    from generators.inputs import synthesize_inputs
    from oracles.tolerance import compare_arrays

    target = get_target(target_name)
    config = target.default_config()
    feeds = [synthesize_inputs(m, 0) for m in models]
    start = time.perf_counter()
    for model, feed in zip(models, feeds, strict=True):
        try:  # a failure is a finding; the loop goes on, as a campaign does
            optimized = target.optimize(model, config)
            expected = run_session(make_session(model.SerializeToString()), feed)
            actual = run_session(make_session(optimized.SerializeToString()), feed)
        except Exception:
            continue
        for e, a in zip(expected.values(), actual.values(), strict=False):
            compare_arrays(e, a)
    return len(models) / (time.perf_counter() - start)


def campaign(folder: Path, count: int, jobs: int, out: Path, target: str) -> float:
    """Cases/s of a real campaign on ``target`` over the models in ``folder`` (default
    configuration), over its case loop (from start-up to the last result; without the
    final summary.html)."""
    from fuzzer.campaign.record import FindingPolicy
    from fuzzer.campaign.run import CampaignSettings, run_campaign
    from fuzzer.corpus import iter_models

    models = list(iter_models(["dir"], [str(folder)]))
    settings = CampaignSettings(out=out, max_cases=count, jobs=jobs, generated=False,
                                target=target,
                                corpus=models, fixed_passes=True, live=False,
                                policy=FindingPolicy(localize=False, reduce_seconds=0))
    stats = run_campaign(settings, Console(quiet=True))
    return stats.last_run["cases"] / stats.last_run["seconds"]


def main() -> None:
    """Measure both rates in one run and print them with their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--target", default="onnxoptimizer")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "models", Path(tmp) / "crashes"
        folder.mkdir()
        models = make_models(args.models, folder)
        nodes = sum(len(m.graph.node) for m in models) / len(models)
        bare = bare_loop(models, args.target)
        camp = campaign(folder, len(models), args.jobs, out, args.target)
    print(f"target {args.target}; models: {len(models)} generated graphs, {nodes:.1f} nodes "
          "on average")
    print(f"bare in-process loop, 1 core : {bare:8.1f} cases/s")
    print(f"campaign, {args.jobs} workers        : {camp:8.1f} cases/s")
    print(f"ratio campaign / bare        : {camp / bare:8.2f}")


if __name__ == "__main__":
    main()
