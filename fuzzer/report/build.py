"""``optfuzz report``: write report.md, the before/after picture and the attachment zip of a
bundle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.report.attachment import write_attachment
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.picture import render_side_by_side
from fuzzer.report.repro import render_repro, repro_context
from fuzzer.store.folder import write_atomic
from fuzzer.store.meta import BundleMeta

PICTURE = "graph.png"
REPORT = "report.md"


@dataclass
class ReportFiles:
    """Paths written by :func:`write_report`."""

    report: Path
    picture: Path
    attachment: Path


def _load(path: Path) -> Any | None:
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


def _picture(bundle: Path, meta: BundleMeta, out: Path) -> Path:
    model = _load(bundle / "model.onnx")
    if model is None:
        raise FileNotFoundError(bundle / "model.onnx")
    optimized = _load(bundle / "optimized.onnx")
    target = meta.target
    passes = meta.passes_shown()
    shown = ", ".join(passes[:3]) + (f" +{len(passes) - 3}" if len(passes) > 3 else "")
    right = f"optimized by {target.name} {target.version}"
    if optimized is not None:
        right += f" ({len(optimized.graph.node)} nodes)"
    return render_side_by_side(
        model, optimized, out, f"model.onnx ({len(model.graph.node)} nodes)",
        f"{right}\npasses: {shown or 'default'}",
        missing_reason=f"no optimized model ({meta.symptom}): {meta.message}")


def write_report(bundle: Path, meta: BundleMeta, out: Path) -> ReportFiles:
    """Write ``report.md``, ``graph.png`` and ``<bundle id>.zip`` into ``out`` for the
    bundle folder ``bundle`` with metadata ``meta``.

    Raises:
        FileNotFoundError: the bundle lacks model.onnx or inputs.npz.
        ValueError: model.onnx or optimized.onnx is not an ONNX model.
        KeyError: meta names an unknown target.
    """
    out.mkdir(parents=True, exist_ok=True)
    picture = _picture(bundle, meta, out / PICTURE)
    repro_file = bundle / "repro.py"
    repro = repro_file.read_text() if repro_file.is_file() else \
        render_repro(timeout=30.0, **repro_context(meta))
    attachment = write_attachment(bundle, repro, out / f"{meta.id}.zip")
    text = render_issue_draft(meta, repro, folder=bundle, picture=picture.name,
                              attachment=attachment.name)
    report = out / REPORT
    write_atomic(report, text.encode())
    return ReportFiles(report, picture, attachment)
