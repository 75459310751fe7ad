"""Motifs about where weights live: Constant nodes instead of initializers, weights as graph
inputs, duplicate initializers (same values, different names), unused initializers, weights
shared by several consumers."""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, tensor_proto, value_info
from generators.motifs.spec import Motif
from generators.values import FLOAT, Value


def _constant_weights(b: GraphBuilder) -> None:
    b.weights = "constant"


def _input_weights(b: GraphBuilder) -> None:
    b.weights = "input"


def _duplicate_initializers(b: GraphBuilder) -> None:
    """Copy some initializers under new names and point some consumers at the copies."""
    if not b.initializers:  # weights live in Constant nodes: add one (unused) initializer
        b.random_weight((2, 3), FLOAT, "Add", placement="initializer")
    users: dict[str, list] = {}
    for n in b.nodes:
        for i, name in enumerate(n.input):
            users.setdefault(name, []).append((n, i))
    for t in list(b.initializers)[: b.rng.randint(1, 3)]:
        copy = type(t)()
        copy.CopyFrom(t)
        copy.name = b.namer.weight("Dup")
        b.initializers.append(copy)
        if t.name in b.input_names:
            b.inputs.append(value_info(copy.name, t.data_type, list(t.dims)))
            b.input_names.add(copy.name)
        for n, i in users.get(t.name, [])[1::2] or users.get(t.name, []):
            n.input[i] = copy.name


def _unused_initializer(b: GraphBuilder) -> None:
    arr = b.nprng.standard_normal((b.rng.randint(1, 4),)).astype(np.float32)
    b.initializers.append(tensor_proto(arr, b.namer.weight("Unused")))


def _shared_weight(b: GraphBuilder, x: Value) -> Value:
    """One weight consumed by two nodes (Add and Mul of the same x)."""
    w = b.random_weight(x.shape[-1:], x.dtype, "Add")
    a = b.op("Add", [x, w], x.dtype, x.shape)
    return b.op("Mul", [a, w], x.dtype, x.shape)


MOTIFS = (
    Motif("constant-weights", ("extract_constant_to_initializer",), setup=_constant_weights,
          v1=True),
    Motif("input-weights", ("split_init", "split_predict"), setup=_input_weights),
    Motif("duplicate-initializers", ("eliminate_duplicate_initializer",),
          finish=_duplicate_initializers, v1=True),
    Motif("unused-initializer", ("eliminate_unused_initializer",), finish=_unused_initializer),
    Motif("shared-weight", ("eliminate_duplicate_initializer", "split_predict"),
          emit=_shared_weight),
)
