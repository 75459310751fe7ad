"""The bloat oracle judges growth after the same cleanup on both sides: dead nodes and
constant-only work do not survive it, live extra nodes do, and a configuration that ran the
target's own cleanup makes any growth survive."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from oracles.base import Outcome
from oracles.bloat import Census, bloat, census, cleaned_size, unused_initializers

SHAPE = [2, 3]


def _model(nodes: list[onnx.NodeProto], initializers: list[onnx.TensorProto] = (),
           extra_outputs: list[str] = ()) -> onnx.ModelProto:
    """A model with float input ``x`` and output ``y`` of :data:`SHAPE`."""
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, SHAPE)
               for name in ("y", *extra_outputs)]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _weight(name: str = "w") -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(SHAPE, np.float32), name)


def _original() -> onnx.ModelProto:
    """x -> Mul(w) -> Relu -> y: three tensors, two nodes."""
    return _model([helper.make_node("Mul", ["x", "w"], ["m"]),
                   helper.make_node("Relu", ["m"], ["y"])], [_weight()])


def _judge(optimized: onnx.ModelProto, **extra: object) -> dict:
    findings = bloat(Outcome("ok", "compare", original=_original(), optimized=optimized,
                             extra=dict(extra)))
    assert len(findings) == 1 and findings[0].symptom == "bloat", findings
    return {"message": findings[0].message, **findings[0].detail}


def _with_dead_identity() -> onnx.ModelProto:
    model = _original()
    model.graph.node.append(helper.make_node("Identity", ["m"], ["dead"]))
    return model


def test_a_dead_node_does_not_survive_cleanup():
    found = _judge(_with_dead_identity())
    assert found["survives_cleanup"] is False and found["cleanup_ran"] is False
    assert found["message"] == ("node count grew from 2 to 3 (only dead or constant-foldable "
                                "nodes; none after cleanup)")
    assert (found["nodes_before"], found["nodes_after"]) == (2, 3)
    assert (found["cleaned_nodes_before"], found["cleaned_nodes_after"]) == (2, 2)
    assert found["cleaned_constant_bytes_before"] == found["cleaned_constant_bytes_after"] == 24


def test_b_a_live_extra_node_survives_cleanup():
    optimized = _model([helper.make_node("Mul", ["x", "w"], ["m"]),
                        helper.make_node("Neg", ["m"], ["n1"]),
                        helper.make_node("Neg", ["n1"], ["n2"]),
                        helper.make_node("Relu", ["n2"], ["y"])], [_weight()])
    found = _judge(optimized)
    assert found["survives_cleanup"] is True
    assert found["message"] == "node count grew from 2 to 4"
    assert (found["cleaned_nodes_before"], found["cleaned_nodes_after"]) == (2, 4)


def test_c_constant_only_work_feeding_a_live_node_is_folded():
    half = numpy_helper.from_array(np.full(SHAPE, 0.5, np.float32))
    optimized = _model([helper.make_node("Constant", [], ["c"], value=half),
                        helper.make_node("Add", ["c", "w"], ["s"]),
                        helper.make_node("Mul", ["s", "c"], ["w2"]),
                        helper.make_node("Mul", ["x", "w2"], ["m"]),
                        helper.make_node("Relu", ["m"], ["y"])], [_weight()])
    found = _judge(optimized)
    assert found["survives_cleanup"] is False
    assert (found["nodes_before"], found["nodes_after"]) == (2, 5)
    assert (found["cleaned_nodes_before"], found["cleaned_nodes_after"]) == (2, 2)
    # the folded w2 has w's shape: the live Mul reads as many constant bytes as before
    assert found["cleaned_constant_bytes_after"] == found["cleaned_constant_bytes_before"]
    assert found["constant_bytes_after"] == 2 * found["constant_bytes_before"]


def test_d_growth_survives_where_the_target_ran_its_cleanup():
    found = _judge(_with_dead_identity(), cleanup_ran=True)
    assert found["survives_cleanup"] is True and found["cleanup_ran"] is True
    assert found["message"] == "node count grew from 2 to 3"


def test_leftover_initializers_survive_where_their_removal_is_promised():
    optimized = _with_dead_identity()
    optimized.graph.initializer.append(_weight("unused"))
    found = _judge(optimized)
    assert found["survives_cleanup"] is True
    assert found["message"] == "1 unused initializer(s) left behind"
    assert found["unused_initializers"] == ["unused"]
    quiet = _judge(optimized, unused_initializers_are_bloat=False)
    assert quiet["survives_cleanup"] is False and "unused_initializers" not in quiet


def test_no_growth_no_finding():
    assert bloat(Outcome("ok", "compare", original=_original(), optimized=_original())) == []


def _if_model(dead_producer: bool) -> onnx.ModelProto:
    """``cond`` (a graph input) picks a branch that reads the outer tensor ``t = Neg(x)``;
    with ``dead_producer``, no branch reads it, so Neg is dead."""
    read = "x" if dead_producer else "t"
    branches = [helper.make_graph([helper.make_node(op, ["x", read], [f"{op}_out"])], op, [],
                                  [helper.make_tensor_value_info(f"{op}_out",
                                                                 TensorProto.FLOAT, SHAPE)])
                for op in ("Add", "Mul")]
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["t"]),
         helper.make_node("If", ["cond"], ["y"], then_branch=branches[0],
                          else_branch=branches[1])],
        "if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE),
               helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_e_a_tensor_read_by_a_subgraph_keeps_its_producer_alive():
    model = _if_model(dead_producer=False)
    onnx.checker.check_model(model, full_check=True)
    assert cleaned_size(model).nodes == 4  # Neg, If, Add, Mul
    assert cleaned_size(_if_model(dead_producer=True)).nodes == 3  # Neg is dead


def test_subgraph_of_a_dead_node_and_outer_constants():
    """A dead If counts nothing; branches reading an outer initializer count its bytes once;
    a branch whose work is constant-only folds."""
    model = _if_model(dead_producer=False)
    model.graph.output[0].name = "t"
    assert cleaned_size(model).nodes == 1
    model = _if_model(dead_producer=False)
    model.graph.initializer.append(_weight("t"))
    del model.graph.node[0]
    size = cleaned_size(model)
    assert (size.nodes, size.constant_bytes) == (3, 24)
    branch = model.graph.node[0].attribute[0].g
    branch.node[0].input[0] = "t"
    size = cleaned_size(model)
    assert (size.nodes, size.constant_bytes) == (2, 48)  # If, Mul; w and the folded t + t


def test_random_ops_and_graph_input_initializers_are_not_folded():
    """A random op's output changes per run; an IR 3 initializer listed among the graph
    inputs may be overridden: neither is constant work."""
    random = _model([helper.make_node("RandomNormal", [], ["r"], shape=SHAPE),
                     helper.make_node("Add", ["x", "r"], ["y"])])
    assert cleaned_size(random).nodes == 2
    overridable = _original()
    overridable.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, SHAPE))
    overridable.graph.node.insert(0, helper.make_node("Neg", ["w"], ["nw"]))
    overridable.graph.node[1].input[1] = "nw"
    assert cleaned_size(overridable).nodes == 3


def test_onnxoptimizer_says_when_its_dead_end_cleanup_ran():
    from fuzzer.targets import get_target

    target = get_target("onnxoptimizer")
    ran = target.oracle_context({"passes": ["fuse_bn_into_conv", "eliminate_deadend"]})
    skipped = target.oracle_context({"passes": ["fuse_bn_into_conv"]})
    assert ran["cleanup_ran"] is True and skipped["cleanup_ran"] is False
    assert {"unused_initializers_are_bloat", "interface_may_change"} <= skipped.keys()


def _with_foldable_weight_work() -> onnx.ModelProto:
    """The original with its weight computed by two constant-only nodes (as a fusion that
    builds its fused weight from nodes leaves it)."""
    model = _original()
    model.graph.node.insert(0, helper.make_node("Neg", ["w"], ["nw"]))
    model.graph.node.insert(1, helper.make_node("Neg", ["nw"], ["w2"]))
    model.graph.node[2].input[1] = "w2"
    return model


def test_constant_only_work_is_no_bloat_even_after_the_dead_end_cleanup():
    """The dead-end pass removes dead nodes, not foldable ones: a configuration that ran it
    promises no dead node, not folded constants."""
    found = _judge(_with_foldable_weight_work(), cleanup_ran=True)
    assert found["survives_cleanup"] is False
    assert found["ops_added"] == {"Neg": 2} and found["ops_removed"] == {}
    assert _judge(_with_foldable_weight_work(), cleanup_ran=True,
                  constants_folded=True)["survives_cleanup"] is True


def test_onnxoptimizer_dead_end_cleanup_counts_only_after_the_last_fusion():
    from fuzzer.targets import get_target

    context = get_target("onnxoptimizer").oracle_context
    assert context({"passes": ["fuse_qkv", "eliminate_deadend",
                               "eliminate_unused_initializer"]})["cleanup_ran"] is True
    assert context({"passes": ["eliminate_deadend", "fuse_qkv"]})["cleanup_ran"] is False


def test_onnxoptimizer_documents_the_einsum_expansion():
    """replace_einsum_with_matmul documents Einsum -> Transpose + MatMul; growth by other ops,
    or without that pass, is no documented behaviour."""
    from fuzzer.targets import get_target
    from oracles.base import Finding

    target = get_target("onnxoptimizer")
    detail = {"survives_cleanup": True, "ops_added": {"Transpose": 1, "MatMul": 1},
              "ops_removed": {"Einsum": 1}}
    finding = Finding("bloat", "compare", "node count grew from 1 to 2", detail)
    einsum = {"passes": ["replace_einsum_with_matmul"]}
    assert target.documented(finding, einsum).name == "documented-expansion"
    assert target.documented(finding, {"passes": ["fuse_qkv"]}) is None
    other = Finding("bloat", "compare", "", {**detail, "ops_added": {"Transpose": 1, "Neg": 1}})
    assert target.documented(other, einsum) is None


def test_census_counts_subgraph_nodes_and_reads_in_one_walk():
    """An initializer read only inside a branch, one named by a branch's output and one
    listed as a graph input are used; one nobody reads is not; branch nodes count."""
    model = _if_model(dead_producer=False)
    plain = census(model.graph)
    assert plain.nodes == 4 and plain.unused == ()
    model.graph.initializer.extend([_weight("idle"), _weight("listed")])
    model.graph.input.append(helper.make_tensor_value_info("listed", TensorProto.FLOAT, SHAPE))
    branch = model.graph.node[1].attribute[0].g
    branch.node[0].input[0] = "read_in_branch"
    model.graph.initializer.append(_weight("read_in_branch"))
    assert census(model.graph) == Census(4, ("idle",))
    assert unused_initializers(model.graph) == ["idle"]
