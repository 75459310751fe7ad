"""The rich table of ``optfuzz triage``: one row per root cause (bundle), in the order of
:func:`fuzzer.triage.rows.reading_order`, and the lines under it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from fuzzer.triage.rows import TriageRow, merged_count

#: status -> (label, rich style).
STATUS_LOOK: dict[str, tuple[str, str]] = {
    "fails": ("still fails", "red"),
    "not-replayed": ("not replayed", "yellow"),
    "fixed": ("fixed", "green"),
    "changed": ("changed symptom", "yellow"),
    "unusable": ("unusable", "magenta"),
    "untestable": ("cannot test here", "cyan"),
    "unverified": ("unverified", "dim"),
}
#: maintainer's state -> rich style of its cell (unlisted: plain).
STATE_STYLE: dict[str, str] = {"regressed": "bold red", "open": "bold", "fixed": "green",
                               "duplicate": "dim", "invalid": "dim"}
MAX_PASSES_SHOWN = 3
MAX_TRIGGER_SHOWN = 36
MAX_MESSAGE_SHOWN = 60
UNREDUCED = "unreduced"
#: (pattern, replacement) applied in order to a message's first line before it is cut to
#: fit its column: onnxruntime's status prefix and boilerplate go, a source path keeps its
#: file name and line.
MESSAGE_NOISE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?:\w+: )?\[ONNXRuntimeError\] : \d+ : \w+ : "), ""),
    (re.compile(r"^Non-zero status code returned while running "), ""),
    (re.compile(r"(?:/[\w.+-]+)+/([\w.+-]+:\d+)"), r"\1"),
)


def _shorten(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_PASSES_SHOWN])
    if len(names) > MAX_PASSES_SHOWN:
        shown += f" +{len(names) - MAX_PASSES_SHOWN}"
    return shown


def pass_label(breaking: str | None, enabling: list[str] | None, passes: list[str],
               localized: bool) -> str:
    """``breaking + enabling, ...``; without a breaking pass, the responsible ``passes``,
    or ``(not localized)`` after the configured ones."""
    if breaking:
        others = [p for p in enabling or [] if p != breaking]
        return breaking + (f" + {_shorten(others)}" if others else "")
    shown = _shorten(passes)
    if not localized:
        shown = f"{shown or 'default'} (not localized)"
    return shown or "-"


def passes_label(row: TriageRow) -> str:
    """The pass column of ``row`` (:func:`pass_label`)."""
    return pass_label(row.breaking_pass, row.enabling_passes, row.passes, row.localized)


def cut(text: str | None, limit: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``limit`` characters (ending in
    ``...`` where cut); ``-`` where empty."""
    text = " ".join((text or "").split())
    if len(text) > limit:
        text = text[:limit - 3].rstrip() + "..."
    return text or "-"


def trigger_label(trigger: str | None) -> str:
    """``trigger`` cut to :data:`MAX_TRIGGER_SHOWN` characters; ``-`` where unknown."""
    return cut(trigger, MAX_TRIGGER_SHOWN)


def message_label(row: TriageRow) -> str:
    """The message column: the crash site the bundle is keyed by where it is a crash, else
    the first line of its message, without :data:`MESSAGE_NOISE`, cut to
    :data:`MAX_MESSAGE_SHOWN` characters."""
    lines = (row.site or row.message or "").strip().splitlines()
    text = lines[0] if lines else ""
    for pattern, replacement in MESSAGE_NOISE:
        text = pattern.sub(replacement, text)
    return cut(text, MAX_MESSAGE_SHOWN)


def one_line(text: str) -> Text:
    """``text`` as a cell that is cut with an ellipsis where its column is narrower."""
    return Text(text, no_wrap=True, overflow="ellipsis")


def status_cell(row: TriageRow) -> Text:
    """``new`` (bold) followed by the status label in its colour."""
    label, style = STATUS_LOOK.get(row.status, (row.status, ""))
    if row.status == "changed" and row.now_symptom:
        label += f" -> {row.now_symptom}"
    text = Text()
    if row.new:
        text.append("new ", style="bold cyan")
    text.append(label, style=style)
    return text


def state_cell(row: TriageRow) -> Text:
    """The maintainer's state of ``row`` with its argument, in its colour."""
    return Text(row.state_text, style=STATE_STYLE.get(row.state, ""))


