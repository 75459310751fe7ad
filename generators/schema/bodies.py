"""Retype the type-``V`` values of a control-flow node through its bodies.

An ``If``, ``Loop`` or ``Scan`` binds its outer inputs and outputs to a type parameter
(``V``) that its bodies produce and read: an ``If``'s outputs are its branches' outputs, a
``Loop``'s carried values and scan outputs are its body's, a ``Scan``'s states and scan
values too. Retyping such a node's outer values (:func:`generators.schema.apply.vary`,
``dtype:V``) therefore edits the bodies at their edges only: a body output tied to a
retyped outer value leaves through a ``Cast`` to the new type, and a body input tied to one
enters through a ``Cast`` back to the type the body was written for, so nothing inside a
body changes (the bodies' own nodes may not take the new type). A body that reads a retyped
value from outside, by name, reads it through a ``Cast`` back at its start likewise
(:func:`cast_outer_reads`).
"""

from __future__ import annotations

from collections.abc import Callable

from onnx import GraphProto, NodeProto, helper

from generators.graphs import outer_refs, subgraphs

#: ``op -> (outer input index -> body input index, outer output index -> body output
#: index)`` for the ops whose bodies take the outer values; ``None``: not tied to the body.
_EDGES: dict[str, tuple[Callable[[int, int], int | None], Callable[[int], int]]] = {
    "If": (lambda i, since: None, lambda j: j),
    # Loop: inputs (M, cond, carried...) -> body (iteration, cond, carried...);
    # outputs (carried..., scan outputs...) -> body (cond, carried..., scan outputs...)
    "Loop": (lambda i, since: i if i >= 2 else None, lambda j: j + 1),
    # Scan-8 reads sequence_lens first; later versions give the body every input in turn
    "Scan": (lambda i, since: (i - 1 if i >= 1 else None) if since < 9 else i, lambda j: j),
}

#: the ops whose bodies (every graph attribute they hold) take their outer values.
BODIES = frozenset(_EDGES)


def retype_bodies(node: NodeProto, since: int, tied: set[str], target: int, current: int,
                  fresh: Callable[[], str]) -> list[str]:
    """Make ``node``'s bodies produce and read its outer values named in ``tied`` in element
    type ``target`` (ONNX enum) instead of ``current``, by ``Cast`` nodes at the bodies'
    edges (see the module docstring).

    Args:
        node: an ``If``, ``Loop`` or ``Scan`` node (any other op: nothing to do).
        since: the ``since_version`` of the node's schema at the model's opset.
        tied: outer tensor names (the node's inputs and outputs among them) that take
            ``target``.
        target: the new element type.
        current: the element type the bodies were written for.
        fresh: returns a tensor name unused in the whole model on each call.

    Returns:
        The names of the tensors the inserted Casts produce (empty where the node has no
        tied body edge).
    """
    if node.op_type not in _EDGES:
        return []
    to_body_in, to_body_out = _EDGES[node.op_type]
    ins = {k for i, x in enumerate(node.input) if x in tied
           for k in [to_body_in(i, since)] if k is not None}
    outs = {to_body_out(j) for j, x in enumerate(node.output) if x and x in tied}
    made: list[str] = []
    for g in subgraphs(node):
        made += _wrap(g, ins, outs, target, current, fresh)
    return made


def _wrap(g: GraphProto, ins: set[int], outs: set[int], target: int, current: int,
          fresh: Callable[[], str]) -> list[str]:
    """Cast body ``g``'s inputs ``ins`` from ``target`` back to ``current`` as they enter,
    and its outputs ``outs`` to ``target`` as they leave."""
    made: list[str] = []
    head: list[NodeProto] = []
    for k in sorted(i for i in ins if i < len(g.input)):
        vi = g.input[k]
        new = fresh()
        head.append(helper.make_node("Cast", [new], [vi.name], to=current))
        vi.name = new
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.elem_type = target
        made.append(vi.name)
    for k in sorted(o for o in outs if o < len(g.output)):
        vo = g.output[k]
        new = fresh()
        g.node.append(helper.make_node("Cast", [vo.name], [new], to=target))
        vo.name = new
        if vo.type.HasField("tensor_type"):
            vo.type.tensor_type.elem_type = target
        made.append(new)
    _prepend(g, head)
    return made


def cast_outer_reads(node: NodeProto, names: dict[str, str], current: int,
                     fresh: Callable[[], str]) -> list[str]:
    """Make each body of ``node`` read the outer values ``names`` (the name it reads -> the
    name of the retyped value now) through a ``Cast`` back to element type ``current`` at the
    body's start, so that nothing inside the body changes type.

    Args:
        node: any node; its graph attributes are its bodies (nested bodies read the Cast).
        names: outer tensor name the bodies read -> the value in the new type to cast.
        current: the element type the bodies were written for (ONNX enum).
        fresh: returns a tensor name unused in the whole model on each call.

    Returns:
        The names of the tensors the inserted Casts produce.
    """
    made: list[str] = []
    for g in subgraphs(node):
        refs = [r for r in outer_refs(g) if r in names]
        if not refs:
            continue
        head = []
        for old in refs:
            new = fresh()
            head.append(helper.make_node("Cast", [names[old]], [new], to=current))
            _rename_reads(g, old, new)
            made.append(new)
        _prepend(g, head)
    return made


def _prepend(g: GraphProto, nodes: list[NodeProto]) -> None:
    """Put ``nodes`` at the start of body ``g``."""
    if nodes:
        rest = list(g.node)
        del g.node[:]
        g.node.extend([*nodes, *rest])


def _rename_reads(g: GraphProto, old: str, new: str) -> None:
    """Reads of outer value ``old`` in body ``g`` and the bodies nested in it read ``new``."""
    for n in g.node:
        n.input[:] = [new if x == old else x for x in n.input]
        for sub in subgraphs(n):
            if old in outer_refs(sub):
                _rename_reads(sub, old, new)
    for o in g.output:
        if o.name == old:
            o.name = new
