"""Tensor and node names in the styles real exporters write.

Styles (registry :data:`STYLES`; a new style is one new entry):

- ``torch_new``: PyTorch >= 1.13 (``/layer1/conv/Conv_output_0``, node ``/layer1/conv/Conv``,
  weights ``layer1.conv.weight`` or ``onnx::Conv_12``, inputs ``input.1``);
- ``torch_old``: older PyTorch (plain numbers ``8``, ``12``; nodes ``Conv_3``);
- ``tf2onnx``: ``model/dense/MatMul:0``, node ``model/dense/MatMul``;
- ``plain``: short names (``t3``), sometimes empty node names, as optimizers and hand-written
  graphs produce;
- ``mixed``: each name in a style drawn at random.

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
        style = self._fixed or STYLES[self._rng.choice(tuple(STYLES))]
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
