"""The edits of the simplification step (:mod:`fuzzer.reduce.simplify`): each maps a
candidate to a changed copy (or None when it no longer applies) that computes the same or
says less (names, metadata, optional attributes, input sizes).

Names come first. Exporters and optimizers both name tensors with plain numbers (``8``,
``12``), and an optimizer that numbers its own temporaries from a counter breaks when a
model's tensor already holds the name it generates next: such a failure needs as many nodes as
the counter must count. The ``tensor_names`` edits rename every tensor to ``t0, t1, ...``
at once (C-Reduce's identifier renaming); where the failure needs its names, each numeric
name is tried at smaller numbers (0, 1, then halving), which collide with fewer nodes. The
reducer runs its node steps again after a rename (:func:`fuzzer.reduce.reducer.reduce_model`).

:data:`EDITS` is the registry: name -> function listing the edits applicable to a candidate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from fuzzer.modelio.graphs import iter_graphs
from fuzzer.reduce.candidate import Built, forget_dims
from fuzzer.reduce.graph import subgraphs
from fuzzer.registry import Registry

Edit = Callable[[Built], "Built | None"]


def copy_built(built: Built) -> Built:
    """A deep copy of ``built``'s model with a shallow copy of its feeds."""
    import onnx

    model = onnx.ModelProto()
    model.CopyFrom(built.model)
    return Built(model, dict(built.feeds))


def all_nodes(graph: Any) -> Iterator[Any]:
    """Nodes of ``graph`` and of every subgraph, depth first."""
    for g in iter_graphs(graph):
        yield from g.node


def drop_value_info(built: Built) -> Built | None:
    """A copy of ``built`` without value_info in any graph; None when there is none."""
    if not any(g.value_info for g in iter_graphs(built.model.graph)):
        return None
    new = copy_built(built)
    for g in iter_graphs(new.model.graph):
        del g.value_info[:]
    return new


def _drop_opsets(built: Built) -> Built | None:
    used = {n.domain or "" for n in all_nodes(built.model.graph)}
    used |= {f.domain for f in built.model.functions}
    keep = [o for o in built.model.opset_import if (o.domain or "") in used or not o.domain]
    if len(keep) == len(built.model.opset_import):
        return None
    new = copy_built(built)
    del new.model.opset_import[:]
    new.model.opset_import.extend(keep)
    return new


def _drop_docs(built: Built) -> Built | None:
    model = built.model
    if not (model.doc_string or model.metadata_props or model.graph.doc_string
            or any(n.doc_string for n in all_nodes(model.graph))):
        return None
    new = copy_built(built)
    new.model.doc_string = ""
    del new.model.metadata_props[:]
    for g in iter_graphs(new.model.graph):
        g.doc_string = ""
        for n in g.node:
            n.doc_string = ""
    return new


_NUMBER = re.compile(r"[0-9]+")


def is_number(name: str) -> bool:
    """Whether a tensor name is a plain decimal number (``"12"``), the form of names that
    exporters and optimizers generate from counters."""
    return _NUMBER.fullmatch(name) is not None


def tensor_names(model: Any) -> list[str]:
    """Every tensor name of ``model`` (an ``onnx.ModelProto``), subgraphs included, in order of
    first appearance: per graph its inputs, initializers, then per node its inputs, subgraphs
    and outputs, then the graph's outputs and value_info. Empty names (omitted optional
    inputs) are left out; local functions' bodies are a namespace of their own and are not
    read. A renaming keeps every name's position in this list."""
    seen: dict[str, None] = {}

    def visit(graph: Any) -> None:
        found = [v.name for v in graph.input] + [t.name for t in graph.initializer]
        found += [t.values.name for t in graph.sparse_initializer]
        for name in found:
            seen.setdefault(name)
        for node in graph.node:
            seen.update(dict.fromkeys(node.input))
            for sub in subgraphs(node):
                visit(sub)
            seen.update(dict.fromkeys(node.output))
        seen.update(dict.fromkeys(v.name for v in [*graph.output, *graph.value_info]))

    visit(model.graph)
    seen.pop("", None)
    return list(seen)


