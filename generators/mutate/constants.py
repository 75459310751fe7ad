"""Initializer <-> Constant node, in every attribute form of Constant.

Forms (Constant's schema): ``value`` (any tensor; floating point only before opset 9),
``sparse_value`` (opset 11), ``value_float`` / ``value_int`` (a scalar), ``value_floats`` /
``value_ints`` (a 1-D list) and ``value_string`` / ``value_strings`` (opset 12). A list form
of a tensor that is not 1-D is followed by a Reshape to its dims, a scalar form of a one-element
tensor by a Reshape too; a numeric tensor may also travel as strings (``value_strings`` then a
Cast, which parses decimal strings from opset 9). Constant -> initializer reads any form back.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
from onnx import AttributeProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from fuzzer.registry import Registry
from generators.builder import SPARSE_SINCE, sparse_tensor
from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import consumers, list_initializers_as_inputs
from generators.mutate.spec import Mutator

#: Opset of Constant's list, scalar and string forms.
LIST_FORMS_SINCE = 12
#: Opset from which Constant's ``value`` holds any element type.
ANY_TYPE_SINCE = 9
#: Element types a string Constant is cast back to.
FROM_STRINGS = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64,
                          TensorProto.INT32})
#: Most elements of a list or string form (longer tensors use ``value``).
MAX_LIST = 4096


def _strings(array: np.ndarray) -> list[bytes]:
    if array.dtype.kind == "f":
        return [repr(float(v)).encode() for v in array.ravel()]
    return [str(int(v)).encode() for v in array.ravel()]


#: form -> ``(array, opset) -> (attribute value, element type of the Constant) | None``.
FORMS: Registry[Callable[[np.ndarray, int], tuple[object, int] | None]] = Registry(
    "constant form", {
    "value": lambda a, opset: (numpy_helper.from_array(a), 0)
    if opset >= ANY_TYPE_SINCE or a.dtype.kind == "f" else None,
    "sparse_value": lambda a, opset: (sparse_tensor(a, "sparse"), 0)
    if opset >= SPARSE_SINCE and a.ndim and a.size and a.dtype.kind in "fiu" else None,
    "value_float": lambda a, opset: (float(a.ravel()[0]), TensorProto.FLOAT)
    if a.dtype == np.float32 and a.size == 1 else None,
    "value_floats": lambda a, opset: ([float(v) for v in a.ravel()], TensorProto.FLOAT)
    if a.dtype == np.float32 and 0 < a.size <= MAX_LIST else None,
    "value_int": lambda a, opset: (int(a.ravel()[0]), TensorProto.INT64)
    if a.dtype == np.int64 and a.size == 1 else None,
    "value_ints": lambda a, opset: ([int(v) for v in a.ravel()], TensorProto.INT64)
    if a.dtype == np.int64 and 0 < a.size <= MAX_LIST else None,
    "value_string": lambda a, opset: (_strings(a)[0], TensorProto.STRING)
    if a.size == 1 and helper.np_dtype_to_tensor_dtype(a.dtype) in FROM_STRINGS else None,
    "value_strings": lambda a, opset: (_strings(a), TensorProto.STRING)
    if 0 < a.size <= MAX_LIST and helper.np_dtype_to_tensor_dtype(a.dtype) in FROM_STRINGS
    else None,
})
#: Forms that need :data:`LIST_FORMS_SINCE`.
_LIST_FORMS = frozenset(FORMS) - {"value", "sparse_value"}


def _form_attribute(form: str, value: object) -> AttributeProto:
    if form == "sparse_value":
        a = AttributeProto()
        a.name, a.type = form, AttributeProto.SPARSE_TENSOR
        a.sparse_tensor.CopyFrom(value)
        return a
    if form == "value_string":
        return helper.make_attribute(form, value)
    if form == "value_strings":
        return helper.make_attribute(form, value, attr_type=AttributeProto.STRINGS)
    return helper.make_attribute(form, value)


def initializer_to_constant(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Replace an initializer (not a graph input from IR 4 on) by a Constant node of the same
    name in one of the :data:`FORMS` it fits, plus the Cast and Reshape that restore its type
    and dims where the form changes them."""
    g = model.graph
    listed = {i.name for i in g.input}
    outs = {o.name for o in g.output}
    cands = [t for t in g.initializer if (model.ir_version < 4 or t.name not in listed)
             and t.name not in outs and t.data_location != TensorProto.EXTERNAL]
    if not cands:
        return None
    b = builder_for(model, rng, pool=False)
    tensor = rng.choice(cands)
    array = numpy_helper.to_array(tensor)
    fits = {form: made for form, make in FORMS.items()
            if (form not in _LIST_FORMS or b.opset >= LIST_FORMS_SINCE)
            and (made := make(array, b.opset)) is not None}
    if not fits:
        return None
    form = rng.choice(sorted(fits))
    value, elem = fits[form]
    if form == "value":
        value.name = tensor.name
    name = tensor.name
    steps = []
    if elem not in (0, tensor.data_type):
        steps.append("Cast")
    if elem and (form in ("value_float", "value_int", "value_string") and array.ndim != 0
                 or form not in ("value_float", "value_int", "value_string")
                 and array.ndim != 1):
        steps.append("Reshape")
    out = b.namer.tensor("Constant") if steps else name
    node = NodeProto()
    node.op_type = "Constant"
    node.output.append(out)
    node.attribute.append(_form_attribute(form, value))
    b.nodes.append(node)
    for step in steps:
        last = step == steps[-1]
        if step == "Cast":
            out = b.node("Cast", [out], to=tensor.data_type,
                         outputs=[name] if last else None)[0]
        else:
            shape = b.ints(list(array.shape), "Reshape")
            out = b.node("Reshape", [out, shape.name], outputs=[name] if last else None)[0]
    g.initializer.remove(tensor)
    if name in listed:
        g.input.remove([i for i in g.input if i.name == name][0])
    return merge(model, b)


