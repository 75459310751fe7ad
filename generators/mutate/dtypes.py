"""Dtype changes that keep a model valid.

- ``cast-pair``: a tensor's consumers read it through a Cast to another element type and a
  Cast back (float32 <-> float16 / double / bfloat16, float16 <-> float32, int64 <-> int32), as
  mixed-precision exporters leave them; eliminating the pair is only exact for widening casts.
  An int64 tensor passes through int32 only where its values are sizes or indices (graph
  inputs, Shape, Size, ArgMax ... outputs).
- ``retype-input``: a graph input declared in another element type. Where every consumer
  accepts any element type without changing its own output type (Shape, Size, Cast, the
  indices of Gather and GatherElements) the input is simply retyped; else a Cast to the old
  type follows it, as exporters of half-precision models write.
"""

from __future__ import annotations

import random

from onnx import ModelProto, NodeProto, TensorProto

from generators.graphs import outer_refs, subgraphs
from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import consumers, infer_types, redirect, refresh_types
from generators.mutate.spec import Mutator

#: element type -> the types a Cast pair may pass it through.
PAIRS: dict[int, tuple[int, ...]] = {
    TensorProto.FLOAT: (TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16),
    TensorProto.FLOAT16: (TensorProto.FLOAT,),
    TensorProto.DOUBLE: (TensorProto.FLOAT,),
    TensorProto.INT64: (TensorProto.INT32,),
    TensorProto.INT32: (TensorProto.INT64,),
}
#: Ops whose int64 outputs fit int32 (sizes and indices of small tensors); other int64 tensors
#: (Slice's INT64_MAX ends, ...) would wrap in an int32 Cast pair.
SMALL_INT64 = frozenset({"Shape", "Size", "ArgMax", "ArgMin", "NonZero", "TopK"})
#: Opset from which Cast reads and writes bfloat16.
BFLOAT16_SINCE = 13
#: element type -> the types a graph input may be declared in instead.
RETYPES: dict[int, tuple[int, ...]] = {
    TensorProto.FLOAT: (TensorProto.FLOAT16, TensorProto.DOUBLE),
    TensorProto.INT64: (TensorProto.INT32,),
    TensorProto.INT32: (TensorProto.INT64,),
}
#: ``(op type, input index)`` pairs that accept any element type there and whose outputs do
#: not depend on it.
TYPE_BLIND: frozenset[tuple[str, int]] = frozenset({
    ("Shape", 0), ("Size", 0), ("Cast", 0), ("Gather", 1), ("GatherElements", 1)})


def _elem(tp: object) -> int:
    return tp.tensor_type.elem_type if tp is not None else 0


def _type_blind(node: NodeProto, name: str) -> bool:
    """Whether ``node`` reads ``name`` only through inputs of :data:`TYPE_BLIND`."""
    if any(name in outer_refs(sub) for sub in subgraphs(node)):
        return False
    return all((node.op_type, j) in TYPE_BLIND for j, x in enumerate(node.input) if x == name)


def cast_pair(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Route the consumers (all, or one) of a tensor through Cast(to=mid) -> Cast(to=its own
    type)."""
    g = model.graph
    types = infer_types(model)
    users = consumers(g)
    b = builder_for(model, rng, pool=False)
    made_by = {o: n.op_type for n in g.node for o in n.output}
    inits = {t.name for t in g.initializer}
    candidates = [n for n in users if _elem(types.get(n)) in PAIRS and (
        _elem(types[n]) != TensorProto.INT64 or made_by.get(n) in SMALL_INT64
        or n not in made_by and n not in inits)]
    if not candidates:
        return None
    name = rng.choice(candidates)
    elem = _elem(types[name])
    mids = [t for t in PAIRS[elem] if t != TensorProto.BFLOAT16 or b.opset >= BFLOAT16_SINCE]
    mid = b.node("Cast", [name], to=rng.choice(mids))[0]
    back = b.node("Cast", [mid], to=elem)[0]
    chosen = users[name] if rng.random() < 0.5 else [rng.choice(users[name])]
    nodes = [g.node[k] for k in chosen]
    for node in nodes:
        redirect(node, name, back)
    return merge(model, b)


def retype_input(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Declare a graph input in another element type: directly where its consumers are
    type-blind (:data:`TYPE_BLIND`), else followed by a Cast to the type it had."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    users = consumers(g)
    inputs = [i for i in g.input if i.name not in inits and i.type.tensor_type.elem_type in
              RETYPES and users.get(i.name)]
    if not inputs:
        return None
    vi = rng.choice(inputs)
    old = vi.type.tensor_type.elem_type
    vi.type.tensor_type.elem_type = rng.choice(RETYPES[old])
    blind = all(_type_blind(g.node[k], vi.name) for k in users[vi.name])
    if blind and not any(o.name == vi.name for o in g.output):
        refresh_types(model)
        return model
    b = builder_for(model, rng, pool=False)
    nodes = [g.node[k] for k in users[vi.name]]
    cast = b.node("Cast", [vi.name], to=old)[0]
    for node in nodes:
        redirect(node, vi.name, cast)
    for o in g.output:
        if o.name == vi.name:
            o.type.tensor_type.elem_type = vi.type.tensor_type.elem_type
    return merge(model, b)


MUTATORS = (
    Mutator("cast-pair", "dtype", cast_pair),
    Mutator("retype-input", "dtype", retype_input),
)
