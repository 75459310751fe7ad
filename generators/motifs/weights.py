"""Motifs about where weights live: Constant nodes instead of initializers, weights as graph
inputs, duplicate initializers (same values, different names), unused initializers, weights
shared by several consumers."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from generators.builder import GraphBuilder, store_typed, tensor_proto, value_info
from generators.motifs.spec import Motif
from generators.values import FLOAT, Value


def _constant_weights(b: GraphBuilder) -> None:
    b.weights = "constant"


def _input_weights(b: GraphBuilder) -> None:
    b.weights = "input"


def _duplicate_initializers(b: GraphBuilder) -> None:
    """Copy some initializers under new names and point some consumers at the copies."""
    if not b.initializers:  # weights live in Constant nodes: add one (unused) initializer
        b.random_weight((2, 3), FLOAT, "Add", placement="initializer")
    users: dict[str, list] = {}
    for n in b.nodes:
        for i, name in enumerate(n.input):
            users.setdefault(name, []).append((n, i))
    for t in list(b.initializers)[: b.rng.randint(1, 3)]:
        copy = type(t)()
        copy.CopyFrom(t)
        copy.name = b.namer.weight("Dup")
        b.initializers.append(copy)
        if t.name in b.input_names:
            b.inputs.append(value_info(copy.name, t.data_type, list(t.dims)))
            b.input_names.add(copy.name)
        for n, i in users.get(t.name, [])[1::2] or users.get(t.name, []):
            n.input[i] = copy.name


def _unused_initializer(b: GraphBuilder) -> None:
    arr = b.nprng.standard_normal((b.rng.randint(1, 4),)).astype(np.float32)
    b.initializers.append(tensor_proto(arr, b.namer.weight("Unused")))


def _shared_weight(b: GraphBuilder, x: Value) -> Value:
    """One weight consumed by two nodes (Add and Mul of the same x)."""
    w = b.random_weight(x.shape[-1:], x.dtype, "Add")
    a = b.op("Add", [x, w], x.dtype, x.shape)
    return b.op("Mul", [a, w], x.dtype, x.shape)


#: element types of typed duplicates: every type a Cast reads (opset 13 adds bfloat16), each
#: parsed by onnxoptimizer's ParseTensorData<T> when it hashes initializers.
WIDE_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
              TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32,
              TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64, TensorProto.BOOL)


def _stored(array: np.ndarray, dtype: int, name: str, raw: bool) -> TensorProto:
    """``array`` as a TensorProto of element type ``dtype``, in ``raw_data`` or in the typed
    field the ONNX spec assigns that type (:func:`generators.builder.store_typed`)."""
    if dtype == TensorProto.BFLOAT16:
        bits = (np.asarray(array, np.float32).view(np.uint32) >> 16).astype("<u2")
        tensor = helper.make_tensor(name, dtype, array.shape, bits.tobytes(), raw=True)
    else:
        typed = np.asarray(array).astype(helper.tensor_dtype_to_np_dtype(dtype))
        tensor = helper.make_tensor(name, dtype, array.shape, typed.tobytes(), raw=True)
    return tensor if raw else store_typed(tensor)


def _typed_duplicates(b: GraphBuilder, x: Value) -> Value:
    """Two initializers with the same values, of a random element type and each stored raw
    or typed (so one pair may differ only in storage), cast to x's type and added to x."""
    kinds = WIDE_TYPES + ((TensorProto.BFLOAT16,) if b.opset >= 13 else ())
    dtype = b.rng.choice(kinds)
    width = x.shape[-1]
    if dtype == TensorProto.BOOL:
        array = b.nprng.integers(0, 2, width).astype(np.bool_)
    elif dtype in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
                   TensorProto.BFLOAT16):
        array = b.nprng.standard_normal(width)
    else:
        array = b.nprng.integers(0, 4, width)
    names = [b.namer.weight("Cast") for _ in range(2)]
    stored = [_stored(array, dtype, name, b.rng.random() < 0.5) for name in names]
    b.initializers.extend(stored)
    casts = [b.op("Cast", [name], x.dtype, (width,), to=x.dtype) for name in names]
    both = b.op("Add", casts, x.dtype, (width,))
    if b.rng.random() < UNCASTABLE_SHARE:
        _uncastable_twins(b, width)
    return b.op("Add", [x, both], x.dtype, x.shape)


#: share of typed duplicates that also add an unused pair of a type no Cast reads.
UNCASTABLE_SHARE = 0.3


