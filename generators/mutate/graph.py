"""Reading and editing an existing ONNX graph for the mutators: which node reads and writes
which tensor (subgraph bodies' outer-scope references included), tensor types from shape
inference, fresh names, renaming across scopes, topological order and convex regions.

Every helper that chooses returns lists in graph order, never sets, so that a mutation is the
same in every process (string hashing differs between interpreters).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import (
    AttributeProto,
    GraphProto,
    ModelProto,
    NodeProto,
    TensorProto,
    TypeProto,
    ValueInfoProto,
)

from generators.graphs import defined, reads, subgraphs
from generators.values import Value


def copy_model(model: ModelProto) -> ModelProto:
    """A deep copy of ``model``."""
    out = ModelProto()
    out.CopyFrom(model)
    return out


def opset_of(model: ModelProto, domain: str = "") -> int:
    """The opset ``model`` imports for ``domain`` (``""`` and ``"ai.onnx"`` are one), else 0."""
    for imp in model.opset_import:
        if imp.domain == domain or {imp.domain, domain} == {"", "ai.onnx"}:
            return imp.version
    return 0


def all_names(model: ModelProto) -> set[str]:
    """Every tensor and node name anywhere in ``model`` (subgraphs and functions included), for
    :func:`fresh`."""
    names: set[str] = set()

    def walk(g: GraphProto) -> None:
        names.update(defined(g))
        names.update(v.name for v in (*g.output, *g.value_info))
        for n in g.node:
            names.update(n.input)
            names.add(n.name)
            for sub in subgraphs(n):
                walk(sub)

    walk(model.graph)
    for f in model.functions:
        names.update(f.input)
        names.update(f.output)
        for n in f.node:
            names.update(n.input)
            names.update(n.output)
    names.discard("")
    return names


def fresh(taken: set[str], stem: str) -> str:
    """``stem`` or ``stem_1``, ``stem_2`` ... whichever is not in ``taken``; added to it."""
    name, k = stem, 0
    while not name or name in taken:
        k += 1
        name = f"{stem}_{k}"
    taken.add(name)
    return name


def consumers(graph: GraphProto) -> dict[str, list[int]]:
    """Tensor name -> indices of the nodes of ``graph`` that read it (outer-scope reads of
    their subgraphs included), in node order."""
    out: dict[str, list[int]] = {}
    for k, n in enumerate(graph.node):
        for name in reads(n):
            out.setdefault(name, []).append(k)
    return out


def producers(graph: GraphProto) -> dict[str, int]:
    """Tensor name -> index of the node of ``graph`` that writes it."""
    return {o: k for k, n in enumerate(graph.node) for o in n.output if o}


def intermediates(graph: GraphProto) -> list[str]:
    """Node outputs of ``graph`` that are neither graph outputs nor unused, in node order."""
    outs = {o.name for o in graph.output}
    used = consumers(graph)
    return [o for n in graph.node for o in n.output if o and o not in outs and o in used]


def tensor_type(t: TensorProto) -> TypeProto:
    """The TypeProto of tensor ``t`` (its element type and static dims)."""
    tp = TypeProto()
    tp.tensor_type.elem_type = t.data_type
    tp.tensor_type.shape.SetInParent()
    for d in t.dims:
        tp.tensor_type.shape.dim.add().dim_value = d
    return tp


def infer_types(model: ModelProto) -> dict[str, TypeProto]:
    """Tensor name -> TypeProto of the main graph's values as non-strict shape inference sees
    them (declared graph inputs and outputs win; initializers typed from their dims); empty
    for a model shape inference rejects."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    g = inferred.graph
    types = {t.name: tensor_type(t) for t in g.initializer}
    for vi in (*g.value_info, *g.input, *g.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            types[vi.name] = vi.type
    return types


def static_shape(tp: TypeProto) -> tuple[int, ...] | None:
    """The dims of a tensor type when every dim is a known positive size, else None."""
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims = tp.tensor_type.shape.dim
    if not all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def static_values(model: ModelProto, names: list[str] | None = None) -> list[Value]:
    """:class:`~generators.values.Value` records (dtype, static shape) of the main graph's
    tensors whose shape inference gives a fully static shape; ``names`` restricts and orders
    them (default: graph inputs, then node outputs)."""
    types = infer_types(model)
    g = model.graph
    order = names if names is not None else (
        [i.name for i in g.input] + [o for n in g.node for o in n.output if o])
    out = []
    for name in dict.fromkeys(order):
        tp = types.get(name)
        shape = static_shape(tp) if tp is not None else None
        if shape is not None:
            out.append(Value(name, tp.tensor_type.elem_type, shape))
    return out


def rename(graph: GraphProto, old: str, new: str) -> None:
    """Rename tensor ``old`` to ``new`` in ``graph`` and its subgraphs (inputs, outputs,
    initializers, value_info, node inputs and outputs; in place)."""
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.name == old:
            vi.name = new
    for t in graph.initializer:
        if t.name == old:
            t.name = new
    for st in graph.sparse_initializer:
        if st.values.name == old:
            st.values.name = new
    for n in graph.node:
        for field in (n.input, n.output):
            for k, name in enumerate(field):
                if name == old:
                    field[k] = new
        for sub in subgraphs(n):
            rename(sub, old, new)


def toposort(graph: GraphProto) -> None:
    """Reorder ``graph.node`` topologically (in place), keeping the present order wherever it
    is already valid (Kahn's algorithm with the node index as priority).

    Raises:
        ValueError: the nodes form a cycle.
    """
    prod = producers(graph)
    nodes = list(graph.node)
    deps = [{prod[r] for r in reads(n) if r in prod and prod[r] != k}
            for k, n in enumerate(nodes)]
    users: dict[int, list[int]] = {}
    for k, ds in enumerate(deps):
        for d in ds:
            users.setdefault(d, []).append(k)
    waiting = [len(ds) for ds in deps]
    ready = [k for k, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for u in users.get(k, []):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        raise ValueError("the graph has a cycle")
    if order != list(range(len(nodes))):
        copies = [NodeProto() for _ in nodes]
        for c, k in zip(copies, order, strict=True):
            c.CopyFrom(nodes[k])
        del graph.node[:]
        graph.node.extend(copies)


@dataclass
class Region:
    """A convex run of main-graph nodes (a contiguous slice of a topological order, so no path
    leaves and re-enters it).

    Attributes:
        start: index of its first node.
        stop: index after its last node.
        inputs: tensors its nodes read from outside it (outer-scope reads included), in order.
        outputs: tensors it writes that later nodes read or that are graph outputs, in order.
    """

    start: int
    stop: int
    inputs: list[str]
    outputs: list[str]


def region(graph: GraphProto, start: int, stop: int) -> Region:
    """The :class:`Region` of ``graph.node[start:stop]``."""
    inside = graph.node[start:stop]
    made = [o for n in inside for o in n.output if o]
    made_set = set(made)
    ins = [r for n in inside for r in reads(n) if r not in made_set]
    later = {r for n in graph.node[stop:] for r in reads(n)}
    later.update(o.name for o in graph.output)
    outs = [o for o in made if o in later]
    return Region(start, stop, list(dict.fromkeys(ins)), outs)


def regions(graph: GraphProto, max_nodes: int = 3) -> Iterator[Region]:
    """Every region of 1 to ``max_nodes`` nodes with at least one output, in graph order."""
    for start in range(len(graph.node)):
        for size in range(1, max_nodes + 1):
            if start + size > len(graph.node):
                break
            r = region(graph, start, start + size)
            if r.outputs:
                yield r


def typed_value_info(name: str, tp: TypeProto) -> ValueInfoProto:
    """A ValueInfoProto named ``name`` with type ``tp``."""
    vi = ValueInfoProto()
    vi.name = name
    vi.type.CopyFrom(tp)
    return vi


def list_initializers_as_inputs(model: ModelProto) -> None:
    """For IR < 4 (initializers must also be graph inputs): declare every initializer not yet
    listed among the graph inputs (in place)."""
    if model.ir_version >= 4:
        return
    listed = {i.name for i in model.graph.input}
    model.graph.input.extend(typed_value_info(t.name, tensor_type(t))
                             for t in model.graph.initializer if t.name not in listed)


def refresh_types(model: ModelProto) -> None:
    """After a change of shapes or dtypes: re-declare the main graph's value_info and output
    types as shape inference now infers them (entries it cannot infer are dropped; in place)."""
    probe = copy_model(model)
    del probe.graph.value_info[:]
    for o in probe.graph.output:
        o.type.tensor_type.ClearField("shape")
    types = {name: tp for name, tp in infer_types(probe).items()
             if tp.tensor_type.HasField("shape")}
    kept = [vi for vi in model.graph.value_info if vi.name in types]
    for vi in kept:
        vi.type.CopyFrom(types[vi.name])
    del model.graph.value_info[:]
    model.graph.value_info.extend(kept)
    for o in model.graph.output:
        if o.name in types:
            o.type.CopyFrom(types[o.name])


def attr(node: NodeProto, name: str) -> AttributeProto | None:
    """``node``'s attribute ``name``, or None."""
    for a in node.attribute:
        if a.name == name:
            return a
    return None


def remove_attr(node: NodeProto, name: str) -> None:
    """Drop ``node``'s attribute ``name`` where present (in place)."""
    keep = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(keep)


def first_line(exc: Any) -> str:
    """``"<ExceptionType>: <first line of its message>"``."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else '(no message)'}"


def redirect(node: NodeProto, old: str, new: str) -> None:
    """Make ``node`` read ``new`` wherever it read ``old`` (its inputs and its subgraphs'
    outer-scope references; in place)."""
    for k, name in enumerate(node.input):
        if name == old:
            node.input[k] = new
    for sub in subgraphs(node):
        rename(sub, old, new)
