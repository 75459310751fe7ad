"""Duplicated and shared initializers.

- ``duplicate-initializer``: the same data under a second name; half of the consumers (or the
  only one) read the copy, as exporters that save each use of a weight separately write.
- ``shared-initializer``: one initializer feeding two consumers: initializers with equal data
  merged into one, or a consumer of an initializer pointed at another of the same type and
  dims, or else an Identity of an initializer made a graph output.
"""

from __future__ import annotations

import random

from onnx import ModelProto, TensorProto

from generators.mutate.graph import (
    all_names,
    consumers,
    fresh,
    list_initializers_as_inputs,
    redirect,
    tensor_type,
    typed_value_info,
)
from generators.mutate.spec import Mutator

#: Element types of initializers that may be swapped for another of the same dims (weights,
#: unlike integer shapes, axes and sizes, never decide an output's shape).
WEIGHT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE})

#: Ops whose float inputs (scales, roi) decide the output's shape.
SIZE_READERS = frozenset({"Resize", "Upsample"})


def _free(model: ModelProto) -> list[TensorProto]:
    """Initializers that are not overridable graph inputs (IR >= 4) nor graph outputs."""
    listed = {i.name for i in model.graph.input} if model.ir_version >= 4 else set()
    outs = {o.name for o in model.graph.output}
    return [t for t in model.graph.initializer if t.name not in listed and t.name not in outs]


def _key(t: TensorProto) -> tuple:
    return t.data_type, tuple(t.dims)


def duplicate_initializer(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Copy an initializer under a new name and point every other consumer (or the only one)
    at the copy."""
    g = model.graph
    users = consumers(g)
    cands = [t for t in _free(model) if users.get(t.name)]
    if not cands:
        return None
    t = rng.choice(cands)
    copy = TensorProto()
    copy.CopyFrom(t)
    copy.name = fresh(all_names(model), t.name + rng.choice(["_1", "__dup", ".copy"]))
    g.initializer.append(copy)
    readers = users[t.name]
    for k in readers[1::2] or readers:
        redirect(g.node[k], t.name, copy.name)
    list_initializers_as_inputs(model)
    return model


def _remove_unused(model: ModelProto, name: str) -> None:
    g = model.graph
    if name in consumers(g):
        return
    for t in list(g.initializer):
        if t.name == name:
            g.initializer.remove(t)
    for i in list(g.input):
        if i.name == name:
            g.input.remove(i)


def shared_initializer(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Make one initializer feed two consumers (merge equal ones, repoint a consumer to one of
    the same type and dims, or add an Identity graph output of it)."""
    g = model.graph
    users = consumers(g)
    free = [t for t in _free(model) if users.get(t.name)]
    if not free:
        return None
    sized = {i for n in g.node if n.op_type in SIZE_READERS for i in n.input}
    by_data: dict[tuple, list[TensorProto]] = {}
    by_type: dict[tuple, list[TensorProto]] = {}
    for t in free:
        by_data.setdefault((_key(t), t.SerializeToString().replace(t.name.encode(), b"")),
                           []).append(t)
        if t.data_type in WEIGHT_TYPES and t.name not in sized:
            by_type.setdefault(_key(t), []).append(t)
    equal = [ts for ts in by_data.values() if len(ts) > 1]
    similar = [ts for ts in by_type.values() if len(ts) > 1]
    if equal or (similar and rng.random() < 0.7):
        keep, other = rng.sample(rng.choice(equal or similar), 2)
        readers = users[other.name] if equal else [rng.choice(users[other.name])]
        for k in readers:
            redirect(g.node[k], other.name, keep.name)
        _remove_unused(model, other.name)
        return model
    t = rng.choice(free)
    out = fresh(all_names(model), t.name + "_shared")
    node = g.node.add()
    node.op_type = "Identity"
    node.input.append(t.name)
    node.output.append(out)
    g.output.append(typed_value_info(out, tensor_type(t)))
    return model


MUTATORS = (
    Mutator("duplicate-initializer", "weight-sharing", duplicate_initializer),
    Mutator("shared-initializer", "weight-sharing", shared_initializer),
)
