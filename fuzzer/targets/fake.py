"""A deliberately buggy target, for tests and for checking a setup end to end.

Its "passes" are bugs (the registry :data:`PASSES`), applied in the order of the pass list:

=================  ==========================================================================
pass               effect on the model
=================  ==========================================================================
``clean``          none (a correct pass)
``nop-*``          none (filler passes, e.g. to build long pass lists)
``raise``          raises RuntimeError naming a node (``optimizer-error``)
``abort``          ``os.abort()`` (``optimizer-abort``, SIGABRT)
``segv``           kills itself with SIGSEGV (``optimizer-abort``)
``hang``           sleeps forever (``hang``)
``drop-node``      bypasses the last unary elementwise node (``output-mismatch``)
``drop-middle``    bypasses the unary elementwise node nearest the middle of the node list
                   (``output-mismatch`` deep inside a large model)
``invalid``        rewires a node to an undefined tensor (``invalid-model``)
``bloat``          adds a dead Identity node and an unused initializer (``bloat``)
``load-fail``      appends a node of an unregistered domain (``load-failure``)
``run-fail``       reshapes the first graph output to twice its dims, computed at run time
                   (``runtime-failure``)
``rename-output``  renames the first graph output (``metadata-change``)
``hog``            allocates 3 GiB and frees it (``optimizer-error`` under a smaller
                   address-space limit)
``pair-a``,        raise together, and only together (an interaction bug that needs
``pair-b``         two passes)
``fold``           two bugs in one pass, with different crash sites: ``fake/fold.cc:41`` on
                   a graph with a Neg node, else ``fake/fold.cc:97`` on one with an Exp node
``fuse-x``,        the same message (``shape mismatch at node '<name>'``) from two passes:
``fuse-y``         ``fuse-x`` on a graph with a Sigmoid node, ``fuse-y`` with a Tanh node
``bad-neg``        replaces every Neg node by an Identity (``output-mismatch``)
``leave-dead``     adds a dead Identity node (``bloat`` that is gone after dead-end
                   elimination: documented behaviour ``fake-dead-ends``)
``bump-ir``        raises the IR version by one below 10 (``metadata-change``: documented
                   behaviour ``fake-ir-upgrade``)
``twin``           gives the first node a second output named like the last node's output
                   (``invalid-model``: two producers of one tensor)
``counter-clash``  raises ``fake/counter.cc:7`` where a tensor is named like the number of
                   the graph's values (inputs, initializers, node outputs): the name an
                   optimizer numbering its temporaries from onnx IR's value counter makes
``expose-twin``    raises ``fake/expose.cc:12`` where a tensor has two producers: alone it
                   never fails, after ``twin`` it turns twin's damage into a crash (the
                   breaking pass is ``twin``, ``expose-twin`` only exposes it)
``rank0-shape``    writes rank 0 as the shape of the first node's output into value_info;
                   like onnx IR, it writes no value_info for a value whose element type the
                   model does not declare, so alone it leaves no trace on such a model
``trust-shape``    copies the declared shape of the first node's output onto the graph input
                   it reads where that node is unary elementwise (a correct rewrite: the
                   shapes are equal), so after ``rank0-shape`` the input becomes rank 0
                   (the culprit is ``rank0-shape``, ``trust-shape`` only exposes it)
``drop-transpose`` bypasses the first Transpose: wrong outputs, an invalid model or a run-time
                   failure, depending on what reads its result (one fault, three symptoms)
``bad-unary``      two faults in one pass with one symptom (``output-mismatch``): replaces
                   every Sin by Cos, and every Exp by Abs
``name-leak``      raises ``fake/init.cc:3: <name> in initializer but not in graph input``
                   with the first graph input's name unquoted (a message that carries the
                   model's own names)
``slow-quadratic`` a naive common-subexpression search: every node compared with every
                   other node, O(n^2) in the node count (``slow`` on a long chain)
``slow-linear``    the same comparison :data:`LINEAR_PEERS` times per node:
                   O(n), as costly as ``slow-quadratic`` at that many nodes (never ``slow``)
``leak``           keeps :data:`LEAK_BYTES` of memory per call in its process (a leak that
                   worker recycling must bound)
``ladder``         raises ``fake/ladder.cc:6`` on a run of :data:`LADDER_DEPTH` Neg nodes,
                   each reading the one before; each shorter run is a branch edge of its
                   own (:func:`fuzzer.targets.hits.hit`): the planted deep branch that
                   coverage guidance climbs to and chance does not reach
``double-free``    frees one heap block twice (through libc, with ctypes) on a graph with an
                   Exp node: ``memory-error`` under the sanitizer runtime (``--build
                   sanitize``), else glibc's own check aborts (``optimizer-abort``)
``double-free-b``  the same double free, reached from another pass: one memory fault, one
                   crash state (``fuzz --crash-states``), the ground truth of crash states
``pause``          sleeps :data:`PAUSE_SECONDS`, then leaves the model as it is: a slow
                   case that is no hang (past a calibrated time limit, not past the
                   per-case timeout: :mod:`fuzzer.campaign.calibration`)
=================  ==========================================================================

Campaigns draw one to three passes of the pool in random order, so localization has lists
to search; ``hog``, the ``slow-*`` passes, ``leak``, ``ladder`` and the ``double-free``
passes only run where ``--passes`` names them.

Set ``OPTFUZZ_FAKE_FIXED=raise,drop-node`` to switch bugs off (they become ``clean``), which
models a new release of the optimizer that fixed them. An installed distribution
``optfuzz-fake`` (:data:`RELEASE_MODULE`, whose ``FIXED`` lists the bugs it does not have) models
a release that can be installed into an environment of its own: its version is the target's,
and its ``FIXED`` bugs are off as with the variable (``optfuzz replay --against`` and
``optfuzz bisect`` install such wheels).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any

from fuzzer.registry import Registry
from fuzzer.targets.base import DocumentedBehaviour, Target
from oracles import shows

#: module of the installed ``optfuzz-fake`` release, if any; ``FIXED``: the bugs it lacks.
RELEASE_MODULE = "optfuzz_fake"
UNARY = ("Neg", "Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Abs", "Relu", "Softplus", "Sqrt",
         "Log", "Reciprocal", "Floor", "Ceil", "Erf", "Elu", "LeakyRelu", "Selu", "HardSigmoid")
FAKE_DOMAIN = "optfuzz.fake"


def _raise(graph: Any) -> None:
    node = graph.node[0].name if graph.node else "?"
    raise RuntimeError(f"fake pass failed at node '{node}' (index 0x{id(graph):x})")


def _segv(graph: Any) -> None:
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)


def _hang(graph: Any) -> None:
    while True:
        time.sleep(3600)


def _pause(graph: Any) -> None:
    time.sleep(PAUSE_SECONDS)


def _invalid(graph: Any) -> None:
    for node in reversed(graph.node):
        if node.input:
            node.input[0] = "fake_undefined_tensor"
            return


def _bloat(graph: Any) -> None:
    import onnx

    graph.initializer.append(
        onnx.helper.make_tensor("fake_unused", onnx.TensorProto.FLOAT, [4], [0.0] * 4))
    src = graph.input[0].name if graph.input else graph.node[0].output[0]
    graph.node.append(onnx.helper.make_node("Identity", [src], ["fake_dead"]))


def _before_first_output(graph: Any, suffix: str) -> tuple[str, str] | None:
    """Rename the tensor of the first graph output at its producer to ``<name><suffix>``;
    return ``(new name, output name)``, or None when no node produces it."""
    if not graph.output:
        return None
    name = graph.output[0].name
    for node in graph.node:
        for index, out in enumerate(node.output):
            if out == name:
                node.output[index] = name + suffix
                for other in graph.node:
                    other.input[:] = [name + suffix if i == name else i for i in other.input]
                return name + suffix, name
    return None


def _load_fail(graph: Any) -> None:
    import onnx

    names = _before_first_output(graph, "_pre")
    if names is not None:
        graph.node.append(onnx.helper.make_node("Mystery", [names[0]], [names[1]],
                                                domain=FAKE_DOMAIN))


def _run_fail(graph: Any) -> None:
    import numpy as np
    import onnx

    names = _before_first_output(graph, "_pre")
    if names is None:
        return
    graph.initializer.append(onnx.numpy_helper.from_array(np.array([2], np.int64), "fake_two"))
    graph.node.extend([
        onnx.helper.make_node("Shape", [names[0]], ["fake_shape"]),
        onnx.helper.make_node("Mul", ["fake_shape", "fake_two"], ["fake_twice"]),
        onnx.helper.make_node("Reshape", [names[0], "fake_twice"], [names[1]])])


def _rename_output(graph: Any) -> None:
    names = _before_first_output(graph, "_renamed")
    if names is not None:
        graph.output[0].name = names[0]


def _named(graph: Any, op_type: str) -> str | None:
    """The name (or first output) of the first ``op_type`` node, or None when there is none."""
    for node in graph.node:
        if node.op_type == op_type:
            return node.name or node.output[0]
    return None


def _fold(graph: Any) -> None:
    neg, exp = _named(graph, "Neg"), _named(graph, "Exp")
    if neg is not None:
        raise RuntimeError(f"fake/fold.cc:41: Assertion `rank <= 4` failed for node '{neg}' "
                           f"(0x{id(graph):x})")
    if exp is not None:
        raise RuntimeError(f"fake/fold.cc:97: unsupported input of '{exp}' with 3 dims")


def _fuse(op_type: str) -> Callable[[Any], None]:
    def fuse(graph: Any) -> None:
        name = _named(graph, op_type)
        if name is not None:
            raise RuntimeError(f"shape mismatch at node '{name}'")
    return fuse


def _bad_neg(graph: Any) -> None:
    for node in graph.node:
        if node.op_type == "Neg":
            node.op_type = "Identity"


def _leave_dead(graph: Any) -> None:
    import onnx

    if graph.input:
        graph.node.append(onnx.helper.make_node("Identity", [graph.input[0].name],
                                                ["fake_dead_end"]))


def _hog(graph: Any) -> None:
    import numpy as np

    block = np.ones(3 << 27, dtype=np.float64)  # 3 GiB
    del block


#: pass name -> what it does to the graph (in place); ``clean`` and ``nop-*`` do nothing.
def _twin(graph: Any) -> None:
    if len(graph.node) >= 2 and graph.node[-1].output:
        graph.node[0].output.append(graph.node[-1].output[0])


def _counter_clash(graph: Any) -> None:
    inputs = {i.name for i in graph.input}
    count = len(inputs) + sum(t.name not in inputs for t in graph.initializer) + \
        sum(len(node.output) for node in graph.node)
    names = inputs | {t.name for t in graph.initializer} | \
        {out for node in graph.node for out in node.output}
    if str(count) in names:
        raise RuntimeError(f"fake/counter.cc:7: generated name '{count}' is taken")


def _expose_twin(graph: Any) -> None:
    produced = [out for node in graph.node for out in node.output if out]
    if len(produced) != len(set(produced)):
        raise RuntimeError("fake/expose.cc:12: tensor produced twice")


def _value_info(graph: Any, name: str) -> Any:
    """The value_info entry of ``name`` in ``graph``, added (with no type) where missing."""
    for value in graph.value_info:
        if value.name == name:
            return value
    value = graph.value_info.add()
    value.name = name
    return value


def _rank0_shape(graph: Any) -> None:
    if not graph.node or not graph.node[0].output:
        return
    value = _value_info(graph, graph.node[0].output[0])
    value.type.tensor_type.shape.Clear()  # rank 0, element type as declared (0: unknown)
    value.type.tensor_type.shape.SetInParent()


def _trust_shape(graph: Any) -> None:
    if not graph.node or graph.node[0].op_type not in UNARY or not graph.node[0].input:
        return
    node = graph.node[0]
    declared = next((v for v in graph.value_info if v.name == node.output[0]), None)
    if declared is None or not declared.type.tensor_type.HasField("shape"):
        return
    for value in graph.input:
        if value.name == node.input[0]:
            value.type.tensor_type.shape.CopyFrom(declared.type.tensor_type.shape)


def _drop_transpose(graph: Any) -> None:
    for index, node in enumerate(graph.node):
        if node.op_type == "Transpose" and node.input:
            _bypass(graph, index)
            return


def _bad_unary(graph: Any) -> None:
    for node in graph.node:
        if node.op_type == "Sin":
            node.op_type = "Cos"
        elif node.op_type == "Exp":
            node.op_type = "Abs"


def _name_leak(graph: Any) -> None:
    if graph.input:
        raise RuntimeError(f"fake/init.cc:3: {graph.input[0].name} in initializer but not in "
                           "graph input")


def _forget_untyped(graph: Any) -> None:
    """Drop value_info entries of unknown element type, as onnx IR's serializer does."""
    kept = [v for v in graph.value_info if v.type.tensor_type.elem_type]
    del graph.value_info[:]
    graph.value_info.extend(kept)


