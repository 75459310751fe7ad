"""A second consumer of an intermediate tensor: the tensor made a graph output as well, or
read by one more node (Identity, or for float32 a Relu, Neg or Abs) whose result is a graph
output. Fusions that assume their intermediate has one consumer must then keep it."""

from __future__ import annotations

import random

from onnx import ModelProto, TensorProto

from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import infer_types, intermediates, typed_value_info
from generators.mutate.spec import Mutator

#: Unary ops a new float32 consumer applies.
FLOAT_CONSUMERS: tuple[str, ...] = ("Identity", "Relu", "Neg", "Abs")


def second_consumer(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Give an intermediate with a known type one more consumer (see the module docstring)."""
    types = infer_types(model)
    cands = [n for n in intermediates(model.graph)
             if n in types and types[n].tensor_type.HasField("shape")]
    if not cands:
        return None
    name = rng.choice(cands)
    tp = types[name]
    if rng.random() < 0.5:
        model.graph.output.append(typed_value_info(name, tp))
        return model
    b = builder_for(model, rng, pool=False)
    ops = FLOAT_CONSUMERS if tp.tensor_type.elem_type == TensorProto.FLOAT else ("Identity",)
    out = b.node(rng.choice(ops), [name])[0]
    b.outputs.append(typed_value_info(out, tp))
    return merge(model, b)


MUTATORS = (Mutator("second-consumer", "interface", second_consumer),)
