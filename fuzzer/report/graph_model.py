"""An ONNX graph as a networkx DiGraph ready to draw: one vertex per node, graph input,
graph output and (small graphs only) initializer; edges labelled with the tensor's dtype and
shape from shape inference.

Vertex attributes: ``kind`` (``op``, ``input``, ``output``, ``initializer``), ``label``
(text lines), ``mark`` (``None``, ``removed`` or ``added``: nodes the other model lacks, an
attribute change included). A marked node's label also shows its attributes as
``name=value``: only those that differ where the other model has a node of the same op type,
inputs and outputs (a Pad whose ``value`` became 0.5 shows ``value=0.5``), else all of them.
Edge attribute: ``label`` (``f32[1,3,8,8]`` or the tensor name where no shape is known).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx

#: at most this many initializers are drawn as vertices of their own.
MAX_INITIALIZERS_DRAWN = 12
#: a marked node shows at most this many attributes (then ``+N more``), each cut to
#: :data:`MAX_ATTRIBUTE_CHARS` characters.
MAX_ATTRIBUTES_SHOWN = 4
MAX_ATTRIBUTE_CHARS = 26
#: a tensor attribute with at most this many elements shows its values.
MAX_TENSOR_VALUES_SHOWN = 4
#: ``AttributeProto.type`` of subgraphs (GRAPH, GRAPHS): counted on the label, never listed.
SUBGRAPH_TYPES = (5, 10)
_SHORT_DTYPE = (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i"),
                ("complex", "c"), ("bool", "bool"))


def short_dtype(elem_type: int) -> str:
    """ONNX element type -> short name (``1`` -> ``f32``, ``7`` -> ``i64``); ``?`` if
    unknown."""
    import onnx

    try:
        name = onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    except Exception:
        return "?"
    for long, short in _SHORT_DTYPE:
        if name.startswith(long):
            return short + name[len(long):]
    return name


def type_label(type_proto: Any) -> str | None:
    """``f32[2,3]`` for a tensor TypeProto (symbolic dims by name, unknown ones ``?``);
    None when it is not a tensor type with an element type."""
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.elem_type:
        return None
    tensor = type_proto.tensor_type
    dtype = short_dtype(tensor.elem_type)
    if not tensor.HasField("shape"):
        return dtype
    dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
            for d in tensor.shape.dim]
    return f"{dtype}[{','.join(dims)}]"


def _infer(data: bytes) -> bytes:
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    return inferred.SerializeToString()


def infer_isolated(model: Any, timeout: float = 30.0) -> Any:
    """Lenient shape inference of ``model`` in a child process (onnx's C++ can abort on a
    hostile model); ``model`` itself where inference fails, dies or takes over ``timeout``
    seconds."""
    import multiprocessing

    import onnx
    from pebble import ProcessPool

    with ProcessPool(max_workers=1, context=multiprocessing.get_context("fork")) as pool:
        try:
            data = pool.schedule(_infer, args=(model.SerializeToString(),),
                                 timeout=timeout).result()
        except Exception:
            return model
    inferred = onnx.ModelProto()
    inferred.ParseFromString(data)
    return inferred


def tensor_types(model: Any) -> dict[str, str]:
    """Tensor name -> type label for every tensor whose type is known after (lenient) shape
    inference (:func:`infer_isolated`); initializers by their own dtype and dims."""
    graph = infer_isolated(model).graph
    types: dict[str, str] = {}
    for info in [*graph.value_info, *graph.input, *graph.output]:
        label = type_label(info.type)
        if label:
            types[info.name] = label
    for init in graph.initializer:
        types[init.name] = f"{short_dtype(init.data_type)}[{','.join(map(str, init.dims))}]"
    return types


def node_key(node: Any) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Place of a node across two models: op type, inputs and outputs."""
    return node.op_type, tuple(node.input), tuple(node.output)


def _value_text(value: Any) -> str:
    import onnx

    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, onnx.TensorProto):
        if 0 < _numel(value.dims) <= MAX_TENSOR_VALUES_SHOWN or not value.dims:
            try:
                array = onnx.numpy_helper.to_array(value)
                return _value_text([*array.reshape(-1).tolist()]) if value.dims else \
                    _value_text(array.item())
            except Exception:  # an element type numpy cannot hold, or damaged data
                pass
        return f"{short_dtype(value.data_type)}[{','.join(map(str, value.dims))}]"
    if isinstance(value, list):
        return "[" + ",".join(_value_text(v) for v in value) + "]"
    return str(value)


def _numel(dims: Sequence[int]) -> int:
    count = 1
    for dim in dims:
        count *= dim
    return count


