"""An anchor edit that changes the node's output shapes, followed through the draw.

A plan level (a Conv's pads or strides, a Reduce's keepdims, a Slice's parameters, an
optional input) may give an anchor node outputs of another shape than the motif built it
with. The draw takes such a level where the rest of the motif's window takes the new shape:

- :func:`follow` infers the builder's graph with the edited node in place
  (:func:`generators.schema.inference.static_types`, data propagated) and finds the tensors
  of the window downstream of the node whose static shape changes; it raises
  :class:`NoFit` where the change reaches what cannot follow it;
- :func:`record` then writes the new shapes where the builder recorded the old ones: the
  pool's :class:`~generators.values.Value` objects the window appended (later draws
  consume them at their recorded shapes; the motif's result is one of them), the graph
  outputs the window declared with a shape, and value_info.

The caller checks the recorded graph by strict inference and onnxruntime
(:func:`generators.schema.apply.ort_refusal`). Values from before the window keep their
shapes: a window node that combines one with a changed tensor (a broadcast, a Concat) is
refused by inference when the shapes no longer fit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

from onnx import NodeProto, TensorProto, TypeProto, ValueInfoProto

from generators.builder import GraphBuilder, value_info
from generators.graphs import reads, subgraphs
from generators.schema.inference import elem_of, shape_of, static_types
from generators.values import Value

#: how many times its element count a changed tensor may grow to (at least
#: :data:`MIN_CAP` elements): the generator's values are small, and a draw's later ops and
#: a campaign's runs stay as cheap as the motif made them.
GROWTH = 4
MIN_CAP = 1024


class NoFit(Exception):
    """The draw's window cannot take the new shape; the message says what refuses it."""


@dataclass(frozen=True)
class Reshaping:
    """What an edit of an anchor node changes in its draw.

    Attributes:
        shapes: tensor name -> its new static shape, for each tensor of the window whose
            shape changes (the edited node's outputs and what follows from them).
        types: every tensor of the graph with the edit -> its inferred type (static shapes
            where inference tells them).
    """

    shapes: dict[str, tuple[int, ...]]
    types: dict[str, TypeProto]


def downstream(nodes: Iterable[NodeProto], start: NodeProto) -> set[str]:
    """The outputs of ``start`` and every tensor computed from them by the ``nodes`` after
    it (in graph order, ``start`` among them)."""
    reach: set[str] = set()
    seen = False
    for n in nodes:
        if n is start:
            seen = True
            reach.update(o for o in n.output if o)
        elif seen and reach & set(n.input):
            reach.update(o for o in n.output if o)
    return reach


