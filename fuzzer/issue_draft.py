"""report.md of a bundle: an issue draft for the upstream project."""

from __future__ import annotations

from typing import Any


def render_issue_draft(meta: dict[str, Any], repro: str) -> str:
    """Markdown issue draft for a bundle's ``meta`` (meta.json schema 1) and repro text."""
    target = meta["target"]
    passes = meta.get("responsible_passes") or target["config"].get("passes") or []
    where = ", ".join(passes[:3]) + (" ..." if len(passes) > 3 else "")
    versions = "\n".join(f"- {k}: {v}" for k, v in
                         [(target["name"], target["version"]), *meta["versions"].items()])
    return (
        f"# {target['name']}: {meta['symptom']} in {where or 'default passes'}\n\n"
        f"**Symptom:** `{meta['symptom']}` at stage `{meta['stage']}`\n\n"
        f"**Message:** `{meta['message']}`\n\n"
        f"**Configuration:** `{target['config']}`\n\n"
        f"## Versions\n\n{versions}\n\n"
        "## Reproduce\n\nAttached: `model.onnx` "
        f"({meta['nodes']['minimized']} nodes), `inputs.npz`, `repro.py`. Run `python repro.py` "
        "in the folder: it exits 1 while the bug reproduces.\n\n"
        f"```python\n{repro}```\n"
    )
