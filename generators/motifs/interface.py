"""Motifs for interface passes: int64 graph inputs (``rewrite_input_dtype``), graph inputs and
outputs with exporter names (``rename_input_output``), nodes without names
(``set_unique_name_for_nodes``), a computation on initializers only (``split_init``,
``split_predict``)."""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.names import Namer
from generators.values import FLOAT, INT64, Value


def _int64_input(b: GraphBuilder, x: Value) -> Value:
    """An int64 graph input of ids (fed 0 to 3) cast to float and added to ``x``; at times
    also gathering rows of a (4, 2) table, a graph output: a (4, 4) one where the schema
    row the draw takes gives the Gather another axis, which the ids then index as well."""
    ids = b.graph_input(INT64, x.shape[x.rank - 1:])
    f = b.op("Cast", [ids], FLOAT, ids.shape, ("nonneg",), to=FLOAT)
    if b.rng.random() < 0.5:
        other_axis = b.planned("Gather", "attr:axis") not in (None, "absent", "default")
        table = b.random_weight((4, 4 if other_axis else 2), FLOAT, "Gather")
        g = b.op("Gather", [table, ids], FLOAT, (*ids.shape, table.shape[1]), axis=0)
        b.graph_output(g)
    return b.op("Add", [x, f], FLOAT, x.shape)


def _unnamed_nodes(b: GraphBuilder) -> None:
    b.namer = Namer("plain", b.rng)


def _init_only(b: GraphBuilder, x: Value) -> Value:
    k = x.shape[-1]
    w1 = b.random_weight((k,), FLOAT, "Add")
    w2 = b.random_weight((k,), FLOAT, "Add")
    s = b.op("Add", [w1, w2], FLOAT, (k,))
    if b.rng.random() < 0.5:
        s = b.op("Relu", [s], FLOAT, (k,))
    return b.op("Mul", [x, s], FLOAT, x.shape)


def _renamed(b: GraphBuilder, x: Value) -> Value:
    y = b.op("Sigmoid", [x], FLOAT, x.shape)
    b.graph_output(y)
    return b.op("Neg", [x], FLOAT, x.shape)



MOTIFS = (
    Motif("int64-input", ("rewrite_input_dtype",), emit=_int64_input,
          anchors=("Cast", "Gather")),
    Motif("unnamed-nodes", ("set_unique_name_for_nodes",), setup=_unnamed_nodes),
    Motif("init-only-subgraph", ("split_init", "split_predict"), emit=_init_only,
          anchors=("Add", "Mul")),
    Motif("exporter-io-names", ("rename_input_output",), emit=_renamed),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 60
