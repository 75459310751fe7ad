"""A deliberately buggy target, for tests and for checking a setup end to end.

Its "passes" are bugs, applied in the order of the pass list:

==============  =============================================================
pass            effect on the model
==============  =============================================================
``clean``       none (a correct pass)
``nop-*``       none (filler passes, e.g. to build long pass lists)
``raise``       raises RuntimeError naming a node (``optimizer-error``)
``abort``       ``os.abort()`` (``optimizer-abort``, SIGABRT)
``segv``        kills itself with SIGSEGV (``optimizer-abort``)
``hang``        sleeps forever (``hang``)
``drop-node``   bypasses the last unary elementwise node (``output-mismatch``)
``drop-middle`` bypasses the unary elementwise node nearest the middle of the node list
                (``output-mismatch`` deep inside a large model)
``invalid``     rewires a node to an undefined tensor (``invalid-model``)
``bloat``       adds a dead Identity node and an unused initializer (``bloat``)
``pair-a``,     raise together, and only together (an interaction bug that needs
``pair-b``      two passes)
==============  =============================================================

Set ``OPTFUZZ_FAKE_FIXED=raise,drop-node`` to switch bugs off (they become ``clean``), which
models a new release of the optimizer that fixed them.
"""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any

UNARY = ("Neg", "Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Abs", "Relu", "Softplus", "Sqrt",
         "Log", "Reciprocal", "Floor", "Ceil", "Erf", "Elu", "LeakyRelu", "Selu", "HardSigmoid")
BUGS = ("raise", "abort", "segv", "hang", "drop-node", "drop-middle", "invalid", "bloat",
        "pair-a", "pair-b")


class FakeTarget:
    """A target whose passes are the bugs listed in the module docstring.

    Configuration: ``{"passes": [names], "fixed_point": bool}``; ``fixed_point`` is accepted
    and ignored.
    """

    name = "fake"

    def version(self) -> str:
        fixed = os.environ.get("OPTFUZZ_FAKE_FIXED", "")
        return "1.0" + (f"+fixed.{fixed.replace(',', '.')}" if fixed else "")

    def available_passes(self) -> list[str]:
        return ["clean", *BUGS]

    def accepts_pass(self, name: str) -> bool:
        """Whether ``name`` is a pass of this target: a listed one or a ``nop-*`` filler."""
        return name in self.available_passes() or name.startswith("nop-")

    def default_config(self) -> dict[str, Any]:
        return {"passes": ["clean"], "fixed_point": False}

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        pool = passes or self.available_passes()
        return {"passes": [rng.choice(pool)], "fixed_point": False}

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        import onnx

        fixed = set(filter(None, os.environ.get("OPTFUZZ_FAKE_FIXED", "").split(",")))
        passes = [p for p in config.get("passes") or [] if p not in fixed]
        out = onnx.ModelProto()
        out.CopyFrom(model)
        graph = out.graph
        if "pair-a" in passes and "pair-b" in passes:
            raise RuntimeError("fake: pair-a and pair-b disagree about the graph")
        for name in passes:
            if name == "raise":
                node = graph.node[0].name if graph.node else "?"
                raise RuntimeError(f"fake pass failed at node '{node}' (index 0x{id(out):x})")
            if name == "abort":
                os.abort()
            if name == "segv":
                os.kill(os.getpid(), signal.SIGSEGV)
                time.sleep(5)
            if name == "hang":
                while True:
                    time.sleep(3600)
            if name == "drop-node":
                _bypass_unary(graph)
            if name == "drop-middle":
                _bypass_unary(graph, middle=True)
            if name == "invalid" and graph.node:
                graph.node[-1].input[0] = "fake_undefined_tensor"
            if name == "bloat":
                graph.initializer.append(
                    onnx.helper.make_tensor("fake_unused", onnx.TensorProto.FLOAT, [4], [0.0] * 4))
                src = graph.input[0].name if graph.input else graph.node[0].output[0]
                graph.node.append(onnx.helper.make_node("Identity", [src], ["fake_dead"]))
        return out

    def repro_snippet(self, config: dict[str, Any]) -> str:
        return (
            "from fuzzer.targets.fake import FakeTarget\n"
            f"optimized = FakeTarget().optimize(model, {config!r})\n"
        )


def _bypass_unary(graph: Any, middle: bool = False) -> None:
    """Remove the last unary elementwise node (or the one nearest the middle of the node
    list) and feed its consumers from its input."""
    order = range(len(graph.node) - 1, -1, -1)
    if middle:
        order = sorted(order, key=lambda i: abs(i - len(graph.node) // 2))
    for index in order:
        node = graph.node[index]
        if node.op_type in UNARY and node.input:
            src, dst = node.input[0], node.output[0]
            del graph.node[index]
            for other in graph.node:
                for i, name in enumerate(other.input):
                    if name == dst:
                        other.input[i] = src
            for out in graph.output:
                if out.name == dst:
                    # keep the graph output name: re-create it with an Identity
                    graph.node.append(_identity(src, dst))
            return


def _identity(src: str, dst: str) -> Any:
    import onnx

    return onnx.helper.make_node("Identity", [src], [dst])