def _dense(node: NodeProto) -> TensorProto | None:
    """The tensor a Constant node holds, whatever its form, or None."""
    if len(node.attribute) != 1 or not node.output:
        return None
    a = node.attribute[0]
    if a.ref_attr_name:
        return None
    if a.type == AttributeProto.TENSOR:
        t = TensorProto()
        t.CopyFrom(a.t)
    elif a.type == AttributeProto.SPARSE_TENSOR:
        st = a.sparse_tensor
        values = numpy_helper.to_array(st.values)
        idx = numpy_helper.to_array(st.indices)
        dense = np.zeros(list(st.dims), values.dtype)
        if idx.ndim == 2:
            idx = np.ravel_multi_index(tuple(idx.T), dense.shape) if idx.size else idx[:, 0]
        dense.ravel()[idx] = values
        t = numpy_helper.from_array(dense)
    else:
        value = helper.get_attribute_value(a)
        arrays = {"value_float": np.float32, "value_floats": np.float32,
                  "value_int": np.int64, "value_ints": np.int64}
        if a.name in arrays:
            t = numpy_helper.from_array(np.asarray(value, arrays[a.name]))
        elif a.name in ("value_string", "value_strings"):
            t = helper.make_tensor("", TensorProto.STRING,
                                   [] if a.name == "value_string" else [len(value)],
                                   [value] if a.name == "value_string" else list(value))
        else:
            return None
    t.name = node.output[0]
    return t


def constant_to_initializer(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Replace a Constant node of the main graph (any form) by an initializer of its output's
    name."""
    g = model.graph
    outs = {o.name for o in g.output}
    users = consumers(g)
    cands = [k for k, n in enumerate(g.node) if n.op_type == "Constant" and
             n.domain in ("", "ai.onnx") and n.output[0] not in outs and n.output[0] in users]
    rng.shuffle(cands)
    for k in cands:
        tensor = _dense(g.node[k])
        if tensor is not None:
            del g.node[k]
            g.initializer.append(tensor)
            list_initializers_as_inputs(model)
            return model
    return None


MUTATORS = (
    Mutator("initializer-to-constant", "weight-form", initializer_to_constant, weight=1.5),
    Mutator("constant-to-initializer", "weight-form", constant_to_initializer),
)
