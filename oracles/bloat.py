"""Bloat oracle: the optimized model is larger than the original: more nodes (subgraphs
included), or unused initializers left behind where the target promises their removal.

Whether leftover initializers count is the target's knowledge, not the oracle's: a pass-based
optimizer routinely leaves the initializers of the nodes it removed for a clean-up pass, so
the target tells, per configuration, through ``Outcome.extra["unused_initializers_are_bloat"]``
(absent: only initializers the optimizer itself left unused count; see
:func:`leftover_initializers`).

Node growth is also measured after the same cleanup on both sides (:func:`cleaned_size`):
dead nodes removed and constant-only work treated as folded. A pass that merely leaves dead
nodes or foldable constant work for the target's own dead-end elimination shows growth that
is gone after that cleanup; the finding says so in ``detail["survives_cleanup"]`` and in its
message, and the target decides whether that is behaviour it documents. Where the
configuration ran the target's dead-node cleanup after every pass that may leave dead nodes
(``Outcome.extra["cleanup_ran"]``, absent: False), the target promised a model without dead
nodes, so dead nodes count too; constant-only work still counts only where the configuration
folds constants (``Outcome.extra["constants_folded"]``, absent: False), since a rewrite may
leave foldable work (a fused weight computed by nodes) for whatever folds constants later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import onnx

from oracles.base import (
    Finding,
    Outcome,
    Symptom,
    count_nodes,
    iter_graphs,
    op_counts,
    register,
    subgraphs,
)

#: Ops whose outputs are not a function of their inputs: never treated as foldable.
NONDETERMINISTIC = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                              "RandomUniformLike", "Multinomial", "Bernoulli"})
#: Bytes of one value of a Constant node's scalar and list attributes (``value_float`` ...).
_ATTRIBUTE_ITEM_BYTES = {onnx.AttributeProto.FLOAT: 4, onnx.AttributeProto.INT: 8,
                         onnx.AttributeProto.FLOATS: 4, onnx.AttributeProto.INTS: 8}


@dataclass(frozen=True)
class Census:
    """What one walk over a model's graphs tells the oracle.

    Attributes:
        nodes: nodes of the graph, subgraphs included (:func:`oracles.base.count_nodes`).
        unused: names of main-graph initializers that no node, subgraph or graph output
            reads and that are not listed as graph inputs (IR < 4 overridable initializers
            are interface, not garbage), in initializer order.
    """

    nodes: int
    unused: tuple[str, ...]


def _walk(graph: onnx.GraphProto, used: set[str] | None) -> int:
    """Count the nodes of ``graph`` and its subgraphs; add every name they and the graphs'
    outputs read to ``used`` (None: count only)."""
    count = len(graph.node)
    for node in graph.node:
        if used is not None:
            used.update(node.input)
        for sub in subgraphs(node):
            count += _walk(sub, used)
    if used is not None:
        used.update(o.name for o in graph.output)
    return count


def census(graph: onnx.GraphProto, unused: bool = True) -> Census:
    """The node count and unused initializers of ``graph`` (a main graph) in one walk over
    its nodes (the names read are gathered only where it has initializers, and only with
    ``unused``: without it ``Census.unused`` is empty)."""
    used: set[str] | None = set() if unused and graph.initializer else None
    nodes = _walk(graph, used)
    if used is None:
        return Census(nodes, ())
    inputs = {i.name for i in graph.input}
    return Census(nodes, tuple(t.name for t in graph.initializer
                               if t.name not in used and t.name not in inputs))


def unused_initializers(graph: onnx.GraphProto) -> list[str]:
    """Names of main-graph initializers read by no node, subgraph, or graph output, and not
    listed as graph inputs (see :class:`Census`)."""
    return list(census(graph).unused)


def leftover_initializers(outcome: Outcome, before: Census | None = None,
                          after: Census | None = None) -> list[str]:
    """Unused initializers of the optimized model that count as bloat: none where the target
    says its configuration leaves them for a clean-up (``unused_initializers_are_bloat``
    False); all where it promises a clean model (True); else those the original did not
    already leave unused (an optimizer need not clean up what it was given). ``before`` and
    ``after``: the censuses of the original and the optimized graph, where already taken."""
    promised = outcome.extra.get("unused_initializers_are_bloat")
    if promised is False:
        return []
    left = list((after or census(outcome.optimized.graph)).unused)
    if promised is None and left:
        already = set((before or census(outcome.original.graph)).unused)
        left = [name for name in left if name not in already]
    return left


def tensor_bytes(tensor: onnx.TensorProto) -> int:
    """Bytes of the values of ``tensor``: element count times element size, string lengths
    for string tensors, the raw data's length for an element type numpy does not know."""
    if tensor.data_type == onnx.TensorProto.STRING:
        return sum(len(s) for s in tensor.string_data)
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return len(tensor.raw_data)
    return math.prod(tensor.dims) * itemsize


