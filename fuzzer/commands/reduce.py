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

from fuzzer.errors import InputError


def register(app: typer.Typer) -> None:
    """Add the ``reduce`` command to ``app``."""

    @app.command()
    def reduce(
        path: Path = typer.Argument(..., help="An .onnx file or a bundle folder."),
        time_limit: float = typer.Option(300.0, "--time-limit", help="Seconds at most."),
        out: Path = typer.Option(None, "-o", "--output", help="Minimized model (model mode)."),
        check: str = typer.Option(None, "--check", help="External check command; the "
                                  "candidate's path is appended (Polygraphy style)."),
        fail_regex: str = typer.Option(None, "--fail-regex", help="With --check: fail when "
                                       "stdout/stderr matches instead of the exit status."),
        artifacts: Path = typer.Option(None, "--artifacts", help="With --check: keep every "
                                       "candidate in DIR/good and DIR/bad."),
        min_good: Path = typer.Option(None, "--min-good", help="With --check: save the "
                                      "smallest passing candidate here."),
        target: str = typer.Option("onnxoptimizer", help="System under test (model mode)."),
        passes: str = typer.Option(None, help="Comma list of passes (model mode)."),
        seed: int = typer.Option(0, help="Seed of synthesized inputs (model mode)."),
        timeout: float = typer.Option(30.0, help="Per-run timeout, seconds."),
    ) -> None:
        """Shrink a failing model (or a bundle's model) to a minimal repro."""
        from rich.console import Console

        console = Console(highlight=False)
        if time_limit <= 0:
            raise InputError("--time-limit must be positive")
        if check is not None:
            summary = _reduce_with_command(path, check, fail_regex, artifacts, min_good, out,
                                           time_limit, timeout)
        elif path.is_dir():
            summary = _reduce_bundle(path, time_limit, timeout)
        else:
            summary = _reduce_model(path, out, target, passes, seed, time_limit, timeout)
        if summary is None:
            console.print("the model does not fail: nothing to reduce")
            raise typer.Exit(1)
        console.print(summary)


def _reduce_with_command(path: Path, check: str, fail_regex: str | None,
                         artifacts: Path | None, min_good: Path | None, out: Path | None,
                         time_limit: float, timeout: float) -> str | None:
    import re

    import onnx

    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.modelio.load import load_model
    from fuzzer.reduce.command_check import CommandCheck
    from fuzzer.reduce.predicate import Budget, sandboxed_validator
    from fuzzer.reduce.reducer import NotReproducible, reduce_model
    from fuzzer.reduce.values import record_sandboxed

    if path.is_dir():
        raise InputError(f"{path}: --check takes a model file, not a folder")
    model = load_model(path)
    with Sandbox(jobs=1, timeout=timeout) as sandbox:  # checker and onnxruntime run there
        try:
            predicate = CommandCheck(check, Budget(time_limit), fail_regex, artifacts,
                                     timeout, sandboxed_validator(sandbox))
        except (ValueError, re.error) as exc:
            raise InputError(f"--check/--fail-regex: {exc}") from None
        try:
            reduction = reduce_model(model, None, predicate,
                                     record_sandboxed(sandbox, model, None))
        except NotReproducible:
            return None
    out = out or path.with_suffix(".reduced.onnx")
    onnx.save(reduction.built.model, out)
    if min_good is not None and predicate.min_good is not None:
        onnx.save(predicate.min_good.model, min_good)
    return _summary(reduction, out)


