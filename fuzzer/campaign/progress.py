"""Live progress of a campaign (rich) and its closing summary."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from fuzzer.campaign.stats import CampaignStats


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def render(stats: CampaignStats, duration: float | None, run_cases: int, run_seconds: float,
           out: str, queued: int = 0) -> Group:
    """The progress panel: elapsed/remaining time, cases/s, unusable seeds, bundles and
    findings waiting for localization and reduction, findings by symptom, newest finding."""
    head = Table.grid(padding=(0, 2))
    remaining = _clock(duration - run_seconds) if duration else "-"
    rate = run_cases / run_seconds if run_seconds > 0 else 0.0
    head.add_row("elapsed", _clock(stats.elapsed()), "remaining", remaining)
    head.add_row("cases", str(stats.cases), "cases/s", f"{rate:,.0f}")
    head.add_row("unusable seeds", str(stats.unusable), "bundles (new)",
                 f"{stats.bundles_new} in {out}")
    head.add_row("hits on known bundles", str(stats.hits), "findings queued", str(queued))
    table = Table(title="findings by symptom", show_edge=False)
    table.add_column("symptom")
    table.add_column("findings", justify="right")
    for symptom, count in stats.findings.most_common():
        table.add_row(symptom, str(count))
    newest = Text(f"newest: {stats.newest}" if stats.newest else "newest: -", style="bold")
    return Group(head, table, newest)


def summary(stats: CampaignStats, run_cases: int, run_seconds: float, interrupted: bool,
            out: str) -> Table:
    """The closing summary table (with the pending findings left, and the command that
    finishes them, where there are any)."""
    table = Table(title="optfuzz campaign " + ("(interrupted)" if interrupted else "done"))
    table.add_column("what")
    table.add_column("value", justify="right")
    rate = run_cases / run_seconds if run_seconds > 0 else 0.0
    table.add_row("cases (this run)", f"{run_cases} in {run_seconds:.1f} s ({rate:,.0f}/s)")
    table.add_row("cases (campaign)", str(stats.cases))
    table.add_row("unusable seeds", str(stats.unusable))
    for reason, count in stats.unusable_reasons.most_common(5):
        table.add_row(f"  {reason[:70]}", str(count))
    for symptom, count in stats.findings.most_common():
        table.add_row(f"findings: {symptom}", str(count))
    table.add_row("new bundles", f"{stats.bundles_new} in {out}")
    table.add_row("hits on known bundles", str(stats.hits))
    if stats.pending:
        table.add_row("pending findings (not reduced yet)",
                      f"{stats.pending}: finish with {stats.pending_command}")
    return table
