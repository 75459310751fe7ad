"""Tensor and node names in the styles real exporters write.

Styles (registry :data:`STYLES`; a new style is one new entry):

- ``torch_new``: PyTorch >= 1.13 (``/layer1/conv/Conv_output_0``, node ``/layer1/conv/Conv``,
  weights ``layer1.conv.weight`` or ``onnx::Conv_12``, inputs ``input.1``);
- ``torch_old``: older PyTorch (plain numbers ``8``, ``12``; nodes ``Conv_3``);
- ``torch_dynamo``: PyTorch's dynamo exporter (``torch.onnx.export(..., dynamo=True)``):
  values named after the aten op (``conv2d_3``), nodes ``node_Conv_3``, weights
  ``layer3.weight`` or ``val_3``, inputs named after the forward's arguments (``x``, ``arg3_1``);
- ``tf2onnx``: ``model/dense/MatMul:0``, node ``model/dense/MatMul``;
- ``plain``: short names (``t3``), sometimes empty node names, as optimizers and hand-written
  graphs produce;
- ``mixed``: each name in a style drawn at random among :data:`MIXED_STYLES`.

A recipe draws a model's style; :func:`restyle` then turns some ``torch_new`` models into
``torch_dynamo`` ones from a stream of its own, so that the models of every other seed keep
the draws (and names) they had before that style came.

Every name carries a per-model counter, so names are unique within a model.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from fuzzer.registry import Registry

# Each style: (tensor(op, k), node(op, k), weight(op, k), graph_input(k)).
_Style = tuple[Callable[[str, int], str], Callable[[str, int], str],
               Callable[[str, int], str], Callable[[int], str]]

_WEIGHT_SUFFIX = ("weight", "bias", "running_mean", "running_var", "const")

STYLES: Registry[_Style] = Registry("name style", {
    "torch_new": (
        lambda op, k: f"/layer{k}/{op.lower()}/{op}_output_0",
        lambda op, k: f"/layer{k}/{op.lower()}/{op}",
        lambda op, k: (f"onnx::{op}_{k}" if k % 2 else
                       f"layer{k}.{op.lower()}.{_WEIGHT_SUFFIX[k % 5]}"),
        lambda k: f"input.{k}",
    ),
    "torch_old": (
        lambda op, k: str(k),
        lambda op, k: f"{op}_{k}",
        lambda op, k: f"onnx::{op}_{k}" if k % 3 else str(k),
        lambda k: "input.1" if k == 1 else str(k),
    ),
    "torch_dynamo": (
        lambda op, k: f"{op.lower()}_{k}",
        lambda op, k: f"node_{op}_{k}",
        lambda op, k: f"val_{k}" if k % 2 else f"layer{k}.{_WEIGHT_SUFFIX[k % 5]}",
        lambda k: "x" if k == 1 else f"arg{k}_1",
    ),
    "tf2onnx": (
        lambda op, k: f"model/{op.lower()}_{k}/{op}:0",
        lambda op, k: f"model/{op.lower()}_{k}/{op}",
        lambda op, k: f"model/{op.lower()}_{k}/kernel:0",
        lambda k: f"serving_default_input_{k}:0",
    ),
    "plain": (
        lambda op, k: f"t{k}",
        lambda op, k: "" if k % 4 == 0 else f"n{k}",
        lambda op, k: f"w{k}",
        lambda k: f"x{k}",
    ),
})

#: Names of all styles, ``mixed`` included.
STYLE_NAMES: tuple[str, ...] = (*STYLES, "mixed")
#: styles ``mixed`` draws each name from.
MIXED_STYLES: tuple[str, ...] = ("torch_new", "torch_old", "tf2onnx", "plain")
#: style -> (the style that succeeded it, the share of models that take the successor).
SUCCESSORS: dict[str, tuple[str, float]] = {"torch_new": ("torch_dynamo", 1 / 3)}
#: salt of the seed that decides :func:`restyle`.
RESTYLE_SALT = 0x57E1


def restyle(style: str, seed: int) -> str:
    """``style``, or for a share of seeds its successor (:data:`SUCCESSORS`), drawn from
    ``seed`` salted with :data:`RESTYLE_SALT`."""
    successor = SUCCESSORS.get(style)
    if successor is None or random.Random(seed ^ RESTYLE_SALT).random() >= successor[1]:
        return style
    return successor[0]


class Namer:
    """Unique names for one model in one style.

    Args:
        style: a key of :data:`STYLES` or ``"mixed"``.
        rng: random source for ``mixed``.

    Raises:
        KeyError: unknown style.
    """

    __slots__ = ("style", "_rng", "_k", "_fixed")

    def __init__(self, style: str, rng: random.Random) -> None:
        if style != "mixed" and style not in STYLES:
            raise KeyError(f"unknown name style {style!r}")
        self.style = style
        self._rng = rng
        self._k = 0
        self._fixed = STYLES.get(style, None)

    def _next(self) -> tuple[_Style, int]:
        self._k += 1
        style = self._fixed or STYLES[self._rng.choice(MIXED_STYLES)]
        return style, self._k

    def tensor(self, op: str) -> str:
        """Name of an output tensor of an ``op`` node."""
        style, k = self._next()
        return style[0](op, k)

    def node(self, op: str) -> str:
        """Name of an ``op`` node (may be empty in the ``plain`` style)."""
        style, k = self._next()
        return style[1](op, k)

    def weight(self, op: str) -> str:
        """Name of a weight (initializer or Constant output) consumed by an ``op`` node."""
        style, k = self._next()
        return style[2](op, k)

    def graph_input(self) -> str:
        """Name of a graph input."""
        style, k = self._next()
        return style[3](k)
