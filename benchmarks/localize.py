"""Benchmark: optimizer runs spent to localize a bug in a 39-pass list.

The default pass list of onnxoptimizer has 39 passes; re-running each pass alone (as DiTOX
did with its 47) costs one run per pass. Here a bug pass of the ``fake`` target (``raise``,
``drop-node``, ``invalid``, ``bloat``) sits at every position of a 39-long list of ``nop-*``
fillers, and :func:`fuzzer.localize.search.localize` finds it; the fillers offer no cheap evidence,
so this measures the search itself (bisection, then ddmin). A second table places the
interaction pair ``pair-a`` + ``pair-b`` at spread positions. With ``--bundles DIR``, the
bundles of a campaign are localized again (their recorded configuration) and counted too.

Usage: ``python benchmarks/localize.py [--bundles DIR]``; one worker process. Prints the
median / mean / max runs per localization and the share localized correctly.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

LENGTH = 39
SINGLE_BUGS = ("raise", "drop-node", "invalid", "bloat")
PAIRS = ((0, 38), (3, 17), (10, 11), (20, 35), (30, 31), (5, 25))


def chain_model() -> bytes:
    """A three-node float model ``x -> Sigmoid -> Neg -> Exp -> y`` (IR 8, opset 17)."""
    import onnx
    from onnx import TensorProto, helper

    nodes, prev = [], "x"
    for index, op in enumerate(("Sigmoid", "Neg", "Exp")):
        out = "y" if index == 2 else f"t{index}"
        nodes.append(helper.make_node(op, [prev], [out], name=f"n{index}"))
        prev = out
    graph = helper.make_graph(nodes, "bench",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def filler_list(placed: dict[int, str]) -> list[str]:
    """39 ``nop-*`` fillers with ``placed`` ({position: pass}) put in."""
    return [placed.get(i, f"nop-{i}") for i in range(LENGTH)]


def localize_once(sandbox, passes: list[str], model: bytes) -> tuple[list[str] | None, int]:
    """Run the case once, localize its primary finding; ``(passes, runs)``."""
    from fuzzer.execution.case import TestCase
    from fuzzer.localize.search import localize

    case = TestCase("fake", {"passes": passes, "fixed_point": False}, {"kind": "bytes"},
                    model_bytes=model)
    result = sandbox.run(case)
    if not result.findings:
        raise SystemExit(f"benchmark setup: no finding for {passes}")
    where = localize(sandbox, case, result, result.findings[0])
    return where.passes, where.runs


def summarize(label: str, runs: list[int], correct: int) -> None:
    """Print one line of figures."""
    print(f"{label:<34} n={len(runs):>4}  median={statistics.median(runs):>5.1f}  "
          f"mean={statistics.mean(runs):>5.2f}  max={max(runs):>3}  "
          f"correct={correct}/{len(runs)}")


def bench_fake(sandbox) -> float:
    """Single-pass bugs at every position, then pairs; return the single-pass median."""
    model = chain_model()
    runs: list[int] = []
    correct = 0
    for bug in SINGLE_BUGS:
        mine: list[int] = []
        right = 0
        for position in range(LENGTH):
            found, spent = localize_once(sandbox, filler_list({position: bug}), model)
            mine.append(spent)
            right += found == [bug]
        summarize(f"single {bug} (39 positions)", mine, right)
        runs.extend(mine)
        correct += right
    summarize("single-pass bugs, all", runs, correct)
    pair_runs, pair_ok = [], 0
    for a, b in PAIRS:
        found, spent = localize_once(sandbox, filler_list({a: "pair-a", b: "pair-b"}), model)
        pair_runs.append(spent)
        pair_ok += found == ["pair-a", "pair-b"]
    summarize("pair-a + pair-b (interaction)", pair_runs, pair_ok)
    return statistics.median(runs)


def bench_bundles(sandbox, folder: Path) -> None:
    """Localize every bundle of a campaign folder again; print runs and the share localized."""
    import json

    import numpy as np

    from fuzzer.execution.case import TestCase
    from fuzzer.findings.signature import normalize_message, same_finding
    from fuzzer.localize.search import localize

    runs, localized, total = [], 0, 0
    for meta_path in sorted(folder.glob("*/meta.json")):
        meta = json.loads(meta_path.read_text())
        bundle = meta_path.parent
        with np.load(bundle / "inputs.npz", allow_pickle=False) as npz:
            feeds = {k: npz[k] for k in npz.files}
        case = TestCase(meta["target"]["name"], meta["target"]["config"], {"kind": "bundle"},
                        model_bytes=(bundle / "model.onnx").read_bytes(), feeds=feeds)
        result = sandbox.run(case)
        wanted = normalize_message(meta["message"])
        finding = next((f for f in result.findings
                        if same_finding(f, meta["symptom"], wanted)), None)
        total += 1
        if finding is None:
            continue
        where = localize(sandbox, case, result, finding)
        runs.append(where.runs)
        localized += where.passes is not None
        print(f"  {bundle.name:<28} {len(case.config.get('passes') or [])} passes -> "
              f"{where.passes} in {where.runs} runs ({where.method})")
    if runs:
        summarize(f"bundles of {folder}", runs, localized)
    print(f"localized {localized}/{total} bundles")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 when the single-pass median exceeds 12 runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=Path, help="a campaign's output folder")
    args = parser.parse_args(argv)
    from fuzzer.execution.sandbox import Sandbox

    started = time.perf_counter()
    with Sandbox(jobs=1, timeout=10.0) as sandbox:
        median = bench_fake(sandbox)
        if args.bundles:
            bench_bundles(sandbox, args.bundles)
    print(f"median runs to localize a single-pass bug in {LENGTH} passes: {median:g} "
          f"(limit 12; one run per pass: {LENGTH}); {time.perf_counter() - started:.1f} s")
    return 0 if median <= 12 else 1


if __name__ == "__main__":
    sys.exit(main())