def rename_tensors(built: Built, mapping: dict[str, str]) -> Built:
    """A copy of ``built`` with tensor names replaced by ``mapping`` (``{old: new}``) in every
    graph and subgraph (inputs, outputs, initializers, value_info, node inputs and outputs,
    quantization annotations) and in the feeds' keys; names not in ``mapping`` stay. The
    caller keeps names unique (``mapping`` must not merge two tensors)."""
    new = copy_built(built)

    def name(old: str) -> str:
        return mapping.get(old, old)

    for g in iter_graphs(new.model.graph):
        for value in [*g.input, *g.output, *g.value_info, *g.initializer]:
            value.name = name(value.name)
        for sparse in g.sparse_initializer:
            sparse.values.name = name(sparse.values.name)
        for note in g.quantization_annotation:
            note.tensor_name = name(note.tensor_name)
        for node in g.node:
            node.input[:] = [name(n) for n in node.input]
            node.output[:] = [name(n) for n in node.output]
    new.feeds = {name(k): v for k, v in new.feeds.items()}
    return new


def neutral_names(built: Built, keep_numbers: bool = False) -> Built:
    """A copy of ``built`` whose tensors are named ``t0, t1, ...`` by their place in
    :func:`tensor_names` (feeds renamed with the graph inputs); with ``keep_numbers``, names
    that are plain numbers stay (no ``t<i>`` can clash with them)."""
    names = tensor_names(built.model)
    return rename_tensors(built, {old: f"t{i}" for i, old in enumerate(names)
                                  if not (keep_numbers and is_number(old))})


def _neutral_edit(keep_numbers: bool) -> Edit:
    def edit(built: Built) -> Built | None:
        renamed = neutral_names(built, keep_numbers)
        return renamed if tensor_names(renamed.model) != tensor_names(built.model) else None
    return edit


def smaller_numbers(number: int) -> list[int]:
    """Numbers below ``number`` to try as a tensor name, simplest first: 0, 1, then
    ``number`` halved again and again (e.g. 12 -> [0, 1, 6, 3])."""
    tries = [0, 1]
    half = number // 2
    while half > 1:
        tries.append(half)
        half //= 2
    return [n for n in dict.fromkeys(tries) if n < number]


def _renumber(index: int, number: int) -> Edit:
    """Rename the tensor at ``index`` of :func:`tensor_names` to ``str(number)`` while its
    name is a larger number and no other tensor holds the new name."""
    def edit(built: Built) -> Built | None:
        names = tensor_names(built.model)
        if index >= len(names) or not is_number(names[index]):
            return None
        if int(names[index]) <= number or str(number) in names:
            return None
        return rename_tensors(built, {names[index]: str(number)})
    return edit


def name_edits(built: Built) -> list[Edit]:
    """Rename every tensor to ``t0, t1, ...`` in one edit; then, for each tensor named by a
    plain number, that name replaced by smaller numbers (see :func:`smaller_numbers`), one
    edit at a time; then every other tensor renamed ``t<i>`` with the numbers kept. After an
    accepted neutral renaming no numeric name is left, so the later edits only run where the
    failure needs its names."""
    edits: list[Edit] = [_neutral_edit(keep_numbers=False)]
    for index, name in enumerate(tensor_names(built.model)):
        if is_number(name):
            edits.extend(_renumber(index, n) for n in smaller_numbers(int(name)))
    return [*edits, _neutral_edit(keep_numbers=True)]


def _drop_node_names(built: Built) -> Built | None:
    if not any(n.name for n in all_nodes(built.model.graph)):
        return None
    new = copy_built(built)
    for node in all_nodes(new.model.graph):
        node.name = ""
    return new


def node_name_edits(built: Built) -> list[Edit]:
    """Drop every node name (all graphs) in one edit."""
    return [_drop_node_names]


