"""Chains of model-local functions, each calling the next, for onnx's function inliner
(``inline_local_functions``): the inliner must bind every level's names apart, including a
body name that equals one of the caller's."""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.functions import FUNCTIONS_SINCE, body_node, call, declare, fname
from generators.motifs.spec import Motif
from generators.values import Value


def _chain(b: GraphBuilder, x: Value) -> Value:
    """Three functions in one domain, each calling the one below it once; every level names
    its intermediate ``t`` and the innermost is a Softplus."""
    domain = b.rng.choice(["local", "pkg.inliner"])
    callee = declare(b, fname(b, "Level0"), ["X"], ["Y"],
                     [body_node("Softplus", ["X"], ["Y"])], domain=domain)
    for level in (1, 2):
        callee = declare(b, fname(b, f"Level{level}"), ["X"], ["Y"],
                         [body_node(callee.name, ["X"], ["t"], domain=domain),
                          body_node("Add", ["t", "X"], ["Y"])], domain=domain)
    return call(b, callee, x, x.shape)


MOTIFS = (Motif("inliner-chain", ("inline_local_functions",), emit=_chain,
                since=FUNCTIONS_SINCE),)
#: drawn only for a hint of ``inline_local_functions``: other targets' models stay as they
#: were with this package installed.
HINTED_ONLY = True
