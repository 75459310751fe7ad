"""Motifs with subgraphs: If with a constant condition (Constant node or initializer), If and
Loop bodies that read outer-scope values."""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.ops import control
from generators.values import Value


def _if_const(b: GraphBuilder, x: Value) -> Value:
    placement = "constant" if b.rng.random() < 0.8 else "initializer"
    shape = () if b.rng.random() < 0.8 else (1,)
    cond = b.const(np.full(shape, b.rng.random() < 0.5), "If", placement=placement)
    return control.if_node(b, x, cond)


def _outer_scope(b: GraphBuilder, x: Value) -> Value:
    if b.opset >= 11 and b.rng.random() < 0.5:
        return control.loop(b, x)
    return control.if_node(b, x)


MOTIFS = (
    Motif("if-const-cond", ("eliminate_if_with_const_cond",), emit=_if_const,
          anchors=("If",)),
    Motif("outer-scope-subgraph", ("lift_lexical_references",), emit=_outer_scope,
          anchors=("If", "Loop")),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 50
