"""The report's picture: the minimized model and the target's output drawn side by side
(matplotlib, Agg backend; no display needed), op types on the nodes and dtype[shape] on the
edges. Nodes the optimizer removed or rewrote are dashed red on the left; nodes it added are
solid red on the right; both show their attributes as ``name=value`` (where the optimizer
changed only attributes, the changed ones).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import networkx as nx

from fuzzer.report.graph_model import model_digraph
from fuzzer.report.layout import layered_positions

#: vertex kind -> box face colour.
FACE = {"input": "#d9f2d9", "output": "#fde3c8", "op": "#dbe7fb", "initializer": "#eeeeee"}
#: vertex mark -> (edge colour, line style, line width).
MARK = {None: ("#555555", "solid", 0.8), "added": ("#d62728", "solid", 2.0),
        "removed": ("#d62728", "dashed", 2.0)}
X_INCH, Y_INCH = 1.9, 0.95  # inches per layout unit
MAX_INCHES = 60.0  # matplotlib refuses absurd canvases; huge graphs get squeezed


def _panel_size(pos: dict[str, tuple[float, float]]) -> tuple[float, float]:
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    return max(xs) - min(xs) + 1.6, max(ys) - min(ys) + 1.4


def draw_graph(ax: Any, g: nx.DiGraph, title: str) -> None:
    """Draw ``g`` (:func:`fuzzer.report.graph_model.model_digraph`) on matplotlib axes."""
    pos = layered_positions(g)
    width, height = _panel_size(pos)
    ax.set_title(title, fontsize=10, fontweight="bold")
    ax.set_axis_off()
    if not pos:
        return
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    boxes = {}
    for v, (x, y) in pos.items():
        data = g.nodes[v]
        colour, style, lw = MARK[data.get("mark")]
        lines = [line for line in data["label"] if line]
        kind = data["kind"]
        text = "\n".join(lines)
        boxes[v] = ax.text(
            x, y, text, ha="center", va="center", zorder=3,
            fontsize=8.5 if kind == "op" else 7, fontweight="bold" if kind == "op" else None,
            bbox={"boxstyle": "round,pad=0.35", "facecolor": FACE[kind], "edgecolor": colour,
                  "linestyle": style, "linewidth": lw})
    for u, v, data in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=1,
                    arrowprops={"arrowstyle": "-|>", "color": "#444444", "lw": 0.9,
                                "patchA": boxes[u].get_bbox_patch(),
                                "patchB": boxes[v].get_bbox_patch(),
                                "shrinkA": 1, "shrinkB": 1})
        if data.get("label"):
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, data["label"], ha="center", va="center",
                    fontsize=6.5, color="#1f3f8f", zorder=2,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                          "edgecolor": "none", "alpha": 0.85})


def draw_message(ax: Any, title: str, message: str) -> None:
    """A panel with a title and a wrapped message instead of a graph."""
    ax.set_title(title, fontsize=10, fontweight="bold")
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(message, 48), ha="center", va="center", fontsize=8.5,
            color="#a01010", transform=ax.transAxes, wrap=True,
            bbox={"boxstyle": "round,pad=0.6", "facecolor": "#fff0f0", "edgecolor": "#d62728"})


def render_side_by_side(model: Any, optimized: Any | None, out: Path, left_title: str,
                        right_title: str, missing_reason: str = "",
                        svg_too: bool = True) -> Path:
    """Write a PNG (or SVG, by ``out``'s suffix) of ``model`` beside ``optimized``; with
    ``svg_too`` also an SVG next to it whose text (op types, shapes) stays searchable text.

    Args:
        model, optimized: ``onnx.ModelProto``; ``optimized`` None draws ``missing_reason``.
        out: the picture file to write.

    Returns ``out``.

    Raises:
        OSError: the file cannot be written.
    """
    from matplotlib.figure import Figure

    if optimized is not None:
        left = model_digraph(model, optimized.graph.node, "removed")
        right = model_digraph(optimized, model.graph.node, "added")
        sizes = [_panel_size(layered_positions(left)), _panel_size(layered_positions(right))]
    else:
        left, right = model_digraph(model), None
        sizes = [_panel_size(layered_positions(left)), (3.0, 2.0)]
    width = min(MAX_INCHES, X_INCH * sum(s[0] for s in sizes) + 0.6)
    height = min(MAX_INCHES, max(3.0, Y_INCH * max(s[1] for s in sizes) + 0.9))
    fig = Figure(figsize=(width, height), dpi=110)
    axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [s[0] for s in sizes]})
    draw_graph(axes[0], left, left_title)
    if right is not None:
        draw_graph(axes[1], right, right_title)
    else:
        draw_message(axes[1], right_title, missing_reason)
    fig.text(0.01, 0.005, "red dashed: removed or rewritten by the target; red solid: added; "
             "name=value: their (changed) attributes; edges: dtype[shape]", fontsize=7,
             color="#666666")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    if svg_too and out.suffix != ".svg":
        import matplotlib

        with matplotlib.rc_context({"svg.fonttype": "none"}):
            fig.savefig(out.with_suffix(".svg"))
    return out
