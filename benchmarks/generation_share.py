"""Generation time as a share of the per-case pipeline time, measured in one run.

The cases are a campaign's own: cases ``0 .. N - 1`` of seed 0 with the target's default
configuration, drawn by the campaign's case stream (schema variation included, as
``generators/recipe.py`` sets it). For each case, in this process: time its
materialization alone (``materialize_case``: the generator builds the model, the inputs are
synthesized), then time the worker's whole pipeline for the same case
(``fuzzer.execution.pipeline.run_case``: materialize again, target, validation, reference
run and second run where the model changed, oracles). The share is total materialization
time / total pipeline time. The machine may be shared; only the ratio measured in one run
means anything. Every case runs once untimed first: what a long-lived worker builds
once and keeps (imports, the schema variation's plans per anchor op) is not a case's cost.

Usage: ``python benchmarks/generation_share.py [--target onnxoptimizer] [--cases 500]``.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    """Print mean generation time, mean pipeline time per case, and the share."""
    from fuzzer.campaign.stream import CaseStream, StreamConfig
    from fuzzer.execution.pipeline import materialize_case, run_case
    from fuzzer.targets import get_target

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="onnxoptimizer")
    ap.add_argument("--cases", type=int, default=500)
    args = ap.parse_args()
    stream = CaseStream(StreamConfig(args.target, 0, fixed_passes=True),
                        get_target(args.target), 0, 0)
    cases = [stream.draw(corpus_ok=False) for _ in range(args.cases)]
    for case in cases:  # once untimed: the target's imports and the schema plans each
        run_case(case)  # worker builds once and keeps (lazily, per anchor op) are no case's cost
    gen_total = case_total = 0.0
    nodes = built = 0
    for case in cases:
        t0 = time.perf_counter()
        try:
            model = materialize_case(case)[0]
            nodes += len(model.graph.node)
            built += 1
        except Exception:  # unusable: the campaign pays the attempt too
            pass
        t1 = time.perf_counter()
        run_case(case)
        t2 = time.perf_counter()
        gen_total += t1 - t0
        case_total += t2 - t1
    n = args.cases
    print(f"target {args.target}: {n} cases, {nodes / max(built, 1):.1f} nodes on average")
    print(f"generation      : {gen_total / n * 1e3:7.3f} ms per case (model and inputs)")
    print(f"whole pipeline  : {case_total / n * 1e3:7.3f} ms per case (generation included)")
    print(f"generation share: {gen_total / case_total:7.1%}")


if __name__ == "__main__":
    main()
