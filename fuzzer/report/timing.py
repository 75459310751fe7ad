"""The timing table of a ``slow`` finding (:mod:`oracles.slow`): the target's time, a
reference session build and run, and the target with no pass, at each size that was timed;
as markdown for report.md and as plain lines for ``optfuzz check``."""

from __future__ import annotations

from typing import Any

_HEADER = ("nodes", "blocks", "optimize (s)", "reference build + run (s)",
           "optimize / reference", "no pass (s)", "passes add (s)")


def timing_rows(timing: dict[str, Any]) -> list[list[str]]:
    """One row of cells per size of ``timing`` (a finding's detail or meta.json's
    ``timing``: ``table`` rows with ``nodes``, ``blocks`` and minima in seconds); the last
    cell is the time the passes add to the no-pass run (seconds, the difference of the
    minima)."""
    rows = []
    for row in timing.get("table") or []:
        optimize, reference = row.get("optimize_s"), row.get("reference_s")
        ratio = f"{optimize / reference:.1f}" if optimize and reference else "-"
        baseline = row.get("baseline_s")
        added = optimize - baseline if optimize is not None and baseline is not None else None
        rows.append([str(row.get("nodes", "?")), str(row.get("blocks") or "-"),
                     _seconds(optimize), _seconds(reference), ratio, _seconds(baseline),
                     _seconds(added)])
    return rows


def _seconds(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) else "-"


def growth_sentence(timing: dict[str, Any]) -> str:
    """How the time grows and the threshold it was judged by, in one sentence."""
    part = "the target's own load and save (no pass)" if timing.get("growth") == "framework" \
        else "the passes"
    if "added_exponent" in timing:
        part += (f" (the time they add to the run with no pass grows as "
                 f"nodes^{timing['added_exponent']})")
    return (f"The optimizer's time grows as nodes^{timing.get('exponent', '?')} against "
            f"nodes^{timing.get('reference_exponent', '?')} for a reference session build and "
            f"run; the growth is in {part}. Threshold (optfuzz `slow` oracle): exponent >= "
            f"{timing.get('threshold', '?')} over the sizes and above 1 on each doubling, at "
            f"least {timing.get('margin', '?')} above the reference's, growth beyond linear "
            "larger than the spread of the repeats; times are the minima of "
            f"{timing.get('repeats', '?')} interleaved repeats per size.")


def timing_markdown(timing: dict[str, Any]) -> str:
    """The "Timing" section body of report.md."""
    lines = ["| " + " | ".join(_HEADER) + " |", "|" + " --- |" * len(_HEADER)]
    lines += ["| " + " | ".join(cells) + " |" for cells in timing_rows(timing)]
    return "\n".join(lines) + "\n\n" + growth_sentence(timing) + "\n"


def timing_text(timing: dict[str, Any]) -> str:
    """The table as aligned plain lines (a terminal)."""
    table = [list(_HEADER), *timing_rows(timing)]
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEADER))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
                     for row in table)
