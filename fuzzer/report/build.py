"""``optfuzz report``: write report.md, the before/after picture and the attachment zip of a
bundle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.report.attachment import write_attachment
from fuzzer.report.issue_draft import render_issue_draft
from fuzzer.report.picture import render_side_by_side
from fuzzer.report.short_repro import render_short_repro
from fuzzer.store.folder import write_atomic

PICTURE = "graph.png"
REPORT = "report.md"


@dataclass
class ReportFiles:
    """Paths written by :func:`write_report`."""

    report: Path
    picture: Path
    attachment: Path


def _load(path: Path) -> Any | None:
    import onnx

    if not path.is_file():
        return None
    return onnx.load(str(path), load_external_data=False)


def _picture(bundle: Path, meta: dict[str, Any], out: Path) -> Path:
    model = _load(bundle / "model.onnx")
    if model is None:
        raise FileNotFoundError(bundle / "model.onnx")
    optimized = _load(bundle / "optimized.onnx")
    target = meta["target"]
    passes = meta.get("responsible_passes") or target["config"].get("passes") or []
    shown = ", ".join(passes[:3]) + (f" +{len(passes) - 3}" if len(passes) > 3 else "")
    right = f"optimized by {target['name']} {target['version']}"
    if optimized is not None:
        right += f" ({len(optimized.graph.node)} nodes)"
    return render_side_by_side(
        model, optimized, out, f"model.onnx ({len(model.graph.node)} nodes)",
        f"{right}\npasses: {shown or 'default'}",
        missing_reason=f"no optimized model ({meta['symptom']}): {meta['message']}")


def write_report(bundle: Path, meta: dict[str, Any], out: Path) -> ReportFiles:
    """Write ``report.md``, ``graph.png`` and ``<bundle id>.zip`` into ``out`` for the
    bundle folder ``bundle`` with meta.json dict ``meta``.

    Raises:
        FileNotFoundError: the bundle lacks model.onnx or inputs.npz.
        KeyError: meta lacks schema 1 fields or names an unknown target.
    """
    out.mkdir(parents=True, exist_ok=True)
    picture = _picture(bundle, meta, out / PICTURE)
    attachment = write_attachment(bundle, render_short_repro(meta), out / f"{meta['id']}.zip")
    repro = (bundle / "repro.py").read_text() if (bundle / "repro.py").is_file() else None
    text = render_issue_draft(meta, repro, folder=bundle, picture=picture.name,
                              attachment=attachment.name)
    report = out / REPORT
    write_atomic(report, text.encode())
    return ReportFiles(report, picture, attachment)
