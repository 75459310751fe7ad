"""The operator catalogue and the motif library: sizes, required op types, one motif family
per onnxoptimizer pass, the families found per target folder, and the first generator's three
motifs."""

from __future__ import annotations

import onnxoptimizer

from generators import generate_model
from generators.motifs import HINTED_ONLY_MOTIFS, MOTIFS, families, motifs_for_pass
from generators.motifs.reach import UNREACHABLE
from generators.ops import OP_TYPES, V1_OP_TYPES

REQUIRED = {
    "Shape", "Size", "Gather", "Slice", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
    "Transpose", "Concat", "Split", "Pad", "Expand", "Tile", "Conv", "ConvTranspose",
    "BatchNormalization", "MatMul", "Gemm", "Einsum", "Add", "Sub", "Mul", "Div", "Cast",
    "Dropout", "Identity", "If", "Loop", "LogSoftmax", "Softmax", "ReduceSum", "ReduceMean",
    "ReduceMax", "ArgMax", "ArgMin", "Where", "Resize", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Clip", "Relu", "LeakyRelu", "Constant", "ConstantOfShape", "Range",
}


def test_catalogue_sizes() -> None:
    assert len(OP_TYPES) >= 80
    assert len(V1_OP_TYPES) >= 25
    assert REQUIRED <= OP_TYPES


def test_every_pass_has_a_motif_or_a_reason() -> None:
    for name in onnxoptimizer.get_available_passes():
        assert motifs_for_pass(name) or name in UNREACHABLE, name


def test_families_are_found_in_each_targets_folder() -> None:
    found = {m.__name__.removeprefix("generators.motifs.") for m in families()}
    assert {"weights", "fusion", "runs", "onnxruntime.fusion", "onnxruntime.qdq",
            "onnxruntime_transformers.blocks", "onnxscript.rules", "onnxslim.conv",
            "onnxsim.fold", "version_converter.opset_changes"} <= found
    assert not found & {"helpers", "shaped", "spec", "reach"}  # helpers, not families
    orders = [m.ORDER for m in families()]
    assert orders == sorted(set(orders))  # every family has its own place in the draw order
    hinted = {m.name for f in families() if getattr(f, "HINTED_ONLY", False) for m in f.MOTIFS}
    assert hinted == HINTED_ONLY_MOTIFS and hinted
    assert sum(len(f.MOTIFS) for f in families()) == len(MOTIFS)


def test_generated_models_use_many_op_types_and_dtypes() -> None:
    seen_ops: set[str] = set()
    seen_types: set[int] = set()
    for seed in range(300):
        g = generate_model(seed).model.graph
        seen_ops.update(n.op_type for n in g.node)
        seen_types.update(v.type.tensor_type.elem_type for v in [*g.input, *g.output])
    assert len(seen_ops) >= 80
    assert {1, 10, 6, 7, 9} <= seen_types  # float, float16, int32, int64, bool


def _v1_with(motif: str):
    for seed in range(200):
        gm = generate_model(seed, generator="v1", passes=[motif_pass[motif]])
        if motif in gm.motifs:
            return gm
    raise AssertionError(f"v1 never applied {motif}")


motif_pass = {"conv-bn": "fuse_bn_into_conv",
              "constant-weights": "extract_constant_to_initializer",
              "duplicate-initializers": "eliminate_duplicate_initializer"}


def test_v1_conv_bn() -> None:
    g = _v1_with("conv-bn").model.graph
    producer = {o: n for n in g.node for o in n.output}
    assert any(n.op_type == "BatchNormalization" and producer.get(n.input[0]) is not None
               and producer[n.input[0]].op_type == "Conv" for n in g.node)


def test_v1_constant_weights() -> None:
    g = _v1_with("constant-weights").model.graph
    assert any(n.op_type == "Constant" for n in g.node)
    assert not g.initializer


def test_v1_duplicate_initializers() -> None:
    g = _v1_with("duplicate-initializers").model.graph
    seen: dict[bytes, str] = {}
    dup = False
    for t in g.initializer:
        key = bytes([t.data_type]) + bytes(str(list(t.dims)), "ascii") + t.raw_data
        dup |= key in seen and seen[key] != t.name
        seen.setdefault(key, t.name)
    assert dup


def test_v1_stays_in_its_catalogue() -> None:
    for seed in range(100):
        gm = generate_model(seed, generator="v1")
        assert {n.op_type for n in gm.model.graph.node} <= V1_OP_TYPES
        assert set(gm.motifs) <= {m for m in MOTIFS if MOTIFS[m].v1}
