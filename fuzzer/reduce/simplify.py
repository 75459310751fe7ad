"""Simplification after the node-level steps: each edit is kept only where the failure
survives it (greedy, one edit at a time). Names are never changed, so names the failure
depends on stay.

:data:`EDITS` is the registry: name -> function listing the edits applicable to a candidate.
An edit maps a candidate to a changed copy (or None when it no longer applies).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fuzzer.reduce.candidate import Built, forget_dims
from fuzzer.reduce.graph import subgraphs
from fuzzer.reduce.state import Context, State

Edit = Callable[[Built], "Built | None"]


def _copy(built: Built) -> Built:
    import onnx

    model = onnx.ModelProto()
    model.CopyFrom(built.model)
    return Built(model, dict(built.feeds))


def _graphs(graph: Any) -> Iterator[Any]:
    yield graph
    for node in graph.node:
        for sub in subgraphs(node):
            yield from _graphs(sub)


def _nodes(graph: Any) -> Iterator[Any]:
    for g in _graphs(graph):
        yield from g.node


def _drop_value_info(built: Built) -> Built | None:
    if not any(g.value_info for g in _graphs(built.model.graph)):
        return None
    new = _copy(built)
    for g in _graphs(new.model.graph):
        del g.value_info[:]
    return new


def _drop_opsets(built: Built) -> Built | None:
    used = {n.domain or "" for n in _nodes(built.model.graph)}
    used |= {f.domain for f in built.model.functions}
    keep = [o for o in built.model.opset_import if (o.domain or "") in used or not o.domain]
    if len(keep) == len(built.model.opset_import):
        return None
    new = _copy(built)
    del new.model.opset_import[:]
    new.model.opset_import.extend(keep)
    return new


def _drop_docs(built: Built) -> Built | None:
    model = built.model
    if not (model.doc_string or model.metadata_props or model.graph.doc_string
            or any(n.doc_string for n in _nodes(model.graph))):
        return None
    new = _copy(built)
    new.model.doc_string = ""
    del new.model.metadata_props[:]
    for g in _graphs(new.model.graph):
        g.doc_string = ""
        for n in g.node:
            n.doc_string = ""
    return new


def value_info_edits(built: Built) -> list[Edit]:
    """Drop every value_info (types the checker can infer again)."""
    return [_drop_value_info]


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
    for index, node in enumerate(_nodes(built.model.graph)):
        for attr in node.attribute:
            if attr.HasField("g") or attr.graphs:
                continue
            if _optional_attribute(node, attr.name, opsets.get(node.domain or "", 1)):
                edits.append(_remove_attribute(index, attr.name))
    return edits


def _remove_attribute(index: int, name: str) -> Edit:
    def edit(built: Built) -> Built | None:
        new = _copy(built)
        node = list(_nodes(new.model.graph))[index]
        kept = [a for a in node.attribute if a.name != name]
        if len(kept) == len(node.attribute):
            return None
        del node.attribute[:]
        node.attribute.extend(kept)
        return new
    return edit


def shrink_edits(built: Built) -> list[Edit]:
    """Shrink the dims of every graph input: all to 1, then all halved (feeds sliced to
    match, output and value_info shapes dropped so inference recomputes them)."""
    return [_shrink(lambda d: 1), _shrink(lambda d: max(1, (d + 1) // 2))]


def _shrink(rule: Callable[[int], int]) -> Edit:
    def edit(built: Built) -> Built | None:
        new = _copy(built)
        graph = new.model.graph
        inits = {t.name for t in graph.initializer}
        changed = False
        for value in graph.input:
            if value.name in inits:
                continue
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
EDITS: dict[str, Callable[[Built], list[Edit]]] = {
    "value_info": value_info_edits,
    "opset_imports": opset_edits,
    "doc_strings": doc_edits,
    "attributes": attribute_edits,
    "dims": shrink_edits,
}


def simplify(state: State, ctx: Context) -> State:
    """Apply every edit of :data:`EDITS` that keeps the failure; returns the final state."""
    for propose in EDITS.values():
        for edit in propose(state.built):
            candidate = edit(state.built)
            if candidate is not None and ctx.predicate(candidate):
                graph = candidate.model.graph
                state = State(list(graph.node), [o.name for o in graph.output], candidate)
                ctx.offer(state)
    return state
