"""onnxslim's interface options, restated: ``slim``'s ``inputs``, ``outputs`` and
``input_shapes`` (``onnxslim/argparser.py``, ``ModificationArguments``: "input of the model",
"output of the model", "input shape of the model") given what the model already declares.

Each option rebuilds part of the graph before the optimization rounds
(``onnxslim/core/__init__.py``: ``input_modification`` and ``output_modification`` clear the
graph's inputs or outputs, append each named tensor again with the element type the spec
spells (``name:fp32``, ``name:fp16``, ``name:int32``, ``name:bool``) or its own type (a bare
``name``) and run onnx-graphsurgeon's ``cleanup``; ``input_shape_modification`` sets each
named input's dims and drops the shape of every other non-constant tensor). Restated, they
change nothing the model means, so a differential comparison stays valid: every input the
model feeds, every output in its order, each with its own element type (spelled where
onnxslim has a spelling for it, bare otherwise), and ``input_shapes`` only for inputs whose
dims are all fixed (a symbolic dim takes the size of the case's feed, which the target does
not see). A configuration names the restated options under :data:`INTERFACE`.

``slim``'s ``dtype="fp32"`` (``convert_data_format``: "Convert ONNX model data format to
specified dtype, supporting 'fp16' and 'fp32'") is likewise a restatement for a model that
holds no float16 at all (:func:`holds_float16`): a configuration names it under
:data:`DTYPE`, and the target passes it only for such a model.
"""

from __future__ import annotations

from typing import Any

from generators.builder import static_dims

#: configuration key: the restated interface options, a sublist of :data:`OPTIONS`.
INTERFACE = "interface"
#: ``slim`` options a configuration may restate, in the order ``slim`` applies them.
OPTIONS = ("inputs", "input_shapes", "outputs")
#: share of a campaign's configurations that restate some interface options.
RESTATE_SHARE = 0.3

#: configuration key: ``"fp32"`` where the configuration converts an all-float32 model to
#: float32 (``slim``'s ``dtype``).
DTYPE = "dtype"
#: share of a campaign's configurations that set :data:`DTYPE`.
DTYPE_SHARE = 0.1
#: attributes that name an element type a node makes (Cast's ``to``, EyeLike's ``dtype`` ...).
_TYPE_ATTRS = frozenset({"to", "dtype", "output_dtype"})
_FLOAT16 = 10

#: element type (``TensorProto``) -> how an ``inputs`` / ``outputs`` spec spells it
#: (``onnxslim/core/__init__.py``: fp16, fp32, int32, bool; others go bare).
SPELLED: dict[int, str] = {1: "fp32", 10: "fp16", 6: "int32", 9: "bool"}


def _subgraph_reads(graph: Any) -> set[str]:
    """Names the subgraphs of ``graph``'s nodes read (outer-scope values among them)."""
    names: set[str] = set()
    for node in graph.node:
        for a in node.attribute:
            for sub in [*([a.g] if a.HasField("g") else []), *a.graphs]:
                names |= {i for n in sub.node for i in n.input} | _subgraph_reads(sub)
    return names


def _fed(model: Any) -> list[Any] | None:
    """The graph inputs ``slim`` keeps after ``freeze`` (those that are no initializer) that a
    node of the main graph reads or that are graph outputs themselves: onnx-graphsurgeon's
    ``Graph.tensors()``, where ``input_modification`` looks the names up, holds no other (a
    declared input nothing reads fails there with a ``KeyError``; ``cleanup`` drops such
    inputs anyway). None where an input is read only inside a subgraph: it is not among the
    tensors either, yet leaving it out would drop it from the model."""
    inits = {t.name for t in model.graph.initializer}
    read = {name for node in model.graph.node for name in node.input} | \
        {o.name for o in model.graph.output}
    fed = [v for v in model.graph.input if v.name not in inits]
    if any(v.name not in read for v in fed if v.name in _subgraph_reads(model.graph)):
        return None
    return [v for v in fed if v.name in read]


def _spec(value: Any) -> str | None:
    """``name:type`` where onnxslim spells the type, else the bare name; None for a bare name
    holding ``:`` (TensorFlow's ``input:0``), which ``slim`` would split at its last ``:``."""
    spelled = SPELLED.get(value.type.tensor_type.elem_type)
    if spelled:
        return f"{value.name}:{spelled}"
    return None if ":" in value.name else value.name


def _specs(values: list[Any]) -> list[str]:
    """The specs of ``values``, or none at all where one cannot be spelled (restating only
    some would drop the others from the interface)."""
    specs = [_spec(v) for v in values]
    return [] if None in specs else specs


def restated(model: Any, parts: list[str]) -> dict[str, list[str]]:
    """``slim`` keyword arguments that restate ``parts`` (names from :data:`OPTIONS`) of
    ``model``'s own interface; an option with nothing to restate (no input of fixed shape)
    is left out."""
    options: dict[str, list[str]] = {}
    fed = _fed(model)
    if "inputs" in parts and fed is not None:
        options["inputs"] = _specs(fed)
    if "input_shapes" in parts:
        shapes = [f"{v.name}:{','.join(map(str, dims))}" for v in fed or []
                  if (dims := static_dims(v)) is not None]
        if shapes:
            options["input_shapes"] = shapes
    if "outputs" in parts:
        options["outputs"] = _specs(list(model.graph.output))
    return {k: v for k, v in options.items() if v}