def follow(b: GraphBuilder, window_start: int, pool_start: int, old: NodeProto,
           new: NodeProto, weights: list[TensorProto]) -> Reshaping:
    """The shapes the window's tensors take with ``new`` (an edited copy of the window's
    node ``old``) in ``old``'s place and ``weights`` added; the builder is left as it was.

    Args:
        b: the builder, its window the nodes from ``window_start`` on, its pooled values
            from ``pool_start`` on.
        old: a node of the window.
        new: ``old`` edited; its outputs may change shape.
        weights: initializers ``new`` reads that the builder has not.

    Returns:
        The changed shapes (none, where inference tells of no change) and the types.

    Raises:
        NoFit: the graph does not infer with the new shape (a window node cannot combine
            it with its other inputs), a changed tensor reaches a subgraph, a Reshape's
            fixed target, a constant the motif computed, no longer has an inferred shape,
            would have a dim below 1 (empty, or negative where inference does not check),
            or grows past :data:`GROWTH`; or an element type changes.
    """
    try:
        before = static_types(b)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        raise NoFit(f"the graph does not infer ({str(exc).splitlines()[0][:100]})") from None
    i = next(k for k, n in enumerate(b.nodes) if n is old)
    b.nodes[i] = new
    b.initializers.extend(weights)
    try:
        after = static_types(b, strict=True)
        window = b.nodes[window_start:]
        reach = downstream(window, new)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        raise NoFit(f"the graph does not infer with it ({str(exc).splitlines()[0][:100]})") \
            from None
    finally:
        b.nodes[i] = old
        del b.initializers[len(b.initializers) - len(weights):]
    recorded = _recorded(b, pool_start)
    pooled = {v.name: v.shape for v in b.pool[pool_start:]}
    shapes: dict[str, tuple[int, ...]] = {}
    for name in sorted(reach):
        was, now = shape_of(before, name), shape_of(after, name)
        if was is None:  # inference could not tell it: the shape the builder recorded
            was = pooled.get(name)
        if elem_of(before, name) and elem_of(after, name) != elem_of(before, name):
            raise NoFit(f"the element type of {name} changes")
        if now is None:
            if was is not None or name in recorded:
                raise NoFit(f"the shape of {name} is no longer inferred")
            continue
        if was is None or now == was:
            continue
        if any(d < 1 for d in now):
            raise NoFit(f"{name} would have the shape {now} (a dim below 1)")
        if math.prod(now) > max(GROWTH * math.prod(was), MIN_CAP):
            raise NoFit(f"{name} would grow from {was} to {now}")
        shapes[name] = now
    _check_readers(b.nodes[window_start:], b.pool[pool_start:], reach, shapes, after)
    return Reshaping(shapes, after)


def _recorded(b: GraphBuilder, pool_start: int) -> set[str]:
    """Names whose shape the builder records: the window's pooled values, declared graph
    outputs and value_info."""
    return {v.name for v in b.pool[pool_start:]} | {
        vi.name for vi in [*b.outputs, *b.value_infos]
        if vi.type.tensor_type.HasField("shape")}


def _check_readers(window: list[NodeProto], pooled: list[Value], reach: set[str],
                   shapes: dict[str, tuple[int, ...]], after: dict[str, TypeProto]) -> None:
    """Raise :class:`NoFit` where a window node or pooled value cannot follow the changed
    ``shapes`` (``reach``: every tensor downstream of the edit, ``after``: the inferred
    types with it)."""
    for v in pooled:
        if v.name in reach and v.const is not None:
            raise NoFit(f"{v.name} is a constant the motif computed from the old shape")
    for n in window:
        if subgraphs(n) and reach & set(reads(n)):
            raise NoFit(f"the new shape reaches the subgraph of {n.op_type}")
        if n.op_type == "Reshape" and n.input and n.input[0] in shapes:
            x, y = shapes[n.input[0]], shape_of(after, n.output[0])
            if y is None or math.prod(y) != math.prod(x):
                raise NoFit(f"a Reshape's target {y} cannot take {x}")


def record(b: GraphBuilder, pool_start: int, reshaping: Reshaping) -> None:
    """Write ``reshaping``'s shapes into the builder: the pooled values from ``pool_start``
    on are replaced by copies at their new shapes, and the graph outputs and value_info
    that declare a shape by new ones (replaced, not edited, so that a shallow copy of the
    builder's lists keeps the old records)."""
    shapes = reshaping.shapes
    b.pool[pool_start:] = [dataclasses.replace(v, shape=shapes[v.name])
                           if v.name in shapes else v for v in b.pool[pool_start:]]
    b.outputs[:] = [_reshaped(vi, shapes) for vi in b.outputs]
    b.value_infos[:] = [_reshaped(vi, shapes) for vi in b.value_infos]


def _reshaped(vi: ValueInfoProto, shapes: dict[str, tuple[int, ...]]) -> ValueInfoProto:
    """``vi`` at its new shape where it declares one that changed, else ``vi`` itself."""
    tt = vi.type.tensor_type
    if vi.name not in shapes or not vi.type.HasField("tensor_type") or \
            not tt.HasField("shape"):
        return vi
    return value_info(vi.name, tt.elem_type, shapes[vi.name])