#: peers each node is compared with by ``slow-linear``.
LINEAR_PEERS = 512
#: seconds ``pause`` sleeps: a slow case that is no hang (the ground truth of a calibrated
#: time limit's candidates, :mod:`fuzzer.campaign.calibration`).
PAUSE_SECONDS = 1.5
#: bytes ``leak`` keeps per call.
LEAK_BYTES = 2 << 20
_leaked: list[Any] = []


def _slow_quadratic(graph: Any) -> None:
    ops = [node.op_type for node in graph.node]
    sum(a == b for a in ops for b in ops)  # one string comparison per pair of nodes


def _slow_linear(graph: Any) -> None:
    ops = [node.op_type for node in graph.node]
    first = ops[0] if ops else ""
    sum(a == first for a in ops for _ in range(LINEAR_PEERS))  # the same, LINEAR_PEERS each


def _leak(graph: Any) -> None:
    import numpy as np

    _leaked.append(np.ones(LEAK_BYTES // 8))  # touched pages: resident, never freed


#: the run of consecutive Neg nodes at which ``ladder`` fails.
LADDER_DEPTH = 6


def _ladder(graph: Any) -> None:
    from fuzzer.targets.hits import hit

    run: dict[str, int] = {}  # tensor -> Neg nodes in the run that ends in it
    longest = 0
    for node in graph.node:
        if node.op_type == "Neg" and node.input and node.output:
            run[node.output[0]] = run.get(node.input[0], 0) + 1
            longest = max(longest, run[node.output[0]])
    for depth in range(1, min(longest, LADDER_DEPTH) + 1):
        hit(f"ladder-{depth}")
    if longest >= LADDER_DEPTH:
        raise RuntimeError(f"fake/ladder.cc:6: a run of {longest} Neg nodes")


def _double_free(graph: Any) -> None:
    import ctypes

    if not any(node.op_type == "Exp" for node in graph.node):
        return
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    block = libc.malloc(64)
    libc.free(block)
    libc.free(block)


#: passes drawn only where a user names them (they cost memory or time, not bugs of output,
#: or, for ``ladder``, need a guided campaign; ``double-free`` is a sanitizer's to report;
#: ``exit`` ends the worker with status 0, an end pebble alone does not see; the last five
#: are the ground truth of the culprit search, of one bundle per fault across symptoms and
#: of names kept out of keys, which their tests run on models of their own)
ON_REQUEST = frozenset({"hog", "slow-quadratic", "slow-linear", "leak", "ladder",
                        "double-free", "double-free-b", "exit", "rank0-shape", "trust-shape",
                        "drop-transpose",
                        "bad-unary", "name-leak", "pause"})


PASSES: Registry[Callable[[Any], None]] = Registry("fake pass", {
    "clean": lambda graph: None,
    "raise": _raise,
    "abort": lambda graph: os.abort(),
    "segv": _segv,
    "hang": _hang,
    "drop-node": lambda graph: _bypass_unary(graph),
    "drop-middle": lambda graph: _bypass_unary(graph, middle=True),
    "invalid": _invalid,
    "bloat": _bloat,
    "load-fail": _load_fail,
    "run-fail": _run_fail,
    "rename-output": _rename_output,
    "hog": _hog,
    "pair-a": lambda graph: None,
    "pair-b": lambda graph: None,
    "fold": _fold,
    "fuse-x": _fuse("Sigmoid"),
    "fuse-y": _fuse("Tanh"),
    "bad-neg": _bad_neg,
    "leave-dead": _leave_dead,
    "bump-ir": lambda graph: None,  # a model-level change: see FakeTarget.optimize
    "twin": _twin,
    "counter-clash": _counter_clash,
    "expose-twin": _expose_twin,
    "slow-quadratic": _slow_quadratic,
    "slow-linear": _slow_linear,
    "leak": _leak,
    "ladder": _ladder,
    "double-free": _double_free,
    "double-free-b": _double_free,
    "exit": lambda graph: os._exit(0),
    "rank0-shape": _rank0_shape,
    "trust-shape": _trust_shape,
    "drop-transpose": _drop_transpose,
    "bad-unary": _bad_unary,
    "name-leak": _name_leak,
    "pause": _pause,
})
BUGS = tuple(name for name in PASSES if name != "clean")

#: the fake target's documented behaviours (the ground truth of "not a bug").
DOCUMENTED = (
    DocumentedBehaviour(
        "fake-ir-upgrade", "fuzzer/targets/fake.py: bump-ir raises the IR version",
        lambda finding, config: shows(finding, "metadata-change")
        and finding.message.startswith("IR version")),
    DocumentedBehaviour(
        "fake-dead-ends", "fuzzer/targets/fake.py: leave-dead leaves a dead node",
        lambda finding, config: shows(finding, "bloat")
        and finding.detail.get("survives_cleanup") is False),
)


class FakeTarget(Target):
    """A target whose passes are the bugs listed in the module docstring.

    Configuration: ``{"passes": [names], "fixed_point": bool}``; ``fixed_point`` is accepted
    and ignored.
    """

    name = "fake"
    package = "optfuzz-fake"
    reports_edges = True
    code_coverage = "hits"

    def version(self) -> str:
        from importlib import metadata

        try:
            release = metadata.version(self.package)
        except metadata.PackageNotFoundError:
            release = "1.0"
        fixed = os.environ.get("OPTFUZZ_FAKE_FIXED", "")
        return release + (f"+fixed.{fixed.replace(',', '.')}" if fixed else "")

    def available_passes(self) -> list[str]:
        return list(PASSES)

    def accepts_pass(self, name: str) -> bool:
        """Whether ``name`` is a pass of this target: a listed one or a ``nop-*`` filler."""
        return name in PASSES or name.startswith("nop-")

    def default_passes(self) -> list[str]:
        return ["clean"]

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        pool = passes or [p for p in self.available_passes() if p not in ON_REQUEST]
        return {"passes": rng.sample(pool, rng.randint(1, min(3, len(pool)))),
                "fixed_point": False}

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        import onnx

        passes = [p for p in self.passes_of(config) if p not in fixed_bugs()]
        out = onnx.ModelProto()
        out.CopyFrom(model)
        if "pair-a" in passes and "pair-b" in passes:
            raise RuntimeError("fake: pair-a and pair-b disagree about the graph")
        if "load-fail" in passes and all(o.domain != FAKE_DOMAIN for o in out.opset_import):
            out.opset_import.append(onnx.helper.make_opsetid(FAKE_DOMAIN, 1))
        for name in passes:
            PASSES.get(name, PASSES["clean"])(out.graph)
        if "bump-ir" in passes and out.ir_version < 10:
            out.ir_version += 1
        _forget_untyped(out.graph)
        return out

    def repro_snippet(self, config: dict[str, Any]) -> str:
        return (
            "from fuzzer.targets.fake import FakeTarget\n"
            f"optimized = FakeTarget().optimize(model, {config!r})\n"
        )


def fixed_bugs() -> set[str]:
    """The passes whose bug is switched off: those ``OPTFUZZ_FAKE_FIXED`` names and the
    ``FIXED`` of an installed release (:data:`RELEASE_MODULE`)."""
    import importlib

    fixed = set(filter(None, os.environ.get("OPTFUZZ_FAKE_FIXED", "").split(",")))
    try:
        release = importlib.import_module(RELEASE_MODULE)
    except ImportError:
        return fixed
    return fixed | set(getattr(release, "FIXED", ()))


def _bypass_unary(graph: Any, middle: bool = False) -> None:
    """Remove the last unary elementwise node (or the one nearest the middle of the node
    list) and feed its consumers from its input."""
    order = range(len(graph.node) - 1, -1, -1)
    if middle:
        order = sorted(order, key=lambda i: abs(i - len(graph.node) // 2))
    for index in order:
        node = graph.node[index]
        if node.op_type in UNARY and node.input:
            _bypass(graph, index)
            return


def _bypass(graph: Any, index: int) -> None:
    """Remove node ``index`` of ``graph`` and feed its consumers from its first input (a
    graph output it made is kept by an Identity)."""
    node = graph.node[index]
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


def _identity(src: str, dst: str) -> Any:
    import onnx

    return onnx.helper.make_node("Identity", [src], [dst])