def value_info_edits(built: Built) -> list[Edit]:
    """Drop every value_info (types the checker can infer again)."""
    return [drop_value_info]


def opset_edits(built: Built) -> list[Edit]:
    """Drop opset imports of domains no node uses."""
    return [_drop_opsets]


def doc_edits(built: Built) -> list[Edit]:
    """Drop doc strings and metadata_props."""
    return [_drop_docs]


def _optional_attribute(node: Any, name: str, opset: int) -> bool:
    import onnx

    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain or "")
    except Exception:
        return False
    spec = schema.attributes.get(name)
    return spec is not None and not spec.required


def attribute_edits(built: Built) -> list[Edit]:
    """Reset each optional attribute to its default (remove it), one at a time."""
    opsets = {o.domain or "": o.version for o in built.model.opset_import}
    edits: list[Edit] = []
    for index, node in enumerate(all_nodes(built.model.graph)):
        for attr in node.attribute:
            if attr.HasField("g") or attr.graphs:
                continue
            if _optional_attribute(node, attr.name, opsets.get(node.domain or "", 1)):
                edits.append(_remove_attribute(index, attr.name))
    return edits


def _remove_attribute(index: int, name: str) -> Edit:
    def edit(built: Built) -> Built | None:
        new = copy_built(built)
        node = list(all_nodes(new.model.graph))[index]
        kept = [a for a in node.attribute if a.name != name]
        if len(kept) == len(node.attribute):
            return None
        del node.attribute[:]
        node.attribute.extend(kept)
        return new
    return edit


def shrink_edits(built: Built) -> list[Edit]:
    """Shrink the dims of every tensor graph input: all to 1, then all halved (feeds sliced
    to match, output and value_info shapes dropped so inference recomputes them)."""
    return [_shrink(lambda d: 1), _shrink(lambda d: max(1, (d + 1) // 2))]


def _shrink(rule: Callable[[int], int]) -> Edit:
    def edit(built: Built) -> Built | None:
        new = copy_built(built)
        graph = new.model.graph
        inits = {t.name for t in graph.initializer}
        changed = False
        for value in graph.input:
            if value.name in inits or not value.type.HasField("tensor_type"):
                continue  # an initializer, or a sequence or optional input (left as it is)
            dims = value.type.tensor_type.shape.dim
            feed = new.feeds.get(value.name)
            sizes = list(feed.shape) if feed is not None else [
                d.dim_value if d.HasField("dim_value") else 0 for d in dims]
            target = [rule(s) if s > 1 else s for s in sizes]
            if target == sizes:
                continue
            changed = True
            for dim, size in zip(dims, target, strict=False):
                if dim.HasField("dim_value"):
                    dim.dim_value = size
            if feed is not None:
                new.feeds[value.name] = np.ascontiguousarray(
                    feed[tuple(slice(0, s) for s in target)])
        if not changed:
            return None
        for out in graph.output:
            forget_dims(out)
        del graph.value_info[:]
        return new
    return edit


#: simplification name -> edits it proposes, tried in this order.
EDITS: Registry[Callable[[Built], list[Edit]]] = Registry("simplification", {
    "tensor_names": name_edits,
    "node_names": node_name_edits,
    "value_info": value_info_edits,
    "opset_imports": opset_edits,
    "doc_strings": doc_edits,
    "attributes": attribute_edits,
    "dims": shrink_edits,
})


#: families whose edits keep what the model computes (names, metadata): a failure that needs
#: none of them, the common case, survives them all at once.
PRESERVING = ("tensor_names", "node_names", "value_info", "opset_imports", "doc_strings")


def apply_all(built: Built, families: Iterable[str]) -> Built | None:
    """``built`` after every applicable edit of ``families`` (in :data:`EDITS` order, each
    proposed on the result so far); None when none applies."""
    current = built
    for family in families:
        for edit in EDITS[family](current):
            changed = edit(current)
            current = changed if changed is not None else current
    return None if current is built else current
