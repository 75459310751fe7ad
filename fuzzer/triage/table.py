"""The rich table of ``optfuzz triage``: rows grouped by target, pass and symptom."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fuzzer.triage.rows import TriageRow

#: status -> (label, rich style).
STATUS_LOOK: dict[str, tuple[str, str]] = {
    "fails": ("still fails", "red"),
    "fixed": ("fixed", "green"),
    "changed": ("changed symptom", "yellow"),
    "unusable": ("unusable", "magenta"),
    "untestable": ("pass missing", "cyan"),
    "unverified": ("unverified", "dim"),
}
MAX_PASSES_SHOWN = 3


def passes_label(row: TriageRow) -> str:
    """The pass column: responsible passes, or ``(n passes, not localized)``."""
    shown = ", ".join(row.passes[:MAX_PASSES_SHOWN])
    if len(row.passes) > MAX_PASSES_SHOWN:
        shown += f" +{len(row.passes) - MAX_PASSES_SHOWN}"
    if not row.localized:
        shown = f"{shown or 'default'} (not localized)"
    return shown or "-"


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


def _time(stamp: str) -> str:
    """``2026-11-21T10:00:00Z`` -> ``11-21 10:00``."""
    return stamp.replace("T", " ").rstrip("Z")[5:16]


def _nodes(row: TriageRow) -> str:
    def num(n: int | None) -> str:
        return "?" if n is None else str(n)
    return f"{num(row.nodes_original)} -> {num(row.nodes_minimized)}"


def triage_table(rows: list[TriageRow], title: str) -> Table:
    """A rich Table of ``rows`` (already sorted); the group columns (target, pass, symptom)
    are printed once per group and groups are separated by a rule."""
    table = Table(title=title, show_lines=False, header_style="bold")
    table.add_column("target", no_wrap=True)
    table.add_column("pass", max_width=44, overflow="fold")
    table.add_column("symptom", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("hits", justify="right", no_wrap=True)
    table.add_column("first seen", no_wrap=True)
    table.add_column("last seen", no_wrap=True)
    table.add_column("nodes", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    previous: tuple[str, str, str] | None = None
    for index, row in enumerate(rows):
        group = (row.target, passes_label(row), row.symptom)
        if previous is not None and group != previous:
            table.rows[index - 1].end_section = True
        first = group != previous
        hits = str(row.hits) + (f" (+{row.new_hits})" if row.new_hits and not row.new else "")
        table.add_row(*(group if first else ("", "", "")), row.id, hits,
                      _time(row.first_seen), _time(row.last_seen), _nodes(row),
                      status_cell(row))
        previous = group
    return table


def status_counts(rows: list[TriageRow]) -> str:
    """One line: how many bundles are new and how many have each status."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    parts = [f"{sum(r.new for r in rows)} new"] + [
        f"{n} {STATUS_LOOK.get(s, (s, ''))[0]}" for s, n in sorted(counts.items())]
    return f"{len(rows)} bundles: " + ", ".join(parts)
