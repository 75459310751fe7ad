"""Grafting new nodes onto an existing model with the generator's own machinery.

:func:`builder_for` returns a :class:`generators.builder.GraphBuilder` whose pool holds the
model's statically shaped values and whose namer never repeats a name the model uses, so op
emitters, motifs and helpers (``unsqueeze``, ``cast``, ``reduce`` ...) append to a real model
exactly as they do during generation; :func:`merge` moves what the builder appended into the
model (nodes in topological order, initializers listed as inputs for IR < 4, opset imports for
new domains, model-local functions).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from onnx import ModelProto

from generators.builder import GraphBuilder
from generators.mutate.graph import (
    all_names,
    list_initializers_as_inputs,
    opset_of,
    static_values,
    toposort,
)
from generators.names import STYLE_NAMES, Namer
from generators.pooled_random import PooledRandom


class FreshNamer(Namer):
    """A :class:`generators.names.Namer` that skips every name in ``taken`` (and adds the
    names it gives to it).

    Args:
        style: a name style (``generators.names.STYLE_NAMES``).
        rng: random source.
        taken: names already used in the model.
    """

    __slots__ = ("taken",)

    def __init__(self, style: str, rng: random.Random, taken: set[str]) -> None:
        super().__init__(style, rng)
        self.taken = taken

    def _unique(self, make: Callable[[], str]) -> str:
        name = make()
        while not name or name in self.taken:
            name = make()
        self.taken.add(name)
        return name

    def node(self, op: str) -> str:
        """An unused node name in the namer's style (empty names stay possible)."""
        name = Namer.node(self, op)
        while name and name in self.taken:
            name = Namer.node(self, op)
        self.taken.add(name)
        return name

    def tensor(self, op: str) -> str:
        """An unused tensor name in the namer's style."""
        return self._unique(lambda: Namer.tensor(self, op))

    def weight(self, op: str) -> str:
        """An unused weight name in the namer's style."""
        return self._unique(lambda: Namer.weight(self, op))

    def graph_input(self) -> str:
        """An unused graph-input name in the namer's style."""
        return self._unique(lambda: Namer.graph_input(self))


def builder_for(model: ModelProto, rng: random.Random, pool: bool = True) -> GraphBuilder:
    """A GraphBuilder for appending to ``model``'s main graph: the model's default opset, a
    name style drawn from ``rng``, the model's statically shaped values in its pool (when
    ``pool``), its graph inputs and outputs known (so none is declared twice)."""
    opset = opset_of(model)
    b = GraphBuilder(rng, PooledRandom(rng), opset,
                     FreshNamer(rng.choice(STYLE_NAMES), rng, all_names(model)))
    b.input_names.update(i.name for i in model.graph.input)
    b.output_names.update(o.name for o in model.graph.output)
    if pool:
        b.pool.extend(static_values(model))
    return b


def merge(model: ModelProto, b: GraphBuilder) -> ModelProto:
    """Move the nodes, weights, graph inputs and outputs, value_info and model-local functions
    ``b`` appended into ``model`` (in place; returned). New node and function domains are
    imported at version 1; for IR < 4 new initializers are listed as graph inputs; nodes end
    in topological order.

    Raises:
        ValueError: the grafted nodes close a cycle.
    """
    g = model.graph
    known = {i.name for i in g.input}
    g.node.extend(b.nodes)
    g.initializer.extend(b.initializers)
    g.input.extend(i for i in b.inputs if i.name not in known)
    g.output.extend(b.outputs)
    g.value_info.extend(b.value_infos)
    model.functions.extend(b.functions)
    imported = {imp.domain or "ai.onnx" for imp in model.opset_import}
    new = {n.domain for n in b.nodes} | {f.domain for f in b.functions}
    for domain in sorted(new - {"", "ai.onnx"} - imported):
        imp = model.opset_import.add()
        imp.domain, imp.version = domain, 1
    list_initializers_as_inputs(model)
    toposort(g)
    return model