def nodes_cell(row: TriageRow) -> Text:
    """``original -> minimized`` node counts, followed by :data:`UNREDUCED` (in yellow) for
    a bundle never reduced."""
    def num(n: int | None) -> str:
        return "?" if n is None else str(n)
    text = Text(f"{num(row.nodes_original)} -> {num(row.nodes_minimized)}")
    if row.unreduced:
        text.append(f" {UNREDUCED}", style="yellow")
    return text


def _hits(row: TriageRow) -> str:
    return str(row.hits) + (f" (+{row.new_hits})" if row.new_hits and not row.new else "")


#: (header, rich column options, cell of a row) of the table's columns, in order. The two
#: text columns are the ones that give up their width where the table is too wide: their
#: cells are cut short (:func:`one_line`), never wrapped.
COLUMNS: tuple[tuple[str, dict[str, Any], Callable[[TriageRow], Any]], ...] = (
    ("id", {"no_wrap": True}, lambda row: row.id),
    ("pass (+ enabling)", {"max_width": 44, "min_width": 12, "overflow": "fold"},
     passes_label),
    ("symptom", {"no_wrap": True}, lambda row: row.symptom),
    ("hits", {"justify": "right", "no_wrap": True}, _hits),
    ("variants", {"justify": "right", "no_wrap": True}, lambda row: str(row.variants)),
    ("nodes", {"justify": "right", "no_wrap": True}, lambda row: nodes_cell(row)),
    ("message / crash site", {"overflow": "ellipsis"},
     lambda row: one_line(message_label(row))),
    ("trigger", {"max_width": MAX_TRIGGER_SHOWN - 10, "overflow": "ellipsis"},
     lambda row: one_line(trigger_label(row.trigger))),
    ("status", {"no_wrap": True}, lambda row: status_cell(row)),
    ("state", {"max_width": 40, "min_width": 8, "overflow": "fold"},
     lambda row: state_cell(row)),
)
#: columns left out below :data:`FULL_WIDTH` characters (``--json`` keeps them), so that
#: the message column keeps room on a narrow terminal.
LEFT_OUT_WHEN_NARROW = frozenset({"trigger", "variants"})
FULL_WIDTH = 170


def triage_table(rows: list[TriageRow], title: str, width: int | None = None) -> Table:
    """A rich Table of ``rows`` (already in reading order); a target column only where the
    rows name more than one target; ``width`` (characters, None: any) below
    :data:`FULL_WIDTH` leaves out :data:`LEFT_OUT_WHEN_NARROW`."""
    columns = [c for c in COLUMNS
               if width is None or width >= FULL_WIDTH or c[0] not in LEFT_OUT_WHEN_NARROW]
    if len({row.target for row in rows}) > 1:
        columns.insert(0, ("target", {"no_wrap": True}, lambda row: row.target))
    table = Table(title=title, show_lines=False, header_style="bold")
    for header, options, _ in columns:
        table.add_column(header, **options)
    for row in rows:
        table.add_row(*(cell(row) for _, _, cell in columns))
    return table


def reduce_lines(rows: list[TriageRow], limit: int = 5) -> list[str]:
    """Lines under the table for the :data:`UNREDUCED` bundles: how many, and the command
    that reduces each (the first ``limit`` of them)."""
    unreduced = [row for row in rows if row.unreduced]
    if not unreduced:
        return []
    lines = [f"{len(unreduced)} bundle(s) {UNREDUCED} (model.onnx is the model as found)"
             + (": reduce with" if any(r.reduce_command for r in unreduced) else "")]
    commands = [row.reduce_command for row in unreduced if row.reduce_command]
    lines += [f"  {command}" for command in commands[:limit]]
    if len(commands) > limit:
        lines.append(f"  ... and {len(commands) - limit} more (optfuzz triage --json: "
                     "reduce_command)")
    return lines


def status_counts(rows: list[TriageRow]) -> str:
    """One line: how many root causes (bundles) there are, how many sightings were merged
    into them (variants and hits beyond the first), how many are new and how many have
    each status."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    parts = [f"{sum(r.new for r in rows)} new"] + [
        f"{n} {STATUS_LOOK.get(s, (s, ''))[0]}" for s, n in sorted(counts.items())]
    variants = sum(r.variants for r in rows)
    merged = merged_count(rows)
    return (f"{len(rows)} root cause(s), {merged} more finding(s) merged into them "
            f"({variants} variant(s), {merged - variants} repeat hit(s)): " + ", ".join(parts))
