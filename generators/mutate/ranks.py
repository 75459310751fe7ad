"""Rank changes at the model's boundary, undone inside: a graph input declared with a leading
1 (Squeeze back) or flattened (Reshape back), a graph output given a leading 1 (Unsqueeze) or
flattened (Reshape to ``[-1]``). The graph in between is the one it was; shape-aware passes
meet a Squeeze, Unsqueeze or Reshape right at an input or output."""

from __future__ import annotations

import math
import random

from onnx import ModelProto, TensorShapeProto, ValueInfoProto

from generators.builder import static_dims
from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import all_names, consumers, fresh, redirect, rename
from generators.mutate.spec import Mutator
from generators.ops.shape_ops import axes_operand

#: Opset of the form of Squeeze and Unsqueeze whose axes are an input.
AXES_INPUT_SINCE = 13


def _declare(vi: ValueInfoProto, dims: list) -> None:
    """Declare ``vi``'s dims: ints are sizes, other items TensorShapeProto dims to copy."""
    kept = []
    for d in dims:
        new = TensorShapeProto.Dimension()
        if isinstance(d, int):
            new.dim_value = d
        else:
            new.CopyFrom(d)
        kept.append(new)
    shape = vi.type.tensor_type.shape
    shape.ClearField("dim")
    shape.dim.extend(kept)


def input_rank(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """A graph input gets a leading dim of 1 (then Squeeze) or is flattened (then Reshape to
    its static shape); its consumers read the restored tensor."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    users = consumers(g)
    outs = {o.name for o in g.output}
    inputs = [i for i in g.input if i.name not in inits and i.name not in outs and
              users.get(i.name) and i.type.tensor_type.HasField("shape")]
    if not inputs:
        return None
    vi = rng.choice(inputs)
    b = builder_for(model, rng, pool=False)
    static = static_dims(vi)
    nodes = [g.node[k] for k in users[vi.name]]
    if static is not None and len(static) != 1 and rng.random() < 0.5:
        target = b.ints(static, "Reshape")
        inner = b.node("Reshape", [vi.name, target.name])[0]
        _declare(vi, [math.prod(static)])
    else:
        form = axes_operand(b, "Squeeze", [0], AXES_INPUT_SINCE)
        inner = b.node("Squeeze", [vi.name, *form["inputs"]], **form["attrs"])[0]
        _declare(vi, [1, *vi.type.tensor_type.shape.dim])
    for node in nodes:
        redirect(node, vi.name, inner)
    return merge(model, b)


def output_rank(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """A graph output gets a leading dim of 1 (Unsqueeze) or is flattened (Reshape to
    ``[-1]``); the tensor inside is renamed so the output keeps its name."""
    g = model.graph
    produced = {o for n in g.node for o in n.output}
    inputs = {i.name for i in g.input}
    outputs = [o for o in g.output if o.name in produced and o.name not in inputs and
               o.type.tensor_type.HasField("shape")]
    if not outputs:
        return None
    out = rng.choice(outputs)
    name = out.name
    inner = fresh(all_names(model), name)
    rename(g, name, inner)
    out.name = name
    b = builder_for(model, rng, pool=False)
    rank = len(out.type.tensor_type.shape.dim)
    if rank != 1 and rng.random() < 0.5:
        flat = b.ints([-1], "Reshape")
        b.node("Reshape", [inner, flat.name], outputs=[out.name])
        static = static_dims(out)
        _declare(out, [math.prod(static)] if static is not None else [])
        if static is None:
            out.type.tensor_type.shape.dim.add()
    else:
        form = axes_operand(b, "Unsqueeze", [0], AXES_INPUT_SINCE)
        b.node("Unsqueeze", [inner, *form["inputs"]], outputs=[out.name], **form["attrs"])
        _declare(out, [1, *out.type.tensor_type.shape.dim])
    return merge(model, b)


MUTATORS = (
    Mutator("input-rank", "rank", input_rank),
    Mutator("output-rank", "rank", output_rank),
)
