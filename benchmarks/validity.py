"""Validity of generated models: the share that passes onnx.checker (full_check) and runs in
onnxruntime (CPU, ORT_DISABLE_ALL) on synthesized inputs, with failures by reason.

Usage: ``python benchmarks/validity.py [--models 10000] [--generator v2] [--seed 0]``.
Also counts models whose reference outputs are not all finite (quality, not validity).
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort

from generators import generate_model
from generators.inputs import synthesize_inputs


def _reason(stage: str, exc: BaseException) -> str:
    msg = str(exc).replace("\n", " ")
    msg = re.sub(r"node name: [^)]*", "node name: _", msg)
    msg = re.sub(r"'[^']*'", "'_'", msg)
    return f"{stage}: {msg[:160]}"


def run(models: int, generator: str, seed: int) -> dict:
    """Generate and check ``models`` models; returns the counts."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    failures: Counter[str] = Counter()
    valid = nonfinite = 0
    start = time.perf_counter()
    for s in range(seed, seed + models):
        try:
            gm = generate_model(s, generator=generator)
        except Exception as exc:  # a generator bug: counted, reported
            failures[_reason("generate", exc)] += 1
            continue
        try:
            onnx.checker.check_model(gm.model, full_check=True)
        except Exception as exc:
            failures[_reason("checker", exc)] += 1
            continue
        try:
            sess = ort.InferenceSession(gm.model.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            outs = sess.run(None, synthesize_inputs(gm.model, s, gm.input_shapes))
        except Exception as exc:
            failures[_reason("onnxruntime", exc)] += 1
            continue
        valid += 1
        if not all(np.isfinite(o).all() for o in outs
                   if isinstance(o, np.ndarray) and o.dtype.kind == "f"):
            nonfinite += 1
    return {"models": models, "valid": valid, "nonfinite": nonfinite, "failures": failures,
            "seconds": time.perf_counter() - start}


def main() -> None:
    """Print the validity rate and the failures by reason."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=10_000)
    ap.add_argument("--generator", default="v2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    r = run(args.models, args.generator, args.seed)
    print(f"generator {args.generator}: {r['valid']}/{r['models']} valid "
          f"({r['valid'] / r['models']:.2%}) in {r['seconds']:.1f} s")
    print(f"valid models with a non-finite reference output: {r['nonfinite']} "
          f"({r['nonfinite'] / max(r['valid'], 1):.2%})")
    for reason, n in r["failures"].most_common():
        print(f"  {n:6d}  {reason}")


if __name__ == "__main__":
    main()
