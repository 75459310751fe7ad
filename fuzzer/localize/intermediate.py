"""Judging an intermediate model (the output of a prefix of the minimal pass list) for damage
that the campaign's oracles do not see, and staging a model so that damage cannot hide.

Both functions run in a sandbox worker (:meth:`fuzzer.execution.sandbox.Sandbox.call`): they
load untrusted models into onnx and onnxruntime. They import nothing of optfuzz.

* :func:`declared_shape_damage`: every tensor whose shape the model declares (value_info and
  graph outputs) is made a graph output, the model runs in onnxruntime (CPU, no graph
  optimization, as the reference run), and each declared shape is held against the shape
  onnxruntime computed. A pass that writes a wrong shape into value_info (onnxoptimizer 0.4.2's
  ``eliminate_consecutive_idempotent_ops`` writes an unknown shape as rank 0) leaves a model
  that checks and runs, until a later pass trusts that shape.
* :func:`typed_copy`: a serialization can hide such damage. onnx IR, which onnxoptimizer's
  passes work on, writes no value_info for a value whose element type it does not know, so a
  shape set on such a value vanishes from the saved model. The typed copy declares the element
  type (never the shape) of every value that shape inference types, so the intermediate
  carries whatever shape a pass sets.
"""

from __future__ import annotations

from typing import Any

#: declared shapes a judgement lists at most.
MAX_DAMAGES = 5


def _dims(value: Any) -> list[int | None] | None:
    """The declared dims of a ValueInfoProto (None for a symbolic or unknown dim), or None
    where it declares no tensor shape."""
    kind = value.type
    if not kind.HasField("tensor_type") or not kind.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in kind.tensor_type.shape.dim]


def _show(dims: list[int | None] | tuple[int, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def declared_shape_damage(model_bytes: bytes, feeds: dict[str, Any]) -> list[str]:
    """Declared shapes of ``model_bytes`` (a serialized ModelProto) that onnxruntime's run on
    ``feeds`` (input name -> ndarray) contradicts: a rank, or a fixed dimension, other than
    the one computed. Each item is one sentence naming the tensor (``declared shape of `t3`
    is [] (rank 0); onnxruntime computes [2, 3]``), at most :data:`MAX_DAMAGES`, in graph
    order. Only tensors of the main graph that a node produces are judged; a model that
    onnx or onnxruntime cannot load or run gives ``[]`` (the oracles judge that)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    try:
        model = onnx.load_model_from_string(model_bytes)
    except Exception:
        return []
    graph = model.graph
    produced = {out for node in graph.node for out in node.output if out}
    declared: dict[str, list[int | None]] = {}
    for value in (*graph.value_info, *graph.output):
        dims = _dims(value)
        if dims is not None and value.name in produced and value.name not in declared:
            declared[value.name] = dims
    if not declared:
        return []
    listed = {o.name for o in graph.output}
    for value in graph.value_info:
        if value.name in declared and value.name not in listed:
            exposed = graph.output.add()
            exposed.CopyFrom(value)
            exposed.type.tensor_type.ClearField("shape")
            listed.add(value.name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        wanted = {i.name for i in session.get_inputs()}
        arrays = session.run(names, {k: v for k, v in feeds.items() if k in wanted})
    except Exception:
        return []
    damages = []
    for name, array in zip(names, arrays, strict=True):
        dims = declared.get(name)
        shape = np.shape(array)
        if dims is None:
            continue
        wrong = len(dims) != len(shape) or any(d is not None and d != s
                                                for d, s in zip(dims, shape, strict=True))
        if wrong:
            rank = f" (rank {len(dims)})" if len(dims) != len(shape) else ""
            damages.append(f"declared shape of `{name}` is {_show(dims)}{rank}; onnxruntime "
                           f"computes {_show(shape)}")
        if len(damages) >= MAX_DAMAGES:
            break
    return damages


def typed_copy(model_bytes: bytes) -> bytes | None:
    """``model_bytes`` (a serialized ModelProto) with a value_info entry that declares only
    the element type for every main-graph value that shape inference types and the model
    does not declare yet (graph inputs, outputs and initializers already carry theirs);
    None where shape inference fails or nothing is left to declare."""
    import onnx

    try:
        model = onnx.load_model_from_string(model_bytes)
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        return None
    graph = model.graph
    known = {v.name for v in (*graph.input, *graph.output, *graph.value_info)}
    known.update(t.name for t in graph.initializer)
    added = 0
    for value in inferred.graph.value_info:
        kind = value.type
        if value.name in known or not kind.HasField("tensor_type") or \
                not kind.tensor_type.elem_type:
            continue
        graph.value_info.append(onnx.helper.make_tensor_value_info(
            value.name, kind.tensor_type.elem_type, None))
        known.add(value.name)
        added += 1
    return model.SerializeToString() if added else None
