"""``optfuzz report``: run the attached model once more, then write report.md, the
before/after picture, repro.py and the attachment zip of a bundle.

"Actual" in report.md comes from that run: model.onnx with inputs.npz through the
configuration repro.py runs (:func:`fuzzer.report.repro.repro_context`: the minimal pass list
where the bundle is localized), in a :class:`fuzzer.execution.sandbox.Sandbox`, with the
versions installed now; never from the model as first found.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fuzzer.modelio.graphs import count_nodes
from fuzzer.report.attachment import write_attachment
from fuzzer.report.expected_actual import Observation
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.picture import render_side_by_side
from fuzzer.report.repro import render_repro, repro_context
from fuzzer.store.case import bundle_case
from fuzzer.store.folder import write_atomic
from fuzzer.store.meta import BundleMeta

PICTURE = "graph.png"
REPORT = "report.md"
REPRO = "repro.py"
MAX_PASSES_IN_PICTURE = 3


@dataclass
class ReportFiles:
    """Paths written by :func:`write_report`, and the run "Actual" was worded from."""

    report: Path
    picture: Path
    attachment: Path
    observed: Observation


def load_model(path: Path) -> Any | None:
    """The ModelProto at ``path`` (external data not loaded), None where there is no file.

    Raises:
        ValueError: the file is not a protobuf ModelProto (truncated, another format).
    """
    import onnx
    from google.protobuf.message import DecodeError

    if not path.is_file():
        return None
    try:
        return onnx.load(str(path), load_external_data=False)
    except DecodeError as exc:
        raise ValueError(f"{path.name} is not an ONNX model ({exc})") from None


def file_node_count(path: Path) -> int | None:
    """Nodes of the model file at ``path``, subgraphs included; None where it is missing or
    not a model."""
    try:
        model = load_model(path)
    except (OSError, ValueError):
        return None
    return None if model is None else count_nodes(model.graph)


def observe(bundle: Path, meta: BundleMeta, sandbox: Any) -> Observation:
    """Run the bundle's model.onnx with inputs.npz through the configuration of
    :func:`fuzzer.report.repro.repro_context` in ``sandbox`` (a
    :class:`fuzzer.execution.sandbox.Sandbox`), keeping the run's outputs and optimized
    model.

    Raises:
        OSError: model.onnx or inputs.npz is missing or unreadable.
        ValueError: inputs.npz is not an npz archive.
        KeyError: meta names an unknown target.
    """
    from fuzzer.execution.sandbox import SandboxError
    from fuzzer.targets import get_target, offers_pass

    try:
        case = bundle_case(bundle, meta, repro_context(meta)["config"])
    except ValueError as exc:
        raise ValueError(f"inputs.npz is not readable ({exc})") from None
    case = replace(case, keep=True)  # the outputs and the optimized model, even when clean
    target = get_target(meta.target.name)
    versions = f"{target.name} {target.version()}"
    offered = offers_pass(target)
    missing = [p for p in case.config.get("passes") or [] if not offered(p)]
    if missing:
        return Observation(versions, problem=f"the installed target lacks the pass(es) "
                                             f"{', '.join(missing)}")
    try:
        result = sandbox.run(case)
    except SandboxError as exc:
        return Observation(versions, problem=str(exc))
    return Observation.of_result(result, versions)


def _picture(model: Any, optimized: Any, meta: BundleMeta, versions: str,
             out: Path) -> Path:
    """The before/after picture; ``versions`` names the target that made ``optimized``."""
    passes = repro_context(meta)["config"].get("passes") or []
    shown = ", ".join(passes[:MAX_PASSES_IN_PICTURE])
    if len(passes) > MAX_PASSES_IN_PICTURE:
        shown += f" +{len(passes) - MAX_PASSES_IN_PICTURE}"
    right = f"optimized by {versions}"
    if optimized is not None:
        right += f" ({count_nodes(optimized.graph)} nodes)"
    return render_side_by_side(
        model, optimized, out, f"model.onnx ({count_nodes(model.graph)} nodes)",
        f"{right}\npasses: {shown or 'default'}",
        missing_reason=f"no optimized model ({meta.symptom}): {meta.message}")


def _optimized(bundle: Path, observed: Observation) -> Any | None:
    """The optimized model of the run, else the bundle's optimized.onnx, else None."""
    import onnx
    from google.protobuf.message import DecodeError

    if observed.optimized is not None:
        try:
            return onnx.load_from_string(observed.optimized)
        except DecodeError:
            pass
    return load_model(bundle / "optimized.onnx")


def write_report(bundle: Path, meta: BundleMeta, out: Path, sandbox: Any,
                 timeout: float = 30.0) -> ReportFiles:
    """Run the bundle folder ``bundle`` (metadata ``meta``) once in ``sandbox``
    (:func:`observe`), then write ``report.md``, ``graph.png``, ``repro.py`` (the minimal
    pass list where localized; ``timeout`` seconds before its child counts as hung) and
    ``<bundle id>.zip`` into ``out``.

    Raises:
        FileNotFoundError: the bundle lacks model.onnx or inputs.npz.
        ValueError: model.onnx or optimized.onnx is not an ONNX model, or inputs.npz is not
            an npz archive.
        KeyError: meta names an unknown target.
    """
    model = load_model(bundle / "model.onnx")
    if model is None:
        raise FileNotFoundError(bundle / "model.onnx")
    if not (bundle / "inputs.npz").is_file():
        raise FileNotFoundError(bundle / "inputs.npz")
    observed = observe(bundle, meta, sandbox)
    out.mkdir(parents=True, exist_ok=True)
    optimized = _optimized(bundle, observed)
    made_by = observed.versions if observed.optimized is not None else \
        f"{meta.target.name} {meta.target.version}"
    picture = _picture(model, optimized, meta, made_by, out / PICTURE)
    repro = render_repro(timeout=timeout, **repro_context(meta))
    write_atomic(out / REPRO, repro.encode())
    attachment = write_attachment(bundle, repro, out / f"{meta.id}.zip")
    original = file_node_count(bundle / "original.onnx")
    nodes = (meta.nodes.original if original is None else original,
             count_nodes(model.graph))
    text = render_issue_draft(meta, repro, folder=bundle, picture=picture.name,
                              attachment=attachment.name, observed=observed, model=model,
                              nodes=nodes, optimized=optimized)
    report = out / REPORT
    write_atomic(report, text.encode())
    return ReportFiles(report, picture, attachment, observed)
