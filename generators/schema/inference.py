"""What ONNX shape inference says about a builder's graph under construction.

:func:`partial_model` makes the builder's graph so far a model; :func:`infer_types` gives
every tensor its type, symbolic dims at the sizes the generator knows; :func:`static_types`
infers the graph from its inputs at those sizes, so that a changed static shape shows
wherever it flows (``infer_types`` would put back the recorded shape of a pooled value).
"""

from __future__ import annotations

import onnx
from onnx import TypeProto, helper

from generators.builder import GraphBuilder, value_info
from generators.inputs import DEFAULT_DYNAMIC_DIM
from generators.versions import ir_version_for


def partial_model(b: GraphBuilder, annotate: bool = False) -> onnx.ModelProto:
    """The builder's graph so far as a model (the builder is left as it is); ``annotate``:
    with the value_info the motifs declared and that of every other pooled value's static
    type, as the finished model may declare it
    (:meth:`generators.builder.GraphBuilder.annotate`). Its IR version is at
    least 4, so that shape inference reads initializers as constants (an IR 3 model lists
    them as overridable inputs: a Reshape by an initializer would have no inferred shape,
    and an edit that changes the shapes after it would pass unseen)."""
    g = onnx.GraphProto()
    g.name = "partial"
    g.node.extend(b.nodes)
    g.initializer.extend(b.initializers)
    g.input.extend(b.inputs)
    g.output.extend(b.outputs)
    if annotate:
        skip = b.input_names | b.output_names
        g.value_info.extend(b.value_infos)  # what the motifs declared, as the model will
        skip |= {vi.name for vi in b.value_infos}
        g.value_info.extend(value_info(v.name, v.dtype, v.shape) for v in b.pool
                            if v.name not in skip)
    imports = [helper.make_opsetid("", b.opset)] + [
        helper.make_opsetid(d, 1) for d in sorted({n.domain for n in b.nodes} - {"", "ai.onnx"})]
    m = helper.make_model(g, opset_imports=imports, ir_version=max(ir_version_for(b.opset), 4))
    m.functions.extend(b.functions)
    return m


def infer_types(b: GraphBuilder, strict: bool = False) -> dict[str, TypeProto]:
    """Every tensor of the builder's graph -> its inferred TypeProto (strict: raise on any
    inference error).

    Raises:
        onnx.shape_inference.InferenceError: ``strict`` and the graph is not well typed.
    """
    m = onnx.shape_inference.infer_shapes(partial_model(b, annotate=strict),
                                          check_type=True, strict_mode=strict,
                                          data_prop=True)
    out: dict[str, TypeProto] = {}
    for vi in [*m.graph.input, *m.graph.value_info, *m.graph.output]:
        out[vi.name] = vi.type
    for t in m.graph.initializer:
        out.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
    for v in b.pool:  # symbolic dims at the sizes the generator knows (its static shapes)
        t = out.get(v.name)
        if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            out[v.name] = helper.make_tensor_type_proto(v.dtype, list(v.shape))
            continue
        dims = t.tensor_type.shape.dim
        if len(dims) == len(v.shape) and any(not d.HasField("dim_value") for d in dims):
            out[v.name] = helper.make_tensor_type_proto(t.tensor_type.elem_type, list(v.shape))
    pooled = {v.name for v in b.pool}
    for name, shape in fed_shapes(b).items():  # graph inputs the pool does not hold
        t = out.get(name)
        if name not in pooled and t is not None and t.HasField("tensor_type") and \
                shape_of(out, name) is None:
            out[name] = helper.make_tensor_type_proto(t.tensor_type.elem_type, list(shape))
    return out


def fed_shapes(b: GraphBuilder) -> dict[str, tuple[int, ...]]:
    """Each tensor graph input of the builder -> the static shape it is fed: the shape the
    pool records for it, else its declared dims with a symbolic or unknown dim at
    :data:`generators.inputs.DEFAULT_DYNAMIC_DIM` (the size
    :meth:`generators.builder.GraphBuilder.graph_input` builds such a dim at, and
    :func:`generators.inputs.synthesize_inputs` feeds it). A graph input that leaves the
    pool (a later op may not read it) is still fed, at these sizes: the checks of a draw
    run its window at them, not with the dims left unknown (where onnxruntime's check of
    the window has nothing to feed, and passes it unrun)."""
    pooled = {v.name: v.shape for v in b.pool}
    out: dict[str, tuple[int, ...]] = {}
    for vi in b.inputs:
        if vi.name in pooled:
            out[vi.name] = pooled[vi.name]
        elif vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else
                                 DEFAULT_DYNAMIC_DIM for d in vi.type.tensor_type.shape.dim)
    return out


def elem_of(types: dict[str, TypeProto], name: str) -> int:
    t = types.get(name)
    return t.tensor_type.elem_type if t is not None and t.HasField("tensor_type") else 0


def shape_of(types: dict[str, TypeProto], name: str) -> tuple[int, ...] | None:
    t = types.get(name)
    if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    dims = t.tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def static_types(b: GraphBuilder, strict: bool = False) -> dict[str, TypeProto]:
    """Every tensor of the builder's graph -> its TypeProto as inference gives it (data
    propagated; ``strict``: raising on any inference error) with each graph input
    declared at the static shape it is fed (:func:`fed_shapes`: a symbolic dim at its
    size, 1) and each graph output without the shape it declares: shapes come out static
    where inference can tell them, and none is taken from the builder's records.
    Initializers have their own types.

    Raises:
        onnx.shape_inference.InferenceError: ``strict`` and the graph is not well typed.
    """
    m = partial_model(b)
    pooled = {v.name: v for v in b.pool}
    fed = fed_shapes(b)
    for vi in m.graph.input:
        v = pooled.get(vi.name)
        if v is not None:
            vi.CopyFrom(value_info(v.name, v.dtype, v.shape))
        elif vi.name in fed:
            vi.CopyFrom(value_info(vi.name, vi.type.tensor_type.elem_type, fed[vi.name]))
    for vi in m.graph.output:
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    m = onnx.shape_inference.infer_shapes(m, check_type=strict, strict_mode=strict,
                                          data_prop=True)
    out = {vi.name: vi.type for vi in [*m.graph.input, *m.graph.value_info, *m.graph.output]}
    for t in m.graph.initializer:
        out.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
    return out
