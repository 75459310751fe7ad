"""Small matplotlib charts for summary.html, returned as inline SVG text (Agg-free: the SVG
backend needs no display)."""

from __future__ import annotations

import io
from collections.abc import Sequence

MAX_BARS = 30


def _svg(fig: object) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")  # type: ignore[attr-defined]
    text = buffer.getvalue()
    return text[text.index("<svg"):]


#: legend labels of a run's finish (its time limit, or the end of its case loop), of the time
#: after it while the cases in flight come back, and of the time after the last case, when
#: only the queued findings are handled.
FINISH_LABEL = "finish"
DRAIN_LABEL = "after the finish: cases in flight"
AFTER_LABEL = "after the last case: queued findings"


def line_chart(xs: Sequence[float], series: dict[str, Sequence[float]], xlabel: str,
               ylabel: str, title: str,
               after: Sequence[tuple[float, float, float]] = ()) -> str:
    """SVG of one line per ``series`` entry (name -> y values, same length as ``xs``);
    each ``(finish, last case, end)`` of ``after`` (x units) is marked: a vertical line at
    the finish, the time up to the last case lightly shaded and the time up to ``end``
    shaded, so what was counted after the finish is not read as fuzzing."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.3 if after else 2.8))
    ax = fig.subplots()
    for name, ys in series.items():
        ax.plot(xs, ys, marker="o", markersize=2.5, label=name)
    for index, (finish, last_case, end) in enumerate(after):
        first = index == 0
        ax.axvline(finish, color="#444444", linestyle="--", linewidth=1.0,
                   label=FINISH_LABEL if first else None)
        for start, stop, alpha, label in ((finish, last_case, 0.1, DRAIN_LABEL),
                                          (last_case, end, 0.25, AFTER_LABEL)):
            if stop > start:
                ax.axvspan(start, stop, color="#888888", alpha=alpha, linewidth=0,
                           label=label if first else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if after:  # below the axes, where it hides no line
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=3,
                  frameon=False)
    elif len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _svg(fig)


def bar_chart(counts: dict[str, float], title: str, xlabel: str,
              overlay: dict[str, float] | None = None, overlay_label: str = "") -> str:
    """SVG of horizontal bars, largest first (at most :data:`MAX_BARS`); ``overlay`` draws a
    second, narrower bar per label (e.g. findings on top of cases)."""
    from matplotlib.figure import Figure

    items = sorted(counts.items(), key=lambda kv: -kv[1])[:MAX_BARS]
    labels = [k for k, _ in items][::-1]
    fig = Figure(figsize=(6.4, max(1.6, 0.24 * len(labels) + 0.9)))
    ax = fig.subplots()
    ax.barh(labels, [counts[k] for k in labels], color="#6b8fd6", label=xlabel)
    if overlay:
        ax.barh(labels, [overlay.get(k, 0) for k in labels], height=0.4, color="#d62728",
                label=overlay_label)
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _svg(fig)
