"""report.md again from a bundle's current meta.json, without running anything.

A campaign counts hits, symptoms and ``last_seen`` in meta.json long after it wrote the
bundle's report.md; :func:`refresh_report` words the draft again from the meta.json and the
files in the folder (model.onnx, optimized.onnx, expected.npz / actual.npz) so the two agree.
It starts no sandbox and no onnxruntime session: what an earlier run of the attached model
worded (the "Actual" paragraphs, the note that the model no longer reproduces, the optimized
model of that run) is kept verbatim from the report it replaces (:class:`EarlierRun`), and so
are the picture and the attachment it names where their files are still in the folder.

It is cheap (onnx and numpy, no onnxruntime; the target's adapter is imported for the words
of its configuration), writes atomically, and never raises: a damaged folder (no or an
unreadable meta.json or model.onnx, an unknown target) leaves report.md as it was and
returns False.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fuzzer.modelio.load import parse_model
from fuzzer.report.expected_actual import RECORDED_ONLY
from fuzzer.report.issue_draft import OPTIMIZED_HEADING, EarlierRun, render_issue_draft
from fuzzer.report.markdown import split_sections
from fuzzer.store.folder import BundleStore, write_atomic
from fuzzer.store.meta import META_FILE, BundleMeta, read_meta
from oracles.base import count_nodes

REPORT = "report.md"
_NOTE = "> **Note:**"
_PICTURE = re.compile(r"\]\((?P<name>[^)\s]+)\)")
_ATTACHMENT = re.compile(r"^Attach `(?P<name>[^`]+\.zip)`", re.M)
_ORIGINAL = re.compile(r"reduced from (?P<count>\d+) to ")


@dataclass
class PreviousReport:
    """What a refresh keeps of the report.md it replaces.

    Attributes:
        run: the parts a run of the attached model worded (:class:`EarlierRun`).
        picture: the before/after picture's file name, where the report showed one and the
            file is still in the folder.
        attachment: the zip's file name, where the report named one and it is still there.
        original_nodes: the node count of the model as first found that the report gave
            (subgraphs included; meta.json counts the main graph only), or None.
    """

    run: EarlierRun = field(default_factory=EarlierRun)
    picture: str | None = None
    attachment: str | None = None
    original_nodes: int | None = None


def _existing(folder: Path, name: str | None) -> str | None:
    """``name`` where it names a file in ``folder``, else None."""
    if not name or name.startswith(("/", "http:", "https:")) or ".." in Path(name).parts:
        return None
    return name if (folder / name).is_file() else None


def previous_report(text: str, folder: Path) -> PreviousReport:
    """Read back from the report.md text ``text`` of the bundle ``folder`` the parts a
    refresh keeps (:class:`PreviousReport`). "Actual" (and the optimized model and the note
    with it) is kept only where a run worded it: one worded from meta.json alone carries
    :data:`fuzzer.report.expected_actual.RECORDED_ONLY` and is worded again."""
    prelude, sections = split_sections(text)
    by_heading = {heading: body for heading, body in sections}
    previous = PreviousReport()
    actual = by_heading.get("## Expected and actual", "").strip("\n")
    if "**Actual:**" in actual and RECORDED_ONLY not in actual:
        note = next((p.strip("\n") for p in prelude.split("\n\n") if p.startswith(_NOTE)), None)
        optimized = next((f"{heading}\n{body}".rstrip("\n") for heading, body in sections
                          if heading.startswith(OPTIMIZED_HEADING)), None)
        previous.run = EarlierRun(note=note, actual=actual, optimized=optimized)
    picture = _PICTURE.search(by_heading.get("## Graph before and after", ""))
    previous.picture = _existing(folder, picture.group("name") if picture else None)
    attachment = _ATTACHMENT.search(by_heading.get("## Reproduce", ""))
    previous.attachment = _existing(folder, attachment.group("name") if attachment else None)
    original = _ORIGINAL.search(by_heading.get("## Details", ""))
    previous.original_nodes = int(original.group("count")) if original else None
    return previous


def refreshed_report(folder: Path, meta: BundleMeta | None = None) -> str:
    """The text of the bundle ``folder``'s report.md worded again from ``meta`` (default:
    the folder's meta.json) and its files, keeping what :func:`previous_report` reads back
    from the report.md there now. Runs nothing.

    Raises:
        OSError: meta.json or model.onnx is missing or unreadable.
        fuzzer.store.meta.MetaError: meta.json is not a valid meta.
        fuzzer.errors.InputError: model.onnx is not a model.
        KeyError: meta names an unknown target.
    """
    if meta is None:
        meta = read_meta(folder / META_FILE)
    model = parse_model((folder / "model.onnx").read_bytes(), "model.onnx")
    report = folder / REPORT
    text = report.read_text(errors="replace") if report.is_file() else ""
    previous = previous_report(text, folder)
    original = previous.original_nodes
    nodes = (meta.nodes.original if original is None else original, count_nodes(model.graph))
    return render_issue_draft(meta, folder=folder, picture=previous.picture,
                              attachment=previous.attachment, model=model, nodes=nodes,
                              earlier=previous.run)


def refresh_report(folder: Path, meta: BundleMeta | None = None) -> bool:
    """Write the bundle ``folder``'s report.md again from its current meta.json (or
    ``meta``, the record just written there) and files: hits, symptoms, last seen, culprit
    and damage as meta.json says now, without running the model (:func:`refreshed_report`).
    The file is replaced atomically, and only where its text changes.

    Returns True where report.md is now up to date, False where the folder is damaged (or
    the file cannot be written): report.md is then left as it was. Never raises.
    """
    try:
        text = refreshed_report(Path(folder), meta)
        report = Path(folder) / REPORT
        if not report.is_file() or report.read_text(errors="replace") != text:
            write_atomic(report, text.encode())
    except Exception:  # a damaged folder of any kind: its report stays as it was
        return False
    return True


def flush_and_refresh(store: BundleStore) -> list[str]:
    """Write ``store``'s batched hits (:meth:`fuzzer.store.folder.BundleStore.flush_hits`)
    and word each changed bundle's report.md again (:func:`refresh_report`), so that a
    report never says fewer hits or symptoms than its meta.json. Returns the ids of the
    bundles written.

    Raises:
        OSError: a meta.json cannot be written (the disk is full).
    """
    written = store.flush_hits()
    for bundle_id in written:
        refresh_report(store.path(bundle_id))
    return written
