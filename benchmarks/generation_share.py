"""Generation time as a share of the per-case pipeline time, measured in one run.

For each case: time ``generate_model`` (the generator alone), then time the worker's whole
pipeline for the same case in this process (``fuzzer.execution.pipeline.run_case``: materialize —
which generates the model again — reference run, onnxoptimizer with its default pass list,
validation, second run, oracles). The share is total generation time / total pipeline time.
The machine may be shared; only the ratio measured in one run means anything.

Usage: ``python benchmarks/generation_share.py [--cases 1000] [--generator v2]``.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    """Print mean generation time, mean pipeline time per case, and the share."""
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.pipeline import run_case
    from fuzzer.targets import get_target
    from generators import generate_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--generator", default="v2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    config = get_target("onnxoptimizer").default_config()
    gen_total = case_total = 0.0
    nodes = 0
    for s in range(args.seed, args.seed + args.cases):
        source = {"kind": "generated", "seed": s, "generator": args.generator,
                  "passes": config["passes"]}
        t0 = time.perf_counter()
        gm = generate_model(s, generator=args.generator, passes=config["passes"])
        t1 = time.perf_counter()
        run_case(TestCase(target="onnxoptimizer", config=config, source=source, input_seed=s))
        t2 = time.perf_counter()
        gen_total += t1 - t0
        case_total += t2 - t1
        nodes += len(gm.model.graph.node)
    n = args.cases
    print(f"generator {args.generator}: {n} cases, {nodes / n:.1f} nodes on average")
    print(f"generation      : {gen_total / n * 1e3:7.3f} ms per case")
    print(f"whole pipeline  : {case_total / n * 1e3:7.3f} ms per case (generation included)")
    print(f"generation share: {gen_total / case_total:7.1%}")


if __name__ == "__main__":
    main()
