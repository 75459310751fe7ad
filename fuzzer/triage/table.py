"""The rich table of ``optfuzz triage``: one row per root cause (bundle), in the order of
:func:`fuzzer.triage.rows.reading_order`, and the lines under it."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fuzzer.triage.rows import TriageRow, merged_count

#: status -> (label, rich style).
STATUS_LOOK: dict[str, tuple[str, str]] = {
    "fails": ("still fails", "red"),
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


def trigger_label(trigger: str | None) -> str:
    """``trigger`` cut to :data:`MAX_TRIGGER_SHOWN` characters; ``-`` where unknown."""
    text = " ".join((trigger or "").split())
    if len(text) > MAX_TRIGGER_SHOWN:
        text = text[:MAX_TRIGGER_SHOWN - 3].rstrip() + "..."
    return text or "-"


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


def _nodes(row: TriageRow) -> str:
    def num(n: int | None) -> str:
        return "?" if n is None else str(n)
    return f"{num(row.nodes_original)} -> {num(row.nodes_minimized)}"


def triage_table(rows: list[TriageRow], title: str) -> Table:
    """A rich Table of ``rows`` (already in reading order); a target column only where the
    rows name more than one target."""
    many_targets = len({row.target for row in rows}) > 1
    table = Table(title=title, show_lines=False, header_style="bold")
    if many_targets:
        table.add_column("target", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("pass (+ enabling)", max_width=44, overflow="fold")
    table.add_column("symptom", no_wrap=True)
    table.add_column("hits", justify="right", no_wrap=True)
    table.add_column("variants", justify="right", no_wrap=True)
    table.add_column("nodes", justify="right", no_wrap=True)
    table.add_column("trigger", no_wrap=True, overflow="ellipsis")
    table.add_column("status", no_wrap=True)
    table.add_column("state", max_width=40, overflow="fold")
    for row in rows:
        hits = str(row.hits) + (f" (+{row.new_hits})" if row.new_hits and not row.new else "")
        cells = [row.id, passes_label(row), row.symptom, hits, str(row.variants),
                 _nodes(row), trigger_label(row.trigger), status_cell(row), state_cell(row)]
        table.add_row(*([row.target] if many_targets else []), *cells)
    return table


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