def _reduce_model(path: Path, out: Path | None, target: str, passes: str | None, seed: int,
                  time_limit: float, timeout: float) -> str | None:
    import onnx

    from fuzzer.commands.fuzz import parse_list
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.findings.signature import make_signature
    from fuzzer.modelio.load import load_model
    from fuzzer.reduce import reduce_finding
    from fuzzer.store.npz import npz_bytes

    config = _config(target, parse_list(passes))
    model = load_model(path)
    case = TestCase(target, config, {"kind": "file", "path": str(path.resolve())},
                    model_bytes=model.SerializeToString(), input_seed=seed)
    with Sandbox(jobs=1, timeout=timeout) as sandbox:
        result = sandbox.run(case)
        if result.unusable:
            raise InputError(f"{path}: the original model is unusable ({result.unusable})")
        if not result.findings:
            return None
        finding = result.findings[0]
        signature = make_signature(target, config.get("passes"), finding.symptom,
                                   finding.message)
        minimized = reduce_finding(sandbox, case, result, finding, signature, time_limit)
    if minimized is None:
        return f"{finding.symptom}: could not reduce {path} further"
    out = out or path.with_suffix(".reduced.onnx")
    out.write_bytes(minimized.model)
    out.with_suffix(".inputs.npz").write_bytes(npz_bytes(minimized.feeds))
    nodes = len(onnx.load_from_string(minimized.model).graph.node)
    return (f"{finding.symptom}: {len(model.graph.node)} -> {nodes} nodes in "
            f"{minimized.seconds:.1f} s ({minimized.runs} runs) -> {out}")


def _reduce_bundle(folder: Path, time_limit: float, timeout: float) -> str | None:

    from fuzzer.campaign.record import bundle_files
    from fuzzer.execution.case import Artifacts
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.modelio.graphs import node_count
    from fuzzer.reduce import reduce_finding
    from fuzzer.store.case import bundle_case
    from fuzzer.store.folder import BundleStore

    store = BundleStore(folder.resolve().parent)
    bid = folder.resolve().name
    if not store.exists(bid):
        raise InputError(f"{folder}: not a bundle (no meta.json)")
    meta = store.meta(bid)
    try:
        case = bundle_case(folder, meta)
        original_bytes = (folder / "original.onnx").read_bytes()
    except (OSError, ValueError) as exc:
        raise InputError(f"{folder}: incomplete bundle ({exc})") from None
    _config(case.target, case.config.get("passes"))
    model_bytes, feeds = case.model_bytes, case.feeds
    with Sandbox(jobs=1, timeout=timeout) as sandbox:
        result = sandbox.run(case)
        finding = result.findings[0] if result.findings else None
        if finding is None or finding.symptom != meta["symptom"]:
            return None
        minimized = reduce_finding(sandbox, case, result, finding, meta["signature"],
                                   time_limit)
    if minimized is None:
        return f"{bid}: already minimal ({node_count(model_bytes)} nodes)"
    meta["nodes"]["minimized"] = node_count(minimized.model)
    files = bundle_files(meta, Artifacts(original_bytes, None, feeds), minimized, timeout)
    files = {k: v for k, v in files.items() if k not in ("original.onnx", "meta.json")}
    stale = tuple(n for n in ("optimized.onnx", "expected.npz", "actual.npz") if n not in files)
    store.replace_files(bid, files, remove=stale)
    store.update(bid, lambda m: dict(m, nodes=dict(m["nodes"], minimized=meta["nodes"][
        "minimized"])))
    return (f"{bid}: {node_count(model_bytes)} -> {meta['nodes']['minimized']} nodes in "
            f"{minimized.seconds:.1f} s ({minimized.runs} runs)")


def _config(target: str, passes: list[str] | None) -> dict[str, Any]:
    """The target's configuration with ``passes`` (checked against the target's list)."""
    from fuzzer.targets import cli_target, require_passes

    adapter = cli_target(target)
    config = adapter.default_config()
    if passes:
        require_passes(adapter, passes)
        config["passes"] = list(passes)
    return config


def _summary(reduction: Any, out: Path) -> str:
    before, after = reduction.nodes
    status = "" if reduction.complete else " (time limit reached)"
    return (f"{before} -> {after} nodes in {reduction.seconds:.1f} s ({reduction.runs} "
            f"checks){status} -> {out}")
