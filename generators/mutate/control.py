"""Wrapping a region of the main graph in control flow whose bodies read the outer scope.

A region is a convex run of 1 to 3 nodes (:func:`generators.mutate.graph.regions`). Its nodes
move into a subgraph with fresh names for the tensors they make; the tensors they read from the
main graph stay outer-scope references.

- ``wrap-if``: an If whose branches are both the region (the else branch's first float output
  negated at times), on a constant condition (Constant node or initializer) or one computed
  from a graph input (its mean > 0).
- ``wrap-loop``: a Loop with trip count 1 whose body is the region; its outputs leave as scan
  outputs (one leading dim) and a Squeeze restores them.
"""

from __future__ import annotations

import random

import numpy as np
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TypeProto

from generators.builder import GraphBuilder
from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import (
    Region,
    all_names,
    fresh,
    infer_types,
    opset_of,
    region,
    rename,
    typed_value_info,
)
from generators.mutate.spec import Mutator
from generators.ops.reduce import reduce
from generators.ops.shape_ops import axes_operand
from generators.values import BOOL, FLOAT, INT64, Value

#: Largest region moved, in nodes.
MAX_REGION = 3
#: Regions drawn before giving up.
DRAWS = 8
#: Opset from which the condition may be computed (onnxruntime runs Greater on float32 from
#: Greater-7; the reduction before it keeps its attribute form until opset 18).
COMPUTED_CONDITION_SINCE = 9
#: Opset of Loop's present form (optional trip count and condition).
LOOP_SINCE = 11


def pick_region(model: ModelProto, rng: random.Random,
                types: dict[str, TypeProto]) -> Region | None:
    """A random region whose outputs all have known tensor types, or None."""
    g = model.graph
    if not g.node:
        return None
    for _ in range(DRAWS):
        start = rng.randrange(len(g.node))
        stop = min(len(g.node), start + rng.randint(1, MAX_REGION))
        r = region(g, start, stop)
        if r.outputs and all(o in types for o in r.outputs):
            return r
    return None


def draw_region(model: ModelProto, rng: random.Random) -> tuple[Region, dict[str, TypeProto],
                                                                  set[str]] | None:
    """A region (:func:`pick_region`), the main graph's tensor types and every name the model
    uses; None where no region fits."""
    types = infer_types(model)
    r = pick_region(model, rng, types)
    return None if r is None else (r, types, all_names(model))


def body(model: ModelProto, r: Region, types: dict[str, TypeProto], taken: set[str],
         name: str) -> GraphProto:
    """A subgraph holding copies of the region's nodes, every tensor they make renamed fresh,
    its outputs (typed) the region's outputs in order."""
    g = GraphProto()
    g.name = name
    for n in model.graph.node[r.start:r.stop]:
        g.node.add().CopyFrom(n)
    for made in [o for n in g.node for o in n.output if o]:
        rename(g, made, fresh(taken, made))
    renamed = {o: g.node[k].output[j] for k, n in enumerate(model.graph.node[r.start:r.stop])
               for j, o in enumerate(n.output) if o}
    g.output.extend(typed_value_info(renamed[o], types[o]) for o in r.outputs)
    return g


def replace(model: ModelProto, r: Region, nodes: list[NodeProto]) -> None:
    """Put ``nodes`` where the region's nodes were, and drop value_info of tensors that now
    live only inside subgraphs (in place)."""
    g = model.graph
    keep = list(g.node[:r.start]) + nodes + list(g.node[r.stop:])
    copies = []
    for n in keep:
        c = NodeProto()
        c.CopyFrom(n)
        copies.append(c)
    del g.node[:]
    g.node.extend(copies)
    made = {o for n in g.node for o in n.output}
    live = [vi for vi in g.value_info if vi.name in made]
    del g.value_info[:]
    g.value_info.extend(live)


