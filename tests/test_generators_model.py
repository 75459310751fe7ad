"""Model-level variation: opsets with matching IR versions, exporter name styles, several
inputs and outputs, symbolic dims."""

from __future__ import annotations

import re

import onnx

from generators import generate_model
from generators.versions import ir_version_for

_EXPECTED_IR = {7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8,
                18: 8, 19: 9, 20: 9, 21: 10}


def test_ir_matches_opset_table() -> None:
    for opset, ir in _EXPECTED_IR.items():
        assert ir_version_for(opset) == ir


def test_models_declare_matching_ir_never_14() -> None:
    opsets = {"v1": set(), "v2": set()}
    for gen in opsets:
        for seed in range(300):
            m = generate_model(seed, generator=gen).model
            (imp,) = [o for o in m.opset_import if o.domain == ""]
            assert m.ir_version == _EXPECTED_IR[imp.version]
            assert m.ir_version <= 13
            opsets[gen].add(imp.version)
            if m.ir_version < 4:
                inputs = {i.name for i in m.graph.input}
                assert all(t.name in inputs for t in m.graph.initializer)
    assert opsets["v1"] == set(range(11, 22))
    assert opsets["v2"] == set(range(7, 22))


def test_exporter_name_styles() -> None:
    names: set[str] = set()
    for seed in range(200):
        g = generate_model(seed).model.graph
        names.update(n for node in g.node for n in node.output)
        names.update(t.name for t in g.initializer)
        names.update(i.name for i in g.input)
    assert any(re.fullmatch(r"\d+", n) for n in names)
    assert any(re.fullmatch(r"onnx::\w+_\d+", n) for n in names)
    assert any(re.fullmatch(r"/layer\d+/\w+/\w+_output_0", n) for n in names)
    assert "input.1" in names
    assert any(n.endswith(":0") for n in names)


def test_several_inputs_outputs_and_symbolic_dims() -> None:
    many_in = many_out = symbolic = with_value_info = 0
    for seed in range(200):
        gm = generate_model(seed)
        g = gm.model.graph
        many_in += len(g.input) - len(g.initializer) > 1
        many_out += len(g.output) > 1
        with_value_info += len(g.value_info) > 0
        dims = [d for i in g.input for d in i.type.tensor_type.shape.dim]
        if any(d.dim_param for d in dims):
            symbolic += 1
            assert gm.input_shapes
    assert min(many_in, many_out, symbolic, with_value_info) >= 10


def test_node_names_include_empty_ones() -> None:
    empty = sum(any(not n.name for n in generate_model(s).model.graph.node)
                for s in range(200))
    assert empty >= 5


def test_subgraphs_read_outer_scope() -> None:
    for seed in range(100):
        g = generate_model(seed, motifs=["outer-scope-subgraph"], opset=13).model.graph
        for node in g.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    body = attr.g
                    local = {o for n in body.node for o in n.output} | \
                        {i.name for i in body.input}
                    if any(i not in local for n in body.node for i in n.input if i):
                        return
    raise AssertionError("no subgraph read an outer-scope value")


def test_a_constant_weight_is_sparse_at_times_and_runs_dense() -> None:
    """In a ``sparse`` builder one Constant weight in SPARSE_EVERY holds ``sparse_value``
    (opset 11 on), which onnxruntime reads back dense; a target that loads such Constants
    asks for them in its generation hints."""
    import random

    import numpy as np
    from onnx import helper

    from generators.builder import SPARSE_EVERY, GraphBuilder, sparse_tensor
    from generators.names import Namer
    from tests.conftest import cpu_session

    array = np.array([[0, 1.5, 0], [-2, 0, 0]], np.float32)
    onnx.checker.check_model(model := helper.make_model(helper.make_graph(
        [helper.make_node("Constant", [], ["c"], sparse_value=sparse_tensor(array, "c")),
         helper.make_node("Identity", ["c"], ["y"])], "g",
        [], [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 13)]), full_check=True)
    assert (cpu_session(model).run(None, {})[0] == array).all()
    for sparse in (True, False):
        b = GraphBuilder(random.Random(0), np.random.default_rng(0), 13,
                         Namer("plain", random.Random(0)), sparse=sparse)
        for _ in range(SPARSE_EVERY * 4):
            b.const(array, "Mul", "constant")
        forms = [a.name for n in b.nodes for a in n.attribute]
        assert (0 < forms.count("sparse_value") < forms.count("value")) == sparse, forms
    # the targets that load them ask for them; those whose IR refuses them do not
    from fuzzer.targets import get_target

    for name, wanted in (("onnxslim", True), ("onnxruntime", True), ("onnxoptimizer", False),
                         ("onnxscript", False), ("version-converter", False)):
        target = get_target(name)
        hints = target.generation_hints(target.default_config())
        assert hints.sparse is wanted and type(hints).from_source(hints.as_source()) == hints
