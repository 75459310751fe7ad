"""How generated models store their tensors: raw or in the typed fields, values unchanged,
and the motifs that put tensors of every element type where optimizers parse them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from generators import generate_model
from generators.builder import store_typed
from generators.generate import TYPED_STORAGE_SHARE, stored_tensors

TYPES = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16,
         TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
         TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64,
         TensorProto.BOOL]


@pytest.mark.parametrize("dtype", TYPES)
def test_typed_storage_keeps_every_value(dtype):
    values = np.array([0, 1, 2, 3, 1.5, -2.0]).reshape(2, 3)
    if dtype == TensorProto.BFLOAT16:  # no numpy type: the bit patterns, raw
        bits = (values.astype(np.float32).view(np.uint32) >> 16).astype("<u2")
        raw = helper.make_tensor("t", dtype, [2, 3], bits.tobytes(), raw=True)
    else:
        np_type = helper.tensor_dtype_to_np_dtype(dtype)
        kind = np.dtype(np_type).kind
        array = (values if kind == "f" else np.abs(values).astype(np.int64)).astype(np_type)
        raw = numpy_helper.from_array(array, "t")
    before = numpy_helper.to_array(raw)
    assert raw.HasField("raw_data")
    typed = store_typed(raw)
    assert not typed.HasField("raw_data")
    assert np.array_equal(numpy_helper.to_array(typed), before)


def test_a_third_of_generated_models_store_tensors_typed_and_stay_deterministic():
    typed = weighted = 0
    for seed in range(150):
        model = generate_model(seed).model
        tensors = [t for t in stored_tensors(model) if t.data_type != TensorProto.STRING]
        weighted += bool(tensors)
        typed += any(not t.HasField("raw_data") for t in tensors)
        assert generate_model(seed).model == model
    assert weighted > 100 and abs(typed / weighted - TYPED_STORAGE_SHARE) < 0.12


def test_typed_duplicates_and_constant_twins_cover_many_element_types():
    seen_init, seen_const = set(), set()
    for seed in range(60):
        gm = generate_model(seed, motifs=["typed-duplicate-initializers", "constant-twins"],
                            opset=17, nodes=(1, 2))
        seen_init |= {t.data_type for t in gm.model.graph.initializer}
        seen_const |= {a.name for n in gm.model.graph.node if n.op_type == "Constant"
                       for a in n.attribute}
    assert len(seen_init & set(TYPES)) >= 10
    assert {TensorProto.COMPLEX64, TensorProto.COMPLEX128, TensorProto.STRING} <= seen_init
    assert seen_const >= {"value", "value_float", "value_floats", "value_int", "value_ints",
                          "value_string", "value_strings"}