def _condition(b: GraphBuilder, model: ModelProto, rng: random.Random) -> str:
    inits = {t.name for t in model.graph.initializer}
    floats = [i for i in model.graph.input if i.name not in inits and
              i.type.tensor_type.elem_type == FLOAT and i.type.tensor_type.HasField("shape")]
    if floats and b.opset >= COMPUTED_CONDITION_SINCE and rng.random() < 0.5:
        x = rng.choice(floats)
        rank = len(x.type.tensor_type.shape.dim)
        xv = Value(x.name, FLOAT, (1,) * rank)
        m = reduce(b, "ReduceMean", xv, axes=list(range(rank)), keepdims=0) if rank else xv
        zero = b.scalar(0.0, FLOAT, "Greater")
        return b.op("Greater", [m, zero], BOOL, ()).name
    placement = rng.choice(["constant", "initializer"])
    return b.const(np.asarray(rng.random() < 0.5), "If", placement=placement).name


def _negate_first_float(g: GraphProto, taken: set[str]) -> None:
    for out in g.output:
        if out.type.tensor_type.elem_type == FLOAT:
            neg = g.node.add()
            neg.op_type = "Neg"
            neg.input.append(out.name)
            out.name = fresh(taken, out.name + "_neg")
            neg.output.append(out.name)
            return


def wrap_if(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Move a region into both branches of an If (see the module docstring)."""
    drawn = draw_region(model, rng)
    if drawn is None:
        return None
    r, types, taken = drawn
    then_g = body(model, r, types, taken, "then_branch")
    else_g = body(model, r, types, taken, "else_branch")
    if rng.random() < 0.5:
        _negate_first_float(else_g, taken)
    b = builder_for(model, rng, pool=False)
    cond = _condition(b, model, rng)
    node = NodeProto(op_type="If", input=[cond], output=r.outputs,
                     name=fresh(taken, "If_region"))
    node.attribute.add(name="then_branch", type=AttributeProto.GRAPH).g.CopyFrom(then_g)
    node.attribute.add(name="else_branch", type=AttributeProto.GRAPH).g.CopyFrom(else_g)
    replace(model, r, [node])
    return merge(model, b)


def wrap_loop(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Move a region into the body of a Loop with trip count 1 (see the module docstring)."""
    drawn = draw_region(model, rng) if opset_of(model) >= LOOP_SINCE else None
    if drawn is None:
        return None
    r, types, taken = drawn
    g = body(model, r, types, taken, "loop_body")
    it, cond_in = fresh(taken, "iteration_num"), fresh(taken, "cond_in")
    g.input.extend([typed_value_info(it, _scalar(INT64)), typed_value_info(cond_in,
                                                                           _scalar(BOOL))])
    cond_out = fresh(taken, "cond_out")
    g.node.add(op_type="Identity", input=[cond_in], output=[cond_out])
    g.output.insert(0, typed_value_info(cond_out, _scalar(BOOL)))
    b = builder_for(model, rng, pool=False)
    trip = b.const(np.asarray(1, np.int64), "Loop", placement=rng.choice(
        ["constant", "initializer"])).name
    keep_going = "" if rng.random() < 0.5 else b.const(np.asarray(True), "Loop").name
    scans = [fresh(taken, o + "_scan") for o in r.outputs]
    node = NodeProto(op_type="Loop", input=[trip, keep_going], output=scans,
                     name=fresh(taken, "Loop_region"))
    node.attribute.add(name="body", type=AttributeProto.GRAPH).g.CopyFrom(g)
    for scan, out in zip(scans, r.outputs, strict=True):
        form = axes_operand(b, "Squeeze", [0], 13)
        b.node("Squeeze", [scan, *form["inputs"]], outputs=[out], **form["attrs"])
    replace(model, r, [node])
    return merge(model, b)


def _scalar(elem: int) -> TypeProto:
    tp = TypeProto()
    tp.tensor_type.elem_type = elem
    tp.tensor_type.shape.SetInParent()
    return tp


MUTATORS = (
    Mutator("wrap-if", "control-flow", wrap_if),
    Mutator("wrap-loop", "control-flow", wrap_loop),
)