def _uncastable_twins(b: GraphBuilder, width: int) -> None:
    """An unused pair of equal complex64, complex128 or string initializers (raw or in
    ``float_data``/``double_data``; strings in ``string_data``): an optimizer that hashes
    initializers parses them too."""
    kind = b.rng.choice((np.complex64, np.complex128, np.bytes_))
    if kind is np.bytes_:
        array = np.array([b.rng.choice((b"a", b"", b"optfuzz")) for _ in range(width)],
                         dtype=object)
    else:
        array = (b.nprng.standard_normal(width) + 1j * b.nprng.standard_normal(width))
        array = array.astype(kind)
    for _ in range(2):
        tensor = numpy_helper.from_array(array, b.namer.weight("Unused"))
        if kind is not np.bytes_ and b.rng.random() < 0.5:
            field = "float_data" if kind is np.complex64 else "double_data"
            tensor.ClearField("raw_data")
            getattr(tensor, field).extend(float(v) for c in array for v in (c.real, c.imag))
        b.initializers.append(tensor)


#: Constant attribute forms (opset 12 adds all but ``value``).
CONSTANT_FORMS = ("value", "value_float", "value_floats", "value_int", "value_ints",
                  "value_string", "value_strings")


def _constant_attribute(b: GraphBuilder, form: str, width: int) -> tuple[Any, int, int]:
    """A Constant's value in attribute ``form``: ``(attribute value, element type, rank)``;
    ``value`` holds a tensor of a random type of :data:`WIDE_TYPES`, stored raw or typed."""
    if form == "value":
        kinds = WIDE_TYPES + ((TensorProto.BFLOAT16,) if b.opset >= 13 else ())
        dtype = b.rng.choice(kinds)
        array = b.nprng.integers(0, 2, width) if dtype == TensorProto.BOOL else \
            b.nprng.integers(0, 4, width)
        return _stored(array, dtype, "value", b.rng.random() < 0.5), dtype, 1
    if form in ("value_float", "value_int"):
        number = float(b.nprng.standard_normal()) if form == "value_float" else \
            int(b.nprng.integers(-3, 4))
        return number, TensorProto.FLOAT if form == "value_float" else TensorProto.INT64, 0
    if form in ("value_floats", "value_ints"):
        values = b.nprng.standard_normal(width).tolist() if form == "value_floats" else \
            [int(v) for v in b.nprng.integers(-3, 4, width)]
        return values, TensorProto.FLOAT if form == "value_floats" else TensorProto.INT64, 1
    words = [b.rng.choice(("a", "", "optfuzz", "0")) for _ in range(width)]
    value = words[0] if form == "value_string" else helper.make_attribute(form, words)
    return value, TensorProto.STRING, 0 if form == "value_string" else 1


def _constant_twins(b: GraphBuilder, x: Value) -> Value:
    """Two Constant nodes with the same value in one attribute form (a tensor of any type,
    raw or typed, or a scalar or list of floats, ints or strings): common-subexpression
    elimination hashes and compares them by that form. Numbers are cast to x's type and
    added to x; strings stay unused."""
    forms = CONSTANT_FORMS if b.opset >= 12 else CONSTANT_FORMS[:1]
    form, width = b.rng.choice(forms), x.shape[-1]
    value, dtype, rank = _constant_attribute(b, form, width)
    twins = [b.node("Constant", [], **{form: value})[0] for _ in range(2)]
    if dtype == TensorProto.STRING:
        return b.op("Identity", [x], x.dtype, x.shape, x.props)
    shape = (width,) if rank else ()
    casts = [b.op("Cast", [t], x.dtype, shape, to=x.dtype) for t in twins]
    both = b.op("Add", casts, x.dtype, shape)
    return b.op("Add", [x, both], x.dtype, x.shape)


MOTIFS = (
    Motif("constant-weights", ("extract_constant_to_initializer",), setup=_constant_weights,
          v1=True),
    Motif("input-weights", ("split_init", "split_predict"), setup=_input_weights),
    Motif("duplicate-initializers", ("eliminate_duplicate_initializer",),
          finish=_duplicate_initializers, v1=True),
    Motif("unused-initializer", ("eliminate_unused_initializer",), finish=_unused_initializer),
    Motif("shared-weight", ("eliminate_duplicate_initializer", "split_predict"),
          emit=_shared_weight,
          anchors=("Add", "Mul")),
    Motif("typed-duplicate-initializers",
          ("eliminate_duplicate_initializer", "eliminate_common_subexpression"),
          emit=_typed_duplicates, since=9,
          anchors=("Cast",)),
    Motif("constant-twins", ("eliminate_common_subexpression",), emit=_constant_twins,
          since=9,
          anchors=("Cast",)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 10
