"""Tensor renaming: one tensor (graph input, initializer, intermediate or graph output) takes a
name that optimizers mishandle.

New names (design.md, "Known pitfalls"): plain numbers (``8``) as old PyTorch exporters write
and as onnx's IR names values it creates itself; the optimizer's own temporaries (``_v_12``
for values onnx's IR creates, ``input_0`` / ``output_0`` of onnxoptimizer's
``rename_input_output``); another tensor's name plus a suffix (``x_0``, ``x:0``, ``x.1``,
``x/``). Names stay unique, so graph outputs stay distinct.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from onnx import ModelProto

from fuzzer.registry import Registry
from generators.graphs import defined
from generators.mutate.graph import all_names, fresh, rename
from generators.mutate.spec import Mutator

#: Suffixes appended to another tensor's name.
SUFFIXES: tuple[str, ...] = ("_0", ":0", ".1", "/", "_output_0", "__1", "_1")

#: name style -> ``(rng, names in the graph, graph size) -> candidate``.
STYLES: Registry[Callable[[random.Random, list[str], int], str]] = Registry(
    "renaming style", {
    "number": lambda rng, names, n: str(rng.randint(0, 2 * n + 8)),
    "ir-temporary": lambda rng, names, n: f"_v_{rng.randint(0, 2 * n + 8)}",
    "renamed-interface": lambda rng, names, n: f"{rng.choice(['input', 'output'])}_"
                                               f"{rng.randint(0, 3)}",
    "suffixed": lambda rng, names, n: rng.choice(names) + rng.choice(SUFFIXES),
})


def rename_tensor(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Rename one tensor of the main graph everywhere it appears (subgraphs included)."""
    g = model.graph
    names = defined(g)
    if not names:
        return None
    old = rng.choice(names)
    taken = all_names(model)
    style = STYLES[rng.choice(tuple(STYLES))]
    for _ in range(8):
        new = style(rng, names, len(g.node))
        if new not in taken:
            break
    else:
        new = fresh(taken, new)
    rename(g, old, new)
    return model


MUTATORS = (Mutator("rename-tensor", "name", rename_tensor),)
