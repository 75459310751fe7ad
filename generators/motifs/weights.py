"""Motifs about where weights live: Constant nodes instead of initializers, weights as graph
inputs, duplicate initializers (same values, different names), unused initializers, weights
shared by several consumers."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from generators.builder import GraphBuilder, tensor_proto, value_info
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
    """``array`` as a TensorProto of element type ``dtype``: in ``raw_data`` or in the typed
    field the ONNX spec assigns that type (``int32_data`` for 8- and 16-bit types, float16
    and bfloat16 bit patterns and bool; ``uint64_data`` for uint32 and uint64)."""
    values = array.reshape(-1)
    if dtype == TensorProto.BFLOAT16:
        bits = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        tensor = helper.make_tensor(name, dtype, array.shape, bits.tobytes(), raw=True)
        if not raw:
            tensor.ClearField("raw_data")
            tensor.int32_data.extend(int(v) for v in bits)
        return tensor
    typed = values.astype(helper.tensor_dtype_to_np_dtype(dtype))
    if raw:
        return helper.make_tensor(name, dtype, array.shape, typed.tobytes(), raw=True)
    if dtype == TensorProto.FLOAT16:
        return helper.make_tensor(name, dtype, array.shape, typed.view(np.uint16).tolist())
    return helper.make_tensor(name, dtype, array.shape, typed.tolist())


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
    return b.op("Add", [x, both], x.dtype, x.shape)


MOTIFS = (
    Motif("constant-weights", ("extract_constant_to_initializer",), setup=_constant_weights,
          v1=True),
    Motif("input-weights", ("split_init", "split_predict"), setup=_input_weights),
    Motif("duplicate-initializers", ("eliminate_duplicate_initializer",),
          finish=_duplicate_initializers, v1=True),
    Motif("unused-initializer", ("eliminate_unused_initializer",), finish=_unused_initializer),
    Motif("shared-weight", ("eliminate_duplicate_initializer", "split_predict"),
          emit=_shared_weight),
    Motif("typed-duplicate-initializers",
          ("eliminate_duplicate_initializer", "eliminate_common_subexpression"),
          emit=_typed_duplicates, since=9),
)
