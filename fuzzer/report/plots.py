"""Small matplotlib charts for summary.html, returned as inline SVG text (Agg-free: the SVG
backend needs no display)."""

from __future__ import annotations

import io
from collections.abc import Sequence

MAX_BARS = 30


def _svg(fig: object) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")  # type: ignore[attr-defined]
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def line_chart(xs: Sequence[float], series: dict[str, Sequence[float]], xlabel: str,
               ylabel: str, title: str) -> str:
    """SVG of one line per ``series`` entry (name -> y values, same length as ``xs``)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 2.8))
    ax = fig.subplots()
    for name, ys in series.items():
        ax.plot(xs, ys, marker="o", markersize=2.5, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if len(series) > 1:
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