def _sparse_bytes(tensor: onnx.SparseTensorProto) -> int:
    return tensor_bytes(tensor.values) + tensor_bytes(tensor.indices)


def _constant_value_bytes(node: onnx.NodeProto) -> int:
    """Bytes of the value a Constant node holds, whichever attribute holds it."""
    total = 0
    for attr in node.attribute:
        if attr.HasField("t"):
            total += tensor_bytes(attr.t)
        elif attr.HasField("sparse_tensor"):
            total += _sparse_bytes(attr.sparse_tensor)
        else:
            count = 1 if attr.type in (onnx.AttributeProto.FLOAT, onnx.AttributeProto.INT) \
                else len(attr.floats) + len(attr.ints)
            total += _ATTRIBUTE_ITEM_BYTES.get(attr.type, 0) * count
            total += len(attr.s) + sum(len(s) for s in attr.strings)
    return total


def _is_constant_node(node: onnx.NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx")


def raw_constant_bytes(graph: onnx.GraphProto) -> int:
    """Bytes of all constant data stored in ``graph`` and its subgraphs, used or not:
    initializers (dense and sparse) and the values of Constant nodes."""
    total = 0
    for g in iter_graphs(graph):
        total += sum(tensor_bytes(t) for t in g.initializer)
        total += sum(_sparse_bytes(t) for t in g.sparse_initializer)
        total += sum(_constant_value_bytes(n) for n in g.node if _is_constant_node(n))
    return total


def _value_bytes(value: onnx.ValueInfoProto) -> int | None:
    """Bytes of a tensor of ``value``'s type, or None when its element type or a dimension
    is unknown."""
    tensor_type = value.type.tensor_type
    if not value.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
    if None in dims:
        return None
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    return math.prod(d for d in dims if d is not None) * itemsize


def _inferred_bytes(model: onnx.ModelProto) -> dict[str, int]:
    """Tensor name -> bytes, for every tensor whose type and shape onnx shape inference
    knows fully (subgraphs included); empty where shape inference fails."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - an unknown op or a bad model: sizes stay unknown
        return {}
    sizes: dict[str, int] = {}
    for graph in iter_graphs(inferred.graph):
        for value in [*graph.value_info, *graph.output]:
            size = _value_bytes(value)
            if size is not None:
                sizes[value.name] = size
    return sizes


@dataclass(frozen=True)
class CleanSize:
    """Size of a model after cleanup.

    Attributes:
        nodes: nodes, subgraphs included, that reach a graph output (transitively; a
            subgraph's reference to an outer name is a use) and are not constant-foldable.
            A node is constant-foldable when every input is an initializer (not one listed
            as a graph input: that is overridable), a Constant node's output or another
            foldable node's output, and it has no subgraph and is not random; a Constant
            node is foldable. Subgraphs of dead nodes are not counted.
        constant_bytes: bytes of the constant tensors that the counted nodes and the graph
            outputs read, each tensor once: an initializer's or a Constant node's bytes, a
            folded tensor's size where shape inference knows it, else the bytes of the
            initializers and Constant values it is computed from.
        dead_nodes: nodes, subgraphs included, that reach no graph output (a dead node's
            subgraphs count with it).
    """

    nodes: int
    constant_bytes: int
    dead_nodes: int = 0


class _Cleanup:
    """Dead-node removal and constant folding on one model, measured (see
    :class:`CleanSize`). Tensor names are unique across a model's graphs, so the maps are
    shared by all of them."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        #: constant tensor -> its bytes, for initializers and Constant node outputs.
        self.stored: dict[str, int] = {}
        #: output of a folded node (not a Constant) -> that node's inputs.
        self.folded_from: dict[str, list[str]] = {}
        #: constant tensors that live, non-foldable work or a graph output reads.
        self.read: set[str] = set()
        #: live nodes, foldable or not, subgraphs included.
        self.live = 0

    def graph(self, graph: onnx.GraphProto, outer_constants: set[str]) -> tuple[int, set[str]]:
        """Count the live, non-foldable nodes of ``graph`` (subgraphs included) and return
        that count and the outer names its live nodes read."""
        interface = {i.name for i in graph.input}
        stored = {t.name: tensor_bytes(t) for t in graph.initializer}
        stored.update((t.values.name, _sparse_bytes(t)) for t in graph.sparse_initializer)
        self.stored.update(stored)
        constants = outer_constants | {name for name in stored if name not in interface}
        folded = self._fold(graph, constants)
        producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
        pending = [o.name for o in graph.output]
        self.read.update(name for name in pending if name in constants)
        reached: set[str] = set()
        live: set[int] = set()
        count = 0
        while pending:
            name = pending.pop()
            if name in reached:
                continue
            reached.add(name)
            index = producer.get(name)
            if index is None or index in live:
                continue
            live.add(index)
            self.live += 1
            node = graph.node[index]
            inputs = [n for n in node.input if n]
            if index not in folded:
                count += 1
                self.read.update(n for n in inputs if n in constants)
            pending.extend(inputs)
            for sub in subgraphs(node):
                sub_count, outer = self.graph(sub, constants)
                count += sub_count
                pending.extend(outer)
        return count, reached - interface - set(producer) - set(stored)

    def _fold(self, graph: onnx.GraphProto, constants: set[str]) -> set[int]:
        """Indices of the foldable nodes of ``graph``; adds their outputs to ``constants``."""
        folded: set[int] = set()
        progress = True
        while progress:
            progress = False
            for index, node in enumerate(graph.node):
                if index in folded or node.op_type in NONDETERMINISTIC or subgraphs(node) or \
                        not all(n in constants for n in node.input if n):
                    continue
                folded.add(index)
                progress = True
                outputs = [o for o in node.output if o]
                constants.update(outputs)
                for out in outputs:
                    if _is_constant_node(node):
                        self.stored[out] = _constant_value_bytes(node)
                    else:
                        self.folded_from[out] = [n for n in node.input if n]
        return folded

    def constant_bytes(self) -> int:
        """Bytes of the constant tensors read by live work (see :class:`CleanSize`)."""
        inferred = _inferred_bytes(self.model) if self.read - self.stored.keys() else {}
        total = 0
        for name in self.read:
            if name in self.stored or name in inferred:
                total += self.stored.get(name, inferred.get(name, 0))
                continue
            sources, todo = set(), [name]
            while todo:
                current = todo.pop()
                if current not in sources:
                    sources.add(current)
                    todo.extend(self.folded_from.get(current, ()))
            total += sum(self.stored.get(source, 0) for source in sources)
        return total


def cleaned_size(model: onnx.ModelProto) -> CleanSize:
    """The size of ``model`` after removing dead nodes and folding constant-only work
    (see :class:`CleanSize` for what is counted)."""
    cleanup = _Cleanup(model)
    nodes, _ = cleanup.graph(model.graph, set())
    return CleanSize(nodes, cleanup.constant_bytes(), count_nodes(model.graph) - cleanup.live)


def size_detail(original: onnx.ModelProto, optimized: onnx.ModelProto) -> dict[str, Any]:
    """Sizes of both models before and after cleanup: ``nodes_*`` (every node, subgraphs
    included), ``constant_bytes_*`` (all stored constant data), and ``cleaned_nodes_*`` and
    ``cleaned_constant_bytes_*`` and ``dead_nodes_*`` (:class:`CleanSize`); ``*_before`` is
    the original."""
    detail: dict[str, Any] = {}
    for side, model in (("before", original), ("after", optimized)):
        clean = cleaned_size(model)
        detail.update({f"nodes_{side}": count_nodes(model.graph),
                       f"constant_bytes_{side}": raw_constant_bytes(model.graph),
                       f"cleaned_nodes_{side}": clean.nodes,
                       f"cleaned_constant_bytes_{side}": clean.constant_bytes,
                       f"dead_nodes_{side}": clean.dead_nodes})
    return detail


def op_changes(original: onnx.ModelProto, optimized: onnx.ModelProto) -> dict[str, dict]:
    """``{"ops_added": {op type: n}, "ops_removed": {op type: n}}``: how many more (fewer)
    nodes of each op type ``optimized`` has than ``original``, subgraphs included."""
    before, after = op_counts(original.graph), op_counts(optimized.graph)
    return {"ops_added": dict(sorted((after - before).items())),
            "ops_removed": dict(sorted((before - after).items()))}


def bloat(outcome: Outcome) -> list[Finding]:
    """More nodes than before, or unused initializers left behind (where they count).

    Node growth that survives the cleanup (more non-foldable live nodes, counting dead nodes
    too where ``extra["cleanup_ran"]`` and live foldable ones where
    ``extra["constants_folded"]``) is reported first; then leftover initializers, where the
    configuration promises their removal (that promise makes them survive); then node
    growth that is gone after the cleanup, with ``detail["survives_cleanup"]`` False.
    """
    if outcome.status != "ok" or outcome.original is None or outcome.optimized is None:
        return []
    # the original's unused initializers count only in the rare case that
    # leftover_initializers needs them (it takes its census then)
    promised = outcome.extra.get("unused_initializers_are_bloat")
    counted = census(outcome.optimized.graph, unused=promised is not False)
    before, after = count_nodes(outcome.original.graph), counted.nodes
    left = leftover_initializers(outcome, after=counted)
    if after <= before and not left:
        return []
    cleanup_ran = bool(outcome.extra.get("cleanup_ran", False))
    folded = bool(outcome.extra.get("constants_folded", False))
    detail = {**size_detail(outcome.original, outcome.optimized), "cleanup_ran": cleanup_ran}

    def kept(side: str) -> int:
        """Nodes that the configuration's own cleanup should have left (see docstring)."""
        live_work, dead = detail[f"cleaned_nodes_{side}"], detail[f"dead_nodes_{side}"]
        foldable = detail[f"nodes_{side}"] - live_work - dead
        return live_work + cleanup_ran * dead + folded * foldable

    growth = f"node count grew from {before} to {after}"
    survives = after > before and kept("after") > kept("before")
    if not survives and left:
        growth, survives = f"{len(left)} unused initializer(s) left behind", True
        detail["unused_initializers"] = left[:20]
    detail["survives_cleanup"] = survives
    detail.update(op_changes(outcome.original, outcome.optimized))
    if not survives:
        growth += " (only dead or constant-foldable nodes; none after cleanup)"
    return [Finding("bloat", "compare", growth, detail)]


register(Symptom(
    "bloat", 90, ("compare",), bloat, "makes the model larger",
    "The optimized model has no more nodes than the input and no unused initializers.",
    severity_class="size", promise=True))
