"""Schema feature-pair coverage per rewrite with and without schema variation.

Usage: ``python benchmarks/schema_coverage.py [--target onnxoptimizer] [--cases 200]
[--seed 0] [--json FILE]``. Generates the same cases as ``optfuzz coverage --schema`` twice:
once with the generator as it is (``v2``: a share of motif draws take a row of their
pairwise schema plan) and once with that share at 0 (the motifs as they draw without
variation), and prints per (pass, motif) the covered share of feasible pairs of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from fuzzer.commands.coverage_schema import PAIR_TARGET, schema_report
from fuzzer.targets import get_target
from generators import recipe


def main() -> None:
    """Print both tables' rows side by side and the number of rows at the target share."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="onnxoptimizer")
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    recipe.RECIPES["v2-plain"] = dataclasses.replace(recipe.RECIPES["v2"], name="v2-plain",
                                                     schema_share=0.0)
    target = get_target(args.target)
    passes = target.available_passes()
    out = {}
    for gen in ("v2-plain", "v2"):
        start = time.perf_counter()
        out[gen] = schema_report(target, passes, args.cases, generator=gen, seed=args.seed)
        print(f"{gen}: {time.perf_counter() - start:.0f} s")
    rows = []
    for name, entry in out["v2"].items():
        for motif, row in entry["motifs"].items():
            before = out["v2-plain"][name]["motifs"][motif]
            rows.append((name, motif, before, row))
            print(f"{name:40s} {motif:28s} {before['covered']:4d}/{before['pairs']:<4d} "
                  f"{before['share']:6.1%} -> {row['covered']:4d}/{row['pairs']:<4d} "
                  f"{row['share']:6.1%}")
    for gen, idx in (("without variation", 2), ("with variation", 3)):
        hit = sum(r[idx]["share"] >= PAIR_TARGET for r in rows)
        pairs = sum(r[idx]["pairs"] for r in rows)
        covered = sum(r[idx]["covered"] for r in rows)
        print(f"{gen}: {hit}/{len(rows)} rows at >= {PAIR_TARGET:.0%}; "
              f"{covered}/{pairs} pairs ({covered / max(pairs, 1):.1%})")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
