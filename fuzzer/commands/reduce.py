"""``optfuzz reduce MODEL|BUNDLE``: shrink a failing model to a minimal repro.

- On a bundle folder: the bundle's finding (symptom and normalized message) must reproduce;
  ``model.onnx`` becomes the minimized model (``original.onnx`` keeps the found one) and
  inputs.npz, optimized.onnx, expected/actual.npz, repro.py, report.md and
  ``nodes.minimized`` are updated.
- On a model file: its first finding under ``--target``/``--passes`` is reduced; the result
  goes to ``-o`` (default ``<model>.reduced.onnx``) with its feeds in ``<out>.inputs.npz``.
- With ``--check CMD`` (Polygraphy ``debug reduce`` compatible): CMD decides, run with the
  candidate model's path appended; a non-zero exit status (or ``--fail-regex`` matching its
  output) means "still fails".

Exit status: 0 reduced, 1 nothing to reduce (the model does not fail), 2 bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from fuzzer.commands import options
from fuzzer.commands.command import Command
from fuzzer.errors import InputError


@options.grouped
def reduce(
    path: Path = typer.Argument(..., help="An .onnx file or a bundle folder."),
    time_limit: options.ReduceSeconds = 300.0,
    out: Path = typer.Option(None, "-o", "--output", help="Minimized model (model mode)."),
    check: str = typer.Option(None, "--check", help="External check command; the "
                              "candidate's path is appended (Polygraphy style)."),
    fail_regex: str = typer.Option(None, "--fail-regex", help="With --check: fail when "
                                   "stdout/stderr matches instead of the exit status."),
    artifacts: Path = typer.Option(None, "--artifacts", help="With --check: keep every "
                                   "candidate in DIR/good and DIR/bad."),
    min_good: Path = typer.Option(None, "--min-good", help="With --check: save the "
                                  "smallest passing candidate here."),
    target: options.TargetArgs = None, inputs: options.InputArgs = None,
    execution: options.ExecutionArgs = None,
) -> None:
    """Shrink a failing model (or a bundle's model) to a minimal repro."""
    from rich.console import Console

    console = Console(highlight=False)
    if time_limit <= 0:
        raise InputError("--time-limit must be positive")
    if not path.exists():  # before the sandbox and its imports: an instant answer
        raise InputError(f"{path}: no such file or folder")
    from fuzzer.commands.progress import sandbox_activity
    from fuzzer.reduce.command_check import default_parallel

    # with --check, the validity gate of parallel checks runs side by side as well
    with execution.sandbox(default_parallel() if check is not None else 1) as sandbox, \
            sandbox_activity(sandbox, f"reducing {path.name} (at most {time_limit:g} s)"):
        if check is not None:
            summary = _reduce_with_command(path, check, fail_regex, artifacts, min_good,
                                           out, time_limit, execution.timeout, sandbox)
        elif path.is_dir():
            summary = _reduce_bundle(path, time_limit, sandbox)
        else:
            adapter, config = target.resolve()
            case = _model_case(path, adapter.name, config, inputs.seed, inputs.shapes())
            summary = _reduce_model(path, out, case, time_limit, sandbox)
    if summary is None:
        console.print("the model does not fail: nothing to reduce")
        raise typer.Exit(1)
    console.print(summary)


def _reduce_with_command(path: Path, check: str, fail_regex: str | None,
                         artifacts: Path | None, min_good: Path | None, out: Path | None,
                         time_limit: float, timeout: float, sandbox: Any) -> str | None:
    import re

    import onnx

    from fuzzer.modelio.load import load_model
    from fuzzer.reduce.command_check import CommandCheck
    from fuzzer.reduce.predicate import Budget, sandboxed_validator
    from fuzzer.reduce.reducer import NotReproducible, reduce_model
    from fuzzer.reduce.values import record_sandboxed

    if path.is_dir():
        raise InputError(f"{path}: --check takes a model file, not a folder")
    model = load_model(path)
    # the checker and onnxruntime run in the sandbox's workers, never here
    try:
        predicate = CommandCheck(check, Budget(time_limit), fail_regex, artifacts,
                                 timeout, sandboxed_validator(sandbox))
    except (ValueError, re.error) as exc:
        raise InputError(f"--check/--fail-regex: {exc}") from None
    try:
        reduction = reduce_model(model, None, predicate,
                                 record_sandboxed(sandbox, model, None),
                                 lambda m, f: record_sandboxed(sandbox, m, f))
    except NotReproducible:
        return None
    finally:
        predicate.close()  # speculative checks still running may yet set min_good
    out = out or path.with_suffix(".reduced.onnx")
    onnx.save(reduction.built.model, out)
    if min_good is not None and predicate.min_good is not None:
        onnx.save(predicate.min_good.model, min_good)
    return _summary(reduction, out)


def _model_case(path: Path, target: str, config: dict[str, Any], seed: int,
                shapes: dict[str, list[int]] | None) -> Any:
    """The test case of a model file (loaded safely)."""
    from fuzzer.execution.case import TestCase
    from fuzzer.modelio.load import load_model

    model = load_model(path)
    return TestCase(target, config, {"kind": "file", "path": str(path.resolve())},
                    model_bytes=model.SerializeToString(), input_seed=seed,
                    input_shapes=shapes)


def _reduce_model(path: Path, out: Path | None, case: Any, time_limit: float,
                  sandbox: Any) -> str | None:
    from fuzzer.modelio.graphs import node_count
    from fuzzer.reduce import reduce_finding
    from fuzzer.store.npz import npz_bytes

    result = sandbox.run(case)
    if result.unusable:
        raise InputError(f"{path}: the original model is unusable ({result.unusable})")
    if not result.findings:
        return None
    finding = result.findings[0]
    minimized = reduce_finding(sandbox, case, result, finding, None, time_limit, asked=True)
    if minimized is None or not minimized.reduced:
        return f"{finding.symptom}: could not reduce {path} further"
    out = out or path.with_suffix(".reduced.onnx")
    out.write_bytes(minimized.model)
    out.with_suffix(".inputs.npz").write_bytes(npz_bytes(minimized.feeds))
    nodes = node_count(minimized.model)
    return (f"{finding.symptom}: {node_count(case.model_bytes)} -> {nodes} nodes in "
            f"{minimized.seconds:.1f} s ({minimized.runs} runs) -> {out}")


def _reduce_bundle(folder: Path, time_limit: float, sandbox: Any) -> str | None:

    from fuzzer.execution.case import Artifacts
    from fuzzer.handling.bundle import bundle_files
    from fuzzer.modelio.graphs import node_count
    from fuzzer.reduce import reduce_finding
    from fuzzer.store.case import bundle_case
    from fuzzer.store.folder import BundleStore
    from fuzzer.store.meta import BundleMeta, meta_problem
    from fuzzer.targets import cli_target, require_passes

    store = BundleStore(folder.resolve().parent)
    bid = folder.resolve().name
    if not store.exists(bid):
        raise InputError(f"{folder}: not a bundle (no meta.json)")
    try:
        meta = store.meta(bid)
    except (OSError, ValueError) as exc:
        raise InputError(f"{folder}: damaged bundle ({meta_problem(exc)})") from None
    try:
        case = bundle_case(folder, meta)
        original_bytes = (folder / "original.onnx").read_bytes()
    except (OSError, ValueError) as exc:
        raise InputError(f"{folder}: incomplete bundle ({exc})") from None
    adapter = cli_target(case.target)
    require_passes(adapter, adapter.passes_of(case.config))
    model_bytes, feeds = case.model_bytes, case.feeds
    result = sandbox.run(case)
    finding = result.findings[0] if result.findings else None
    if finding is None or finding.symptom != meta.symptom:
        return None
    minimized = reduce_finding(sandbox, case, result, finding, meta.responsible_passes,
                               time_limit, asked=True, culprit=meta.breaking_pass)
    if minimized is None:
        return (f"{bid}: not reduced ({node_count(model_bytes)} nodes; the time limit came "
                "before a smaller model, or the finding did not show in the reduction)")
    if not minimized.reduced:
        def record_minimal(current: BundleMeta) -> None:
            current.nodes.minimal = True

        store.update(bid, record_minimal)
        return f"{bid}: already minimal ({node_count(model_bytes)} nodes)"
    nodes = meta.nodes.minimized = node_count(minimized.model)
    files = bundle_files(meta, Artifacts(original_bytes, None, feeds), minimized,
                         sandbox.timeout)
    files = {k: v for k, v in files.items() if k not in ("original.onnx", "meta.json")}
    stale = tuple(n for n in ("optimized.onnx", "expected.npz", "actual.npz") if n not in files)
    store.replace_files(bid, files, remove=stale)

    def record_nodes(current: BundleMeta) -> None:
        current.nodes.minimized = nodes

    store.update(bid, record_nodes)
    return (f"{bid}: {node_count(model_bytes)} -> {nodes} nodes in "
            f"{minimized.seconds:.1f} s ({minimized.runs} runs)")


def _summary(reduction: Any, out: Path) -> str:
    before, after = reduction.nodes
    status = "" if reduction.complete else " (time limit reached)"
    return (f"{before} -> {after} nodes in {reduction.seconds:.1f} s ({reduction.runs} "
            f"checks){status} -> {out}")


COMMAND = Command("reduce", reduce)
