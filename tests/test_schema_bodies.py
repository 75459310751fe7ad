"""Retyping past the nodes that cannot follow: a control-flow node's values through its
bodies (:mod:`generators.schema.bodies`: a varied If or Loop takes the element type its plan
row gives ``V``), and a tied op of the pattern that has no such type left in its own behind
Casts; the models stay valid and run."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from generators.generate import generate, walk_seeds
from generators.hints import GenerationHints
from generators.inputs import synthesize_inputs
from generators.schema.apply import DTYPES
from generators.schema.bodies import retype_bodies
from generators.schema.plan import motif_plan
from generators.schema.walk import walk_steps
from tests.conftest import cpu_session, pass_hints, walked_draws


@pytest.mark.parametrize(("hint", "motif", "op"), [
    ("eliminate_if_with_const_cond", "if-const-cond", "If"),
    ("lift_lexical_references", "outer-scope-subgraph", "Loop"),
    # a second If's branches read the first If's output by name (cast_outer_reads)
    ("FoldConstantsPass", "os-if-initializers", "If"),
])
def test_a_walked_control_flow_node_takes_the_rows_element_type(hint: str, motif: str,
                                                                 op: str) -> None:
    hints = GenerationHints.of([hint])
    plan, steps = motif_plan(motif), walk_steps(motif)
    retyped = 0
    for step, seed in list(walk_seeds(motif, "v2", hints).items())[:40]:
        gm = generate(seed, "v2", hints)
        level = plan.rows[steps[step].row].get(f"{op}|dtype:V")
        nodes = [n for n in gm.model.graph.node if n.op_type == op]
        if level is None or not nodes or level == "float":
            continue
        inferred = onnx.shape_inference.infer_shapes(gm.model, strict_mode=True)
        types = {v.name: v.type.tensor_type.elem_type for v in
                 [*inferred.graph.value_info, *inferred.graph.output]}
        outs = [types.get(o) for n in nodes for o in n.output if o]
        if DTYPES[level] not in outs:
            continue  # the draw noted why it could not take the level
        retyped += 1
        onnx.checker.check_model(gm.model, full_check=True)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    assert retyped >= 5, retyped


def test_a_loop_body_reads_and_writes_its_carried_value_through_casts() -> None:
    body = helper.make_graph(
        [helper.make_node("Neg", ["v"], ["w"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])])
    loop = helper.make_node("Loop", ["m", "", "x"], ["y"], body=body)
    names = iter(f"cast_{k}" for k in range(10))
    made = retype_bodies(loop, 16, {"x", "y"}, TensorProto.DOUBLE, TensorProto.FLOAT,
                         lambda: next(names))
    g = loop.attribute[0].g
    assert made == ["cast_0", "cast_1"]
    assert [n.op_type for n in g.node] == ["Cast", "Neg", "Cast"]
    assert g.input[2].name == "cast_0" and g.node[0].output == ["v"]
    assert g.input[2].type.tensor_type.elem_type == TensorProto.DOUBLE
    assert g.output[1].name == "cast_1" and g.node[2].input == ["w"]
    assert g.output[1].type.tensor_type.elem_type == TensorProto.DOUBLE
    assert g.output[0].name == "c"  # the condition is not tied to V


def test_a_tied_op_that_cannot_take_the_type_keeps_its_own_behind_casts() -> None:
    # oc-reduce puts a Tanh before a ReduceL1 to bound its input; Tanh has no integer
    # types, so a row giving ReduceL1 int32 or int64 leaves the Tanh float and casts after it
    kept = 0
    for seed, gm, row in walked_draws("oc-reduce", GenerationHints.of(["ReduceL1 17->18"]),
                                      "ReduceL1|dtype:T", ("int32", "int64")):
        level = row["ReduceL1|dtype:T"]
        nodes = list(gm.model.graph.node)
        reduce = next((n for n in nodes if n.op_type == "ReduceL1"), None)
        if reduce is None:
            continue
        producer = {o: n for n in nodes for o in n.output}[reduce.input[0]]
        if producer.op_type != "Cast" or \
                {o: n for n in nodes for o in n.output}.get(producer.input[0]) is None:
            continue
        tanh = {o: n for n in nodes for o in n.output}[producer.input[0]]
        assert tanh.op_type == "Tanh"
        assert producer.attribute[0].i == DTYPES[level]
        onnx.checker.check_model(gm.model, full_check=True)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
        kept += 1
        if kept >= 4:
            break
    assert kept >= 4, kept


def test_a_node_without_a_schema_that_makes_the_result_keeps_its_type_behind_casts() -> None:
    # tb-bias-skip-layer-norm ends in com.microsoft's SkipLayerNormalization (no ONNX schema
    # to follow a type through): a row giving its MatMul double leaves it float, read
    # through Casts, and the model's result keeps its type (the walks of two of the motif's
    # passes: a quarter of its draws end in SkipLayerNormalization)
    kept = 0
    for seed, gm, _ in (draw for name in ("enable_skip_layer_norm", "enable_bias_skip_layer_norm")
                        for draw in walked_draws("tb-bias-skip-layer-norm",
                                                 pass_hints("onnxruntime-transformers", name),
                                                 "MatMul|dtype:T", ("double",))):
        span = next(((a, b) for m, a, b in gm.spans if m == "tb-bias-skip-layer-norm"), None)
        nodes = list(gm.model.graph.node[span[0]:span[1]]) if span else []
        skip = next((n for n in nodes if n.op_type == "SkipLayerNormalization"), None)
        if skip is None:  # the step's draw made no fusion's end (or no draw fitted)
            continue
        matmul = next(n for n in nodes if n.op_type == "MatMul")
        weight = next(t for t in gm.model.graph.initializer if t.name in matmul.input)
        if weight.data_type != onnx.TensorProto.DOUBLE:
            continue  # the draw noted why it could not take the type
        made = {o: n for n in gm.model.graph.node for o in n.output}
        assert {made[x].op_type for x in skip.input[:2]} == {"Cast"}
        onnx.checker.check_model(gm.model, full_check=True)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
        kept += 1
    assert kept >= 1, kept


def test_a_draw_onnxruntime_refuses_as_a_whole_keeps_the_part_it_runs() -> None:
    # onnxruntime refuses some ort-quant-after-act rows as a whole where each edit alone
    # passed its checks (the QuantizeLinear and DequantizeLinear kernels' own): the draw keeps
    # the row's types alone, else its other levels alone, and notes the levels it left out
    from generators.generate import generate, walk_seeds

    hints = pass_hints("onnxruntime", "ReluQuantRewrite")
    kept = 0
    for seed in walk_seeds("ort-quant-after-act", "v2", hints).values():
        gm = generate(seed, "v2", hints)
        notes = [n for v in gm.varied for n in v["notes"]]
        left = [n.split(": ", 1)[0] for n in notes if "onnxruntime refuses the draw with it" in n]
        if not left:
            continue
        assert not any("draw undone" in n for n in notes), notes
        assert len({"|dtype:" in n for n in left}) == 1, left  # one part left out
        onnx.checker.check_model(gm.model, full_check=True)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
        kept += 1
    assert kept >= 3, kept  # (fewer each time a cause of such refusals is fixed upstream)


def test_a_body_reads_a_retyped_outer_value_through_a_cast_back() -> None:
    from generators.schema.bodies import cast_outer_reads

    inner = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["n"])], "inner", [],
        [helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])])
    branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("If", ["c"], ["i"], then_branch=inner, else_branch=inner)],
        "branch", [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    names = iter(f"cast_{k}" for k in range(10))
    made = cast_outer_reads(node, {"x": "x_double"}, TensorProto.FLOAT, lambda: next(names))
    g = node.attribute[0].g
    assert made == ["cast_0", "cast_1"] and g.node[0].op_type == "Cast"  # one per branch
    assert list(g.node[0].input) == ["x_double"] and list(g.node[1].input) == ["cast_0"]
    assert g.output[0].name == "cast_0"  # a body output that was the outer value
    assert list(g.node[2].attribute[0].g.node[0].input) == ["cast_0"]  # nested bodies too


def test_an_edit_of_a_node_inference_gives_no_shape_runs_before_it_stands() -> None:
    # os-fold-sequences' SplitToSequence has no inferred output shape (a sequence): an edit
    # of it is run in onnxruntime with the window and left out alone where onnxruntime
    # refuses it, and the rest of the row stays; tb-rotary's Slices to a computed half,
    # the first case of it, now take their bounds over all axes where the row drops `axes`
    hints = pass_hints("onnxscript", "FoldConstantsPass")
    told = 0
    for seed in walk_seeds("os-fold-sequences", "v2", hints).values():
        gm = generate(seed, "v2", hints)
        notes = [n for v in gm.varied for n in v["notes"]]
        told += any("inference gives no shape to check" in n for n in notes)
        assert not any("draw undone" in n for n in notes if "no shape to check" in n)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    assert told
    hints = pass_hints("onnxruntime-transformers", "enable_rotary_embeddings")
    draws = walked_draws("tb-rotary", hints, "Slice|in:axes", ("absent", "empty"))
    assert draws
    for seed, gm, _ in draws:
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))


def test_an_integer_retype_leaves_out_a_division_by_a_computed_divisor() -> None:
    # tb-embed-layer-norm's rows give its embedding table an integer type; a layer norm
    # spelled out divides by a computed sqrt(var + eps), 0 in integers: that Div keeps its
    # type behind a Cast, and the draw runs
    from generators.schema.apply import _divides_by_computed

    div = helper.make_node("Div", ["x", "d"], ["y"])
    assert "computed divisor" in _divides_by_computed(div, "int32", set())
    assert _divides_by_computed(div, "int32", {"d"}) is None
    assert _divides_by_computed(div, "float16", set()) is None
    hints = pass_hints("onnxruntime-transformers", "enable_embed_layer_norm")
    taken = 0
    for seed, gm, _ in walked_draws("tb-embed-layer-norm", hints, "Gather|dtype:T",
                                    ("int16", "int32", "uint8", "uint32", "uint64")):
        notes = [n for v in gm.varied for n in v["notes"]]
        taken += not any(n.startswith("Gather|dtype:T=") for n in notes)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    assert taken
