"""report.md of a bundle: an issue draft for the upstream project, the way maintainers ask
for them: a title naming the pass and the symptom, versions, a short standalone repro inline,
expected vs actual, the picture of the graph before and after, and what to attach.

``render_issue_draft(meta, repro)`` alone (as the campaign calls it when a bundle is created)
gives the text parts; ``optfuzz report`` adds the bundle folder (for expected.npz /
actual.npz), the picture and the attachment's name.
"""

from __future__ import annotations

from pathlib import Path

from fuzzer.report.expected_actual import expected_actual_section
from fuzzer.report.repro import trigger_snippet
from fuzzer.store.meta import BundleMeta
from oracles import symptom as symptom_record

MAX_PASSES_IN_TITLE = 3


def pass_phrase(meta: BundleMeta) -> str:
    """The pass part of the title: the responsible pass(es), or the configured pass list
    marked as not localized."""
    passes = meta.passes_shown()
    shown = ", ".join(passes[:MAX_PASSES_IN_TITLE])
    if len(passes) > MAX_PASSES_IN_TITLE:
        shown += f" (+{len(passes) - MAX_PASSES_IN_TITLE} more)"
    if not passes:
        return "the default passes"
    if not meta.localized:
        return f"pass list [{shown}]"
    return shown


def issue_title(meta: BundleMeta) -> str:
    """``<target>: <pass(es)> <what goes wrong> (<symptom>)``."""
    return (f"{meta.target.name}: {pass_phrase(meta)} "
            f"{symptom_record(meta.symptom).title} ({meta.symptom})")


def _versions(meta: BundleMeta) -> str:
    rows = [(meta.target.name, meta.target.version), *meta.versions.items()]
    return "\n".join(["| package | version |", "| --- | --- |",
                      *(f"| {name} | {version} |" for name, version in rows)])


def _details(meta: BundleMeta) -> str:
    origin = ", ".join(f"{k}={v}" for k, v in meta.source.items() if k != "path")
    return "\n".join([
        f"- configuration: `{meta.target.config}`",
        f"- signature: `{meta.signature}`",
        f"- found by optfuzz ({origin or 'unknown source'}); {meta.hits} hit(s) "
        f"between {meta.first_seen} and {meta.last_seen}",
        f"- reduced from {meta.nodes.original} to {meta.nodes.minimized} nodes",
    ])


def render_issue_draft(meta: BundleMeta, repro: str | None = None, *,
                       folder: Path | None = None, picture: str | None = None,
                       attachment: str | None = None) -> str:
    """The markdown issue draft of a bundle.

    Args:
        meta: the bundle's meta.
        repro: text of the bundle's own repro.py (the script that ships in the bundle and
            in the attachment); the draft shows the target call it makes
            (:func:`fuzzer.report.repro.trigger_snippet`).
        folder: the bundle folder, for expected.npz / actual.npz (output tables).
        picture: file name of the before/after picture, relative to report.md.
        attachment: file name of the zip to attach, relative to report.md.

    Raises:
        KeyError: meta names an unknown target.
    """
    target = meta.target
    nodes = meta.nodes.minimized
    attach = (f"`{attachment}` (model.onnx, inputs.npz, repro.py)" if attachment
              else "`model.onnx`, `inputs.npz` and `repro.py`")
    parts = [
        f"# {issue_title(meta)}\n",
        f"Running {pass_phrase(meta)} of {target.name} {target.version} on the "
        f"attached {nodes}-node model {symptom_record(meta.symptom).title}.\n",
        f"## Versions\n\n{_versions(meta)}\n",
        f"## Reproduce\n\nAttach {attach}. `python repro.py` next to model.onnx and "
        "inputs.npz runs the test in a child process (crashes and hangs included), exits 1 "
        "while the bug reproduces and 0 once it is fixed. The call it makes:\n",
        f"```python\n{trigger_snippet(meta)}```\n",
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
    return "\n".join(parts)