def snippet(parts: list[str]) -> str:
    """Python lines (for a repro script, ``model`` in scope, only ``onnx`` needed) that set
    ``INTERFACE_OPTIONS`` to what :func:`restated` gives for ``parts``."""
    if not parts:
        return "INTERFACE_OPTIONS = {}\n"
    return (
        f"SPELLED = {SPELLED!r}  # onnxslim's spellings of element types\n"
        "_inits = {t.name for t in model.graph.initializer}\n"
        "def _subgraph_reads(graph):\n"
        "    names = set()\n"
        "    for node in graph.node:\n"
        "        for a in node.attribute:\n"
        "            for sub in [*([a.g] if a.HasField('g') else []), *a.graphs]:\n"
        "                names |= {i for n in sub.node for i in n.input} | _subgraph_reads(sub)\n"
        "    return names\n"
        "_read = {name for node in model.graph.node for name in node.input} | \\\n"
        "    {o.name for o in model.graph.output}\n"
        "_fed = [v for v in model.graph.input if v.name not in _inits]\n"
        "_inner = _subgraph_reads(model.graph)\n"
        "_fed = None if any(v.name not in _read for v in _fed if v.name in _inner) else \\\n"
        "    [v for v in _fed if v.name in _read]\n"
        "def _spec(v):\n"
        "    s = SPELLED.get(v.type.tensor_type.elem_type)\n"
        "    return f'{v.name}:{s}' if s else (None if ':' in v.name else v.name)\n"
        "def _specs(values):\n"
        "    specs = [_spec(v) for v in values]\n"
        "    return [] if None in specs else specs\n"
        "def _static(v):\n"
        "    t = v.type.tensor_type\n"
        "    dims = [d.dim_value if d.HasField('dim_value') else 0 for d in t.shape.dim]\n"
        "    return dims if t.HasField('shape') and all(d > 0 for d in dims) else None\n"
        "INTERFACE_OPTIONS = {\n"
        + ("    'inputs': _specs(_fed) if _fed is not None else [],\n" if "inputs" in parts
           else "")
        + ("    'input_shapes': [f\"{v.name}:{','.join(map(str, _static(v)))}\"\n"
           "                     for v in _fed or [] if _static(v) is not None],\n"
           if "input_shapes" in parts else "")
        + ("    'outputs': _specs(list(model.graph.output)),\n"
           if "outputs" in parts else "")
        + "}\n"
        "INTERFACE_OPTIONS = {k: v for k, v in INTERFACE_OPTIONS.items() if v}\n"
    )


def holds_float16(model: Any) -> bool:
    """Whether any tensor of ``model`` is float16: a graph input, output, value_info or
    initializer of that type, a node attribute that makes it (``to``, ``dtype``,
    ``output_dtype``), a constant tensor attribute of it, in the main graph or a subgraph."""
    def graph_holds(graph: Any) -> bool:
        typed = [*graph.input, *graph.output, *graph.value_info]
        if any(v.type.tensor_type.elem_type == _FLOAT16 for v in typed) or \
                any(t.data_type == _FLOAT16 for t in graph.initializer):
            return True
        for node in graph.node:
            for a in node.attribute:
                if (a.name in _TYPE_ATTRS and a.i == _FLOAT16) or \
                        (a.HasField("t") and a.t.data_type == _FLOAT16):
                    return True
                if any(graph_holds(g) for g in [*([a.g] if a.HasField("g") else []),
                                                  *a.graphs]):
                    return True
        return False

    return graph_holds(model.graph)


def dtype_snippet() -> str:
    """Python lines (``model`` in scope) that set ``DTYPE_OPTIONS`` to ``{"dtype": "fp32"}``
    where the model holds no float16 (:func:`holds_float16`), else to ``{}``."""
    return (
        "def _holds_float16(graph):\n"
        "    typed = [*graph.input, *graph.output, *graph.value_info]\n"
        "    if any(v.type.tensor_type.elem_type == 10 for v in typed) or \\\n"
        "            any(t.data_type == 10 for t in graph.initializer):\n"
        "        return True\n"
        "    for node in graph.node:\n"
        "        for a in node.attribute:\n"
        "            if (a.name in ('to', 'dtype', 'output_dtype') and a.i == 10) or \\\n"
        "                    (a.HasField('t') and a.t.data_type == 10):\n"
        "                return True\n"
        "            if any(_holds_float16(g) for g in [*([a.g] if a.HasField('g') else []),\n"
        "                                                *a.graphs]):\n"
        "                return True\n"
        "    return False\n"
        "DTYPE_OPTIONS = {} if _holds_float16(model.graph) else {'dtype': 'fp32'}\n"
    )
