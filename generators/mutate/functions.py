"""Moving a region of the main graph into a model-local function (``ModelProto.functions``)
called once in its place, as torch.onnx's dynamo exporter keeps modules.

The region (:func:`generators.mutate.control.draw_region`; nodes without subgraphs, which
could not see the graph's scope from a function, and without sparse Constants) becomes the
body; the tensors it reads become the function's inputs and the tensors later nodes read its
outputs. Inside, the names are either the graph's own or short ones (``x0``, ``t1``, ``y0``)
that the graph may also use, so an inliner must rename. The function imports the model's
default opset and the domains of its nodes, declared with
:func:`generators.motifs.functions.declare`; the model imports the function's domain.
Needs IR 8 (opset 15).
"""

from __future__ import annotations

import random

from onnx import GraphProto, ModelProto, NodeProto

from generators.graphs import subgraphs
from generators.motifs.functions import FUNCTIONS_SINCE, declare
from generators.mutate.control import draw_region, replace
from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import fresh, opset_of, rename
from generators.mutate.spec import Mutator

#: IR version of model-local functions.
FUNCTIONS_IR = 8
#: Function names in the style of exporters that keep modules.
STEMS: tuple[str, ...] = ("torch_nn_modules_linear_Linear", "Block", "region", "mlp",
                          "custom_op")


def _movable(node: NodeProto) -> bool:
    """Whether ``node`` may move into a function body: no subgraph (it could not see the
    graph's scope), no Constant with ``sparse_value`` (onnxruntime 1.32 crashes with a
    segmentation fault creating a second session of such a model)."""
    return not subgraphs(node) and not (node.op_type == "Constant" and any(
        a.name == "sparse_value" for a in node.attribute))


def region_to_function(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Move a region into a new model-local function called in its place."""
    if opset_of(model) < FUNCTIONS_SINCE or model.ir_version < FUNCTIONS_IR:
        return None
    drawn = draw_region(model, rng)
    if drawn is None or not all(_movable(n) for n in model.graph.node[drawn[0].start:
                                                                       drawn[0].stop]):
        return None
    r, _, taken = drawn
    scope = GraphProto()
    scope.node.extend(model.graph.node[r.start:r.stop])
    inputs, outputs = list(r.inputs), list(r.outputs)
    if rng.random() < 0.5:
        made = [o for n in scope.node for o in n.output if o and o not in outputs]
        plan = [(x, f"x{k}") for k, x in enumerate(inputs)] + \
            [(y, f"y{k}") for k, y in enumerate(outputs)] + \
            [(t, f"t{k}") for k, t in enumerate(made)]
        temporary = {old: f"\x00{k}" for k, (old, _) in enumerate(plan)}
        for old, tmp in temporary.items():
            rename(scope, old, tmp)
        for (_, new), tmp in zip(plan, temporary.values(), strict=True):
            rename(scope, tmp, new)
        formal_in = [new for _, new in plan[:len(inputs)]]
        formal_out = [new for _, new in plan[len(inputs):len(inputs) + len(outputs)]]
    else:
        formal_in, formal_out = inputs, outputs
    b = builder_for(model, rng, pool=False)
    f = declare(b, fresh(taken | {fn.name for fn in model.functions}, rng.choice(STEMS)),
                formal_in, formal_out, list(scope.node))
    call = NodeProto(op_type=f.name, domain=f.domain, input=inputs, output=outputs)
    replace(model, r, [call])
    return merge(model, b)


MUTATORS = (Mutator("region-to-function", "function", region_to_function),)
