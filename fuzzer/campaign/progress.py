"""Live progress of a campaign (rich) and its closing summary: what a person watching a
campaign asks (is it still finding new bugs, and how fast does it run), so bundles by symptom
with documented behaviour apart (not raw finding counts, which documented behaviour leads), the
time since the last new bundle (the cue that a campaign has saturated), and one cases/s figure
(:func:`fuzzer.campaign.stats.cases_per_second`, as campaign.log and summary.html say it)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from fuzzer.campaign.stats import CampaignStats, rate_text

#: documented behaviours listed by name on the live screen (the rest are summed).
MAX_DOCUMENTED_SHOWN = 5


def clock(seconds: float) -> str:
    """``h:mm:ss`` of ``seconds`` (negative ones as 0)."""
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def last_bundle_text(stats: CampaignStats) -> str:
    """How long ago the newest bundle was written (``0:12:40 ago``), or ``none yet``."""
    since = stats.since_last_bundle()
    return "none yet" if since is None else f"{clock(since)} ago"


def bundles_table(stats: CampaignStats,
                  title: str = "bundles by symptom (first seen)") -> Table:
    """New bundles and hits on bundles per symptom the bundle was first seen with (its
    id's), most bundles first."""
    table = Table(title=title, show_edge=False)
    table.add_column("symptom")
    table.add_column("bundles", justify="right")
    table.add_column("hits", justify="right")
    symptoms = stats.bundles_by_symptom + stats.hits_by_symptom
    for symptom in sorted(symptoms, key=lambda s: (-stats.bundles_by_symptom[s],
                                                   -stats.hits_by_symptom[s], s)):
        table.add_row(symptom, str(stats.bundles_by_symptom[symptom]),
                      str(stats.hits_by_symptom[symptom]))
    return table


def documented_rows(stats: CampaignStats, limit: int = MAX_DOCUMENTED_SHOWN) -> list[
        tuple[str, int]]:
    """``(name, findings)`` of the documented behaviours counted, most first: the first
    ``limit`` by name, the rest summed as ``(N others)``."""
    ranked = stats.documented.most_common()
    rows = ranked[:limit]
    if len(ranked) > limit:
        rows.append((f"({len(ranked) - limit} others)", sum(n for _, n in ranked[limit:])))
    return rows


def render(stats: CampaignStats, duration: float | None, run_cases: int, run_seconds: float,
           out: str, queued: int = 0) -> Group:
    """The progress panel: elapsed/remaining time, cases and cases/s of this run's case loop
    (``run_cases`` in ``run_seconds``), unusable seeds, new bundles and the time since the
    last one, hits, findings waiting for localization and reduction, bundles by symptom,
    documented behaviour counted apart, newest bundle."""
    head = Table.grid(padding=(0, 2))
    remaining = clock(duration - run_seconds) if duration else "-"
    head.add_row("elapsed", clock(stats.elapsed()), "remaining", remaining)
    head.add_row("cases", str(stats.cases), "cases/s", rate_text(run_cases, run_seconds))
    head.add_row("bundles (new)", f"{stats.bundles_new} in {out}", "last new bundle",
                 last_bundle_text(stats))
    head.add_row("hits on known bundles", str(stats.hits), "findings queued", str(queued))
    head.add_row("unusable seeds", str(stats.unusable), "documented (not bundled)",
                 str(sum(stats.documented.values())))
    parts: list = [head, bundles_table(stats)]
    if stats.documented:
        documented = Table(title="documented behaviour (counted, not bundled)", show_edge=False)
        documented.add_column("behaviour")
        documented.add_column("findings", justify="right")
        for name, count in documented_rows(stats):
            documented.add_row(name, str(count))
        parts.append(documented)
    parts.append(Text(f"newest: {stats.newest}" if stats.newest else "newest: -",
                      style="bold"))
    return Group(*parts)


def summary(stats: CampaignStats, run_cases: int, run_seconds: float, interrupted: bool,
            out: str) -> Table:
    """The closing summary table (with the pending findings left, and the command that
    finishes them, where there are any)."""
    table = Table(title="optfuzz campaign " + ("(interrupted)" if interrupted else "done"))
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("cases (this run)",
                  f"{run_cases} in {run_seconds:.1f} s ({rate_text(run_cases, run_seconds)}/s)")
    table.add_row("cases (campaign)", str(stats.cases))
    table.add_row("unusable seeds", str(stats.unusable))
    for reason, count in stats.unusable_reasons.most_common(5):
        table.add_row(f"  {reason[:70]}", str(count))
    table.add_row("new bundles", f"{stats.bundles_new} in {out}")
    for symptom, count in stats.bundles_by_symptom.most_common():
        table.add_row(f"  {symptom}", str(count))
    table.add_row("last new bundle", last_bundle_text(stats))
    table.add_row("hits on known bundles", str(stats.hits))
    table.add_row("documented behaviour (not bundled)", str(sum(stats.documented.values())))
    for name, count in documented_rows(stats):
        table.add_row(f"  {name}", str(count))
    table.add_row("findings (documented included)", str(sum(stats.findings.values())))
    if stats.pending:
        table.add_row("pending findings (not reduced yet)",
                      f"{stats.pending}: finish with {stats.pending_command}")
    return table