def attribute_texts(node: Any) -> dict[str, str]:
    """Attribute name -> its value as short text (floats in 4 significant digits, small
    tensors by their values, others as dtype[dims]), subgraphs left out."""
    import onnx

    return {a.name: _value_text(onnx.helper.get_attribute_value(a))
            for a in node.attribute if a.type not in SUBGRAPH_TYPES}


def changed_attributes(node: Any, counterpart: Any | None) -> list[str]:
    """``name=value`` of the attributes of ``node`` that ``counterpart`` (the node in the
    other model at the same place, :func:`node_key`) lacks or holds with another value; all
    of them where there is no counterpart. At most :data:`MAX_ATTRIBUTES_SHOWN` lines (the
    last one ``+N more``), each cut to :data:`MAX_ATTRIBUTE_CHARS` characters."""
    mine = attribute_texts(node)
    theirs = attribute_texts(counterpart) if counterpart is not None else {}
    lines = [f"{name}={text}" for name, text in mine.items()
             if counterpart is None or theirs.get(name) != text]
    lines += [f"{name} unset" for name in theirs if name not in mine]
    lines = [line if len(line) <= MAX_ATTRIBUTE_CHARS else line[:MAX_ATTRIBUTE_CHARS - 1] + "…"
             for line in lines]
    if len(lines) > MAX_ATTRIBUTES_SHOWN:
        extra = len(lines) - MAX_ATTRIBUTES_SHOWN + 1
        lines = [*lines[:MAX_ATTRIBUTES_SHOWN - 1], f"+{extra} more"]
    return lines


def _same_node(node: Any, other: Any) -> bool:
    return node_key(node) == node_key(other) and \
        attribute_texts(node) == attribute_texts(other)


def _op_label(node: Any) -> list[str]:
    lines = [node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"]
    subgraphs = sum(1 for a in node.attribute if a.type in (5, 10))  # GRAPH, GRAPHS
    if subgraphs:
        lines.append(f"({subgraphs} subgraph{'s' * (subgraphs > 1)})")
    if node.name:
        lines.append(node.name if len(node.name) <= 22 else "…" + node.name[-21:])
    return lines


def model_digraph(model: Any, other_nodes: Sequence[Any] | None = None,
                  mark: str = "added") -> nx.DiGraph:
    """The drawable DiGraph of ``model``'s main graph (see module docstring).

    Args:
        model: an ``onnx.ModelProto``.
        other_nodes: the main graph's nodes of the model to compare with; a node with no
            equal among them (same :func:`node_key` and attributes) gets ``mark`` and its
            attributes on its label (:func:`changed_attributes`). None marks nothing.
        mark: ``"added"`` (for an optimized model) or ``"removed"`` (for the original).
    """
    graph = model.graph
    types = tensor_types(model)
    initializers = {i.name for i in graph.initializer}
    draw_inits = len(initializers) <= MAX_INITIALIZERS_DRAWN
    g = nx.DiGraph()
    producer: dict[str, str] = {}
    placed: dict[tuple, list[Any]] = {}
    for other in other_nodes or ():
        placed.setdefault(node_key(other), []).append(other)
    for info in graph.input:
        if info.name in initializers:
            continue
        vid = f"in:{info.name}"
        g.add_node(vid, kind="input", label=[info.name, types.get(info.name, "")], mark=None)
        producer[info.name] = vid
    if draw_inits:
        for init in graph.initializer:
            vid = f"init:{init.name}"
            g.add_node(vid, kind="initializer", label=[_short(init.name), types[init.name]],
                       mark=None)
            producer[init.name] = vid
    for index, node in enumerate(graph.node):
        vid = f"op:{index}"
        peers = placed.get(node_key(node), [])
        flagged = other_nodes is not None and not any(_same_node(node, p) for p in peers)
        label = _op_label(node)
        if flagged:
            label += changed_attributes(node, peers[0] if peers else None)
        g.add_node(vid, kind="op", label=label, mark=mark if flagged else None)
        for out in node.output:
            if out:
                producer[out] = vid
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name and name in producer:
                g.add_edge(producer[name], f"op:{index}", label=types.get(name, _short(name)))
    for info in graph.output:
        vid = f"out:{info.name}"
        g.add_node(vid, kind="output", label=[info.name, types.get(info.name, "")], mark=None)
        if info.name in producer:
            g.add_edge(producer[info.name], vid, label="")
    return g


def _short(name: str, limit: int = 18) -> str:
    return name if len(name) <= limit else "…" + name[-(limit - 1):]
