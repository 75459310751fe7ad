"""report.md of a bundle: an issue draft for the upstream project, the way maintainers ask
for them: a title naming the pass and the symptom, versions, a short standalone repro inline,
expected vs actual, the picture of the graph before and after, and what to attach.

``render_issue_draft(meta, repro)`` alone (as the campaign calls it when a bundle is created)
gives the text parts; ``optfuzz report`` adds the bundle folder (for expected.npz /
actual.npz), the picture and the attachment's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzzer.report.expected_actual import expected_actual_section
from fuzzer.report.short_repro import render_short_repro
from fuzzer.report.symptoms import symptom_text

MAX_PASSES_IN_TITLE = 3


def pass_phrase(meta: dict[str, Any]) -> str:
    """The pass part of the title: the responsible pass(es), or the configured pass list
    marked as not localized."""
    responsible = meta.get("responsible_passes")
    passes = list(responsible or meta["target"]["config"].get("passes") or [])
    shown = ", ".join(passes[:MAX_PASSES_IN_TITLE])
    if len(passes) > MAX_PASSES_IN_TITLE:
        shown += f" (+{len(passes) - MAX_PASSES_IN_TITLE} more)"
    if not passes:
        return "the default passes"
    if responsible is None:
        return f"pass list [{shown}]"
    return shown


def issue_title(meta: dict[str, Any]) -> str:
    """``<target>: <pass(es)> <what goes wrong> (<symptom>)``."""
    return (f"{meta['target']['name']}: {pass_phrase(meta)} "
            f"{symptom_text(meta['symptom']).title} ({meta['symptom']})")


def _versions(meta: dict[str, Any]) -> str:
    target = meta["target"]
    rows = [(target["name"], target["version"]), *meta.get("versions", {}).items()]
    return "\n".join(["| package | version |", "| --- | --- |",
                      *(f"| {name} | {version} |" for name, version in rows)])


def _details(meta: dict[str, Any]) -> str:
    source = meta.get("source", {})
    origin = ", ".join(f"{k}={v}" for k, v in source.items() if k != "path")
    nodes = meta.get("nodes", {})
    return "\n".join([
        f"- configuration: `{meta['target']['config']}`",
        f"- signature: `{meta['signature']}`",
        f"- found by optfuzz ({origin or 'unknown source'}); {meta.get('hits', 1)} hit(s) "
        f"between {meta['first_seen']} and {meta['last_seen']}",
        f"- reduced from {nodes.get('original', '?')} to {nodes.get('minimized', '?')} nodes",
    ])


def render_issue_draft(meta: dict[str, Any], repro: str | None = None, *,
                       folder: Path | None = None, picture: str | None = None,
                       attachment: str | None = None) -> str:
    """The markdown issue draft of a bundle.

    Args:
        meta: the bundle's meta.json (schema 1) dict.
        repro: text of the bundle's own repro.py (the isolating script that ships in the
            bundle); the draft inlines the short script of
            :func:`fuzzer.report.short_repro.render_short_repro` instead and names this one.
        folder: the bundle folder, for expected.npz / actual.npz (output tables).
        picture: file name of the before/after picture, relative to report.md.
        attachment: file name of the zip to attach, relative to report.md.

    Raises:
        KeyError: meta lacks a schema 1 field or names an unknown target.
    """
    target = meta["target"]
    nodes = meta.get("nodes", {}).get("minimized", "?")
    attach = (f"`{attachment}` (model.onnx, inputs.npz, repro.py)" if attachment
              else "`model.onnx`, `inputs.npz` and the script below as `repro.py`")
    parts = [
        f"# {issue_title(meta)}\n",
        f"Running {pass_phrase(meta)} of {target['name']} {target['version']} on the "
        f"attached {nodes}-node model {symptom_text(meta['symptom']).title}.\n",
        f"## Versions\n\n{_versions(meta)}\n",
        f"## Reproduce\n\nAttach {attach}. Run the script next to model.onnx and inputs.npz: "
        "it exits 1 while the bug reproduces and prints `not reproduced` once it is fixed.\n",
        f"```python\n{render_short_repro(meta)}```\n",
        f"## Expected and actual\n\n{expected_actual_section(meta, folder)}",
    ]
    if picture:
        parts.append(
            "## Graph before and after\n\n"
            f"![minimized model (left) and its optimized form (right)]({picture})\n\n"
            "Left: the minimized model; right: the target's output. Dashed red: nodes the "
            "target removed or rewrote; solid red: nodes it added; edges carry "
            "dtype[shape].\n")
    parts.append(f"## Details\n\n{_details(meta)}\n")
    if repro is not None:
        parts.append("optfuzz's own `repro.py` in the bundle runs the same test in a child "
                     "process (it also reports crashes and hangs) with the same exit codes.\n")
    return "\n".join(parts)
