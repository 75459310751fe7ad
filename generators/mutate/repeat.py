"""A node repeated in place: a copy of a one-input, one-output node whose output type is its
input type (a unary elementwise op, a Transpose with a square permutation, ...) inserted
right after it, reading its output; its consumers (and a graph output of that name) then read
the copy. Passes that fuse or drop consecutive ops (idempotent ops, consecutive transposes,
squeezes, casts) see a longer run each time, and a run that one repetition lengthens is
the small step a coverage-guided search climbs by."""

from __future__ import annotations

import random

from onnx import ModelProto

from generators.graphs import subgraphs
from generators.mutate.graph import all_names, fresh, infer_types, redirect
from generators.mutate.spec import Mutator


def repeat_node(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Repeat one node whose single output has its single input's type (see the module
    docstring); None where no node qualifies."""
    graph = model.graph
    types = infer_types(model)
    cands = [k for k, n in enumerate(graph.node)
             if len(n.input) == 1 and len(n.output) == 1 and not subgraphs(n)
             and n.input[0] in types and n.output[0] in types
             and types[n.input[0]] == types[n.output[0]]]
    if not cands:
        return None
    k = rng.choice(cands)
    node = graph.node[k]
    old = node.output[0]
    taken = all_names(model)
    new = fresh(taken, f"{old}_again")
    copy = graph.node.add()
    copy.CopyFrom(node)
    copy.input[0] = old
    copy.output[0] = new
    if copy.name:
        copy.name = fresh(taken, f"{node.name}_again")
    for j, other in enumerate(graph.node):
        if j != k and other is not copy:
            redirect(other, old, new)
    for out in graph.output:
        if out.name == old:
            out.name = new
    # keep topological order: move the copy right after the node it repeats
    nodes = list(graph.node)
    nodes.insert(k + 1, nodes.pop())
    del graph.node[:]
    graph.node.extend(nodes)
    return model


MUTATORS = (Mutator("repeat-node", "splice", repeat_node),)
