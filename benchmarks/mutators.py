"""Per mutator of :data:`generators.mutate.MUTATORS`: how often the havoc driver picked it,
how often it applied, and how many of its results it kept (valid: checker full_check, strict
shape inference, and a run in onnxruntime) or discarded, over mutations of generated models
and of the models bundled in the onnx wheel that run in onnxruntime.

Usage: ``python benchmarks/mutators.py [--generated 500] [--corpus 100] [--seed 0]``.
A mutation stacks 1 to 3 kept mutators, so a mutator's counts are per pick, not per mutation.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import onnx

from generators.mutate import MUTATORS, OUTCOMES, mutated_models
from generators.mutate.check import run_problem


def corpus_parents() -> list[onnx.ModelProto]:
    """The bundled corpus models that onnxruntime runs (on their stored feeds where they have
    them, else synthesized ones)."""
    from fuzzer.corpus import iter_models
    from fuzzer.corpus.testdata import load_feeds

    parents = []
    for cm in iter_models(["bundled"]):
        model = onnx.load(cm.path)
        feeds = load_feeds(cm.inputs, model) if cm.inputs else None
        if run_problem(model, feeds) is None:
            parents.append(model)
    return parents


def measure(count: int, seed: int, parents: list | None) -> tuple[Counter, float]:
    """Counts ``(mutator, outcome) -> n`` over ``count`` kept mutations, and the seconds."""
    counts: Counter[tuple[str, str]] = Counter()
    start = time.perf_counter()
    for _ in mutated_models(seed, count, parents=parents, counts=counts):
        pass
    return counts, time.perf_counter() - start


def table(columns: dict[str, Counter]) -> str:
    """A Markdown table: one row per mutator, ``tried/applied/kept/discarded`` per column."""
    head = "| mutator | kind | " + " | ".join(
        f"{name}: {'/'.join(OUTCOMES)}" for name in columns) + " |"
    rows = [head, "|" + " --- |" * (2 + len(columns))]
    for name, m in MUTATORS.items():
        cells = ["/".join(str(c[(name, o)]) for o in OUTCOMES) for c in columns.values()]
        rows.append(f"| {name} | {m.kind} | " + " | ".join(cells) + " |")
    totals = ["/".join(str(sum(v for (_, o), v in c.items() if o == out)) for out in OUTCOMES)
              for c in columns.values()]
    rows.append("| all | | " + " | ".join(totals) + " |")
    return "\n".join(rows)


def main() -> None:
    """Parse the arguments, measure, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generated", type=int, default=500, help="mutations of generated models")
    ap.add_argument("--corpus", type=int, default=100, help="mutations of corpus models")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    columns: dict[str, Counter] = {}
    gen, gen_s = measure(args.generated, args.seed, None)
    columns[f"generated ({args.generated})"] = gen
    parents = corpus_parents()
    cor, cor_s = measure(args.corpus, args.seed, parents)
    columns[f"corpus ({args.corpus}, {len(parents)} parents)"] = cor
    print(table(columns))
    print(f"\n{args.generated} generated mutations in {gen_s:.1f} s, {args.corpus} corpus "
          f"mutations in {cor_s:.1f} s")


if __name__ == "__main__":
    main()
