"""Root-cause keys: what the same bug reached from different models shares, and what tells
two bugs apart (crash site, breaking pass, footprint)."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from fuzzer.findings.rootcause import (
    FRAMEWORK,
    breaking_and_enabling,
    message_core,
    op_footprint,
    root_cause_id,
    root_cause_key,
)
from oracles.base import Finding


def _model(ops: list[str]):
    nodes, prev = [], "x"
    for i, op in enumerate(ops):
        nodes.append(helper.make_node(op, [prev], [f"t{i}"]))
        prev = f"t{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2])])
    return helper.make_model(graph)


def test_core_keeps_the_crash_site_and_drops_names_numbers_and_unrelated_op_types():
    a = "RuntimeError: fuse_bn_into_conv.h:87: Assertion `rank == 4` failed for 'conv_12' " \
        "(Relu feeding Conv at 0x7f00aa)"
    b = "RuntimeError: fuse_bn_into_conv.h:87: Assertion `rank == 3` failed for '/l1/Conv' " \
        "(Sigmoid feeding Conv at 0x7f11bb)"
    assert message_core(a, ["Conv"]) == message_core(b, ["Conv"])
    assert "fuse_bn_into_conv.h:87" in message_core(a) and "Conv" in message_core(a, ["Conv"])
    other_site = a.replace(".h:87", ".h:120")
    assert message_core(other_site, ["Conv"]) != message_core(a, ["Conv"])


def test_breaking_pass_is_the_last_of_the_minimal_list():
    assert breaking_and_enabling(["eliminate_identity", "fuse_bn_into_conv"]) == \
        ("fuse_bn_into_conv", ["eliminate_identity"])
    assert breaking_and_enabling([])[0] == FRAMEWORK


def _graph(*nodes: tuple[str, list[str], str]):
    made = [helper.make_node(op, inputs, [out]) for op, inputs, out in nodes]
    graph = helper.make_graph(made, "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info(nodes[-1][2], 1, [2])])
    return helper.make_model(graph)


def test_footprint_is_the_op_types_removed_added_or_rewritten():
    assert op_footprint(_model(["Exp"]), _model(["Exp", "Neg"])) == "+Neg"
    assert op_footprint(_model(["Neg", "Exp"]), _model(["Exp"])) == "-Neg"
    assert op_footprint(_model(["Neg", "Exp", "Neg"]), _model(["Identity", "Exp"])) == "-Neg"
    assert op_footprint(_model(["Neg"]), _model(["Neg"])) == ""


def test_a_rewrite_that_keeps_its_op_types_is_keyed_by_the_attributes_it_dropped():
    from fuzzer.report.fault import footprint_words

    value = helper.make_tensor("v", 1, [2], [0.0, 1.5])
    sparse = helper.make_sparse_tensor(value, helper.make_tensor("i", 7, [1], [1]), [2])

    def constant(**attrs: object):
        graph = helper.make_graph([helper.make_node("Constant", [], ["c"], **attrs),
                                   helper.make_node("Neg", ["c"], ["y"])], "g", [],
                                  [helper.make_tensor_value_info("y", 1, [2])])
        return helper.make_model(graph)

    dropped = op_footprint(constant(sparse_value=sparse), constant())
    assert dropped == "-Constant.sparse_value"
    assert op_footprint(constant(value=value), constant(sparse_value=sparse)) == \
        "-Constant.value+Constant.sparse_value"
    assert op_footprint(constant(value=value), constant(value=value)) == ""
    assert footprint_words(dropped) == "removes Constant.sparse_value wrongly"
    finding = Finding("invalid-model", "check", "(op_type:Constant): no data attributes")
    assert root_cause_key("t", FRAMEWORK, finding, dropped) != \
        root_cause_key("t", FRAMEWORK, finding, "")


def test_a_fusion_is_keyed_by_what_it_folded_in_not_by_its_helpers():
    fused = _graph(("Conv", ["x", "w"], "c"), ("Mul", ["c", "s"], "y"))
    by_initializer = _graph(("Mul", ["w", "s"], "w2"), ("Conv", ["x", "w2"], "y"))
    by_reshape = _graph(("Reshape", ["s", "r"], "s2"), ("Unsqueeze", ["s2", "a"], "s3"),
                        ("Mul", ["w", "s3"], "w2"), ("Conv", ["x", "w2"], "y"))
    anchors = {"Conv", "Mul"}
    assert op_footprint(fused, by_initializer, anchors) == "-Conv-Mul"
    assert op_footprint(fused, by_reshape, anchors) == "-Conv-Mul"
    other = _graph(("Conv", ["x", "w"], "c"), ("Add", ["c", "s"], "y"))
    assert op_footprint(other, by_initializer, {"Conv", "Add"}) == "-Add-Conv"


def test_a_wrong_element_type_is_a_fault_beside_a_wrong_shape_of_the_same_rewrite():
    shape = Finding("invalid-model", "check", "Inferred shape and existing shape differ in "
                    "rank: (3) vs (4)")
    dtype = Finding("invalid-model", "check", "(op_type:Constant): output has unsupported "
                    "type tensor(int64)")
    loaded = Finding("load-failure", "load", "Type Error: Type (tensor(int64)) of output arg "
                     "(c) of node () does not match expected type (tensor(float)).")
    inconsistent = Finding("invalid-model", "check", "(op_type:Conv, node name: c): B has "
                           "inconsistent type tensor(float16)")
    inferred = Finding("invalid-model", "check", "(op_type:Reshape, node name: r): "
                       "[TypeInferenceError] Inferred elem type differs from existing elem "
                       "type: (1) vs (11)")
    findings = (shape, dtype, loaded, inconsistent, inferred)
    keys = {f.message: root_cause_key("t", "p", f, "-Add-Conv") for f in findings}
    assert keys[dtype.message] == keys[loaded.message] == keys[inconsistent.message] == \
        keys[inferred.message] != keys[shape.message]
    assert keys[shape.message].endswith("|fp:-Add-Conv")


def test_wrong_outputs_key_on_class_and_footprint_not_on_values():
    one = Finding("output-mismatch", "compare", "output 0 'y': 3 of 8 values differ",
                  {"class": "values"})
    two = Finding("output-mismatch", "compare", "output 2 'z': 1 of 99 values differ",
                  {"class": "values"})
    assert root_cause_key("t", "p", one, "-Neg") == root_cause_key("t", "p", two, "-Neg")
    assert root_cause_key("t", "p", one, "-Neg") != root_cause_key("t", "p", one, "-Exp")
    assert root_cause_key("t", "p", one, "-Neg") != root_cause_key("t", "q", one, "-Neg")
    key = root_cause_key("t", "p", one, "-Neg")
    assert root_cause_id("output-mismatch", key).startswith("output-mismatch-")


def test_crash_keys_ignore_the_footprint():
    crash = Finding("optimizer-error", "optimize", "RuntimeError: shape mismatch at node 'n1'")
    again = Finding("optimizer-error", "optimize", "RuntimeError: shape mismatch at node 'n9'")
    assert root_cause_key("t", "p", crash, "-A") == root_cause_key("t", "p", again, "+B")


def test_invalid_models_key_on_the_rule_broken_not_the_node_that_tripped():
    """The same broken Reshape rewrite fails shape inference at whichever node follows it;
    a different rule (SSA) is a different class."""
    from oracles.validity import error_class

    relu = ("InferenceError: [ShapeInferenceError] Inference error(s): (op_type:Relu, node "
            "name: n15): [ShapeInferenceError] Inferred shape and existing shape differ in "
            "dimension 0: (2) vs (1)")
    floor = ("InferenceError: [ShapeInferenceError] Inference error(s): (op_type:Floor): "
             "[ShapeInferenceError] Inferred shape and existing shape differ in rank: (0) vs (1)")
    ssa = ("ValidationError: Graph must be in single static assignment (SSA) form, however "
           "'19' has been used as output names multiple times.")
    assert error_class(relu) == error_class(floor) == "InferenceError: ShapeInferenceError"
    assert error_class(ssa) == \
        "ValidationError: Graph must be in single static assignment (SSA) form"
    tf2onnx = "ValidationError: Graph output 'model/reshape_34/Reshape:0' is not an output of " \
        "any node in graph."
    assert error_class(tf2onnx) == error_class(tf2onnx.replace("model/reshape_34/Reshape:0",
                                                               "t2")) == \
        "ValidationError: Graph output <name> is not an output of any node in graph."
    keys = {root_cause_key("t", "p", Finding("invalid-model", "validate", m,
                                             {"error_class": error_class(m)}), "-Reshape")
            for m in (relu, floor)}
    assert len(keys) == 1


def test_one_wrong_rewrite_is_one_key_whatever_symptom_or_kernel_shows_it():
    """fuse_consecutive_squeezes' wrong axes fail in the fused Squeeze or in a Reshape or a
    Gather after it, fail shape inference, or give wrong outputs (onnxoptimizer 0.4.2 on
    onnxruntime 1.32), depending on what consumes the fused Squeeze: one fault, one key.
    Another footprint or another culprit is another key."""
    from oracles.base import Outcome
    from oracles.onnxruntime_failure import stage_failure

    judge = stage_failure("runtime-failure", "execute", "running")

    def finding(message: str) -> Finding:
        (found,) = judge(Outcome(stage="execute", status="error", error=message))
        return found

    site = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running "
            "{} node. Name:'' Status Message: /onnxruntime_src/onnxruntime/core/providers/cpu/"
            "tensor/{}:{} {}")
    squeeze = finding(site.format("Squeeze", "squeeze.h", 53, "Dimension of input 1 must be 1"))
    reshape = finding(site.format("Reshape", "reshape_helper.h", 91, "The input tensor cannot "
                                  "be reshaped to the requested shape"))
    gather = finding("InvalidArgument: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "
                     "Non-zero status code returned while running Gather node.")
    invalid = Finding("invalid-model", "validate", "InferenceError: [ShapeInferenceError] "
                      "Inferred shape and existing shape differ in rank: (2) vs (3)",
                      {"error_class": "InferenceError: ShapeInferenceError"})
    wrong = Finding("output-mismatch", "compare", "output 0 'y': shape (2,) vs (2, 1)",
                    {"class": "shape"})
    key = {root_cause_key("onnxoptimizer", "fuse_consecutive_squeezes", f, "-Squeeze")
           for f in (squeeze, reshape, gather, invalid, wrong)}
    assert key == {"onnxoptimizer|fuse_consecutive_squeezes|rewrite|fp:-Squeeze"}
    assert root_cause_key("onnxoptimizer", "fuse_consecutive_squeezes", squeeze, "-Unsqueeze") \
        not in key
    assert root_cause_key("onnxoptimizer", "eliminate_nop_split", squeeze, "-Squeeze") \
        not in key


def test_a_crash_that_a_later_pass_only_exposed_is_keyed_by_the_culprits_rewrite():
    """A pass that trips over an earlier pass's damage crashes at its own site; the fault is
    the culprit's rewrite, so the key is the culprit's footprint, as for the other symptoms
    that damage shows."""
    crash = Finding("optimizer-error", "optimize", "RuntimeError: fake/expose.cc:12: tensor "
                    "produced twice")
    invalid = Finding("invalid-model", "validate", "ValidationError: Graph must be in single "
                      "static assignment (SSA) form", {"error_class": "ValidationError: SSA"})
    assert root_cause_key("fake", "twin", crash, "", exposed=True) == \
        root_cause_key("fake", "twin", invalid, "")
    assert "expose.cc:12" in root_cause_key("fake", "expose-twin", crash, "")


def test_the_models_own_names_are_no_part_of_a_crash_site():
    """onnx-simplifier prints tensor names unquoted (``t8 in initializer but not in graph
    input``); the model's own names, whatever their style, are replaced, and the words of the
    message stay."""
    from fuzzer.findings.rootcause import model_names

    first, second = _model(["Neg"]), _model(["Neg"])
    second.graph.initializer.add().name = "weight"
    first.graph.initializer.add().name = "t8"
    one = Finding("optimizer-error", "optimize", "RuntimeError: t8 in initializer but not in "
                  "graph input")
    two = Finding("optimizer-error", "optimize", "RuntimeError: weight in initializer but not "
                  "in graph input")
    keys = {root_cause_key("onnxsim", "(framework)", f, names=model_names(m))
            for f, m in ((one, first), (two, second))}
    assert len(keys) == 1
    assert "in initializer but not in graph input" in keys.pop()
    other = Finding("optimizer-error", "optimize", "RuntimeError: weight in initializer twice")
    assert root_cause_key("onnxsim", "(framework)", other, names=model_names(second)) != \
        root_cause_key("onnxsim", "(framework)", two, names=model_names(second))


def test_a_number_in_a_message_is_a_number_whatever_the_model_names():
    """A model with a tensor named ``30`` (an exporter's plain-number names) keys its hang's
    "no result after 30 s" as every other model does."""
    hang = Finding("hang", "optimize", "no result after 30 s in stage optimize")
    keys = {root_cause_key("onnxslim", "shape_infer", hang, names=names)
            for names in ((), {"30", "t1"})}
    assert len(keys) == 1 and "<n> s" in keys.pop()


def test_a_name_clash_is_one_root_cause_whatever_rule_it_breaks():
    """fuse_bn_into_conv (onnxoptimizer 0.4.2) names its new initializers from onnx IR's
    value counter: on a model with plain-number names the clash breaks initializer
    uniqueness, SSA or topological order depending on which name it hits, or trips over it
    in ``eraseOutput``: one fault, and another than a wrong rewrite of the same pass that
    needs no such name."""
    from fuzzer.findings.rootcause import NAME_CLASH
    from oracles.validity import error_class

    messages = ("ValidationError: 16 initializer name is not unique",
                "ValidationError: Graph must be in single static assignment (SSA) form, "
                "however '12' has been used as output names multiple times.",
                "ValidationError: Nodes in a graph must be topologically sorted, however "
                "input '14' of node: name: OpType: Mul is not output of any previous nodes.")
    findings = [Finding("invalid-model", "validate", m, {"error_class": error_class(m)})
                for m in messages]
    fp = "-BatchNormalization+Add+Cast+Div+Mul+Sqrt+Sub+Unsqueeze"
    clash = f"needs {NAME_CLASH} and its weights as initializers"
    clashes = {root_cause_key("o", "fuse_bn_into_conv", f, fp, trigger=clash) for f in findings}
    assert len(clashes) == 1
    plain = {root_cause_key("o", "fuse_bn_into_conv", f, fp) for f in findings}
    assert len(plain) == 1 and plain != clashes
    crash = Finding("optimizer-error", "optimize", "RuntimeError: ir.h:1351: eraseOutput: "
                    "Assertion `outputs_[i]->uses().empty()` failed.")
    assert root_cause_key("o", "fuse_bn_into_conv", crash, trigger=clash) in clashes
    survives = "survives neutral names, other opsets and both weight forms"
    assert "eraseOutput" in root_cause_key("o", "fuse_bn_into_conv", crash, trigger=survives)


def test_a_dropped_control_flow_node_is_the_footprint_not_its_branch_contents():
    def if_model(branch_ops: list[str]):
        branch = _model(branch_ops).graph
        branch.ClearField("input")
        cond = helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
            "v", TensorProto.BOOL, [], [True]))
        node = helper.make_node("If", ["c"], [branch.output[0].name], then_branch=branch,
                                else_branch=branch)
        graph = helper.make_graph([cond, node], "g", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [2])], [branch.output[0]])
        return helper.make_model(graph)

    inlined = _model(["Relu"])
    assert op_footprint(if_model(["Relu"]), inlined) == "-If"
    assert op_footprint(if_model(["Sigmoid", "Tanh"]), _model(["Sigmoid", "Tanh"])) == "-If"


def test_onnxruntime_node_context_is_not_part_of_the_site():
    def message(op: str, types: str) -> str:
        return (f'InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid '
                f'model. In Node, ("", {op}, "", -1) : ({types}) -> ("t13": tensor(float),) '
                ", Error Graph must be in single static assignment (SSA) form, however '18' "
                "has been used as output names multiple times.")

    loop = message("Loop", '"2": tensor(int64),"t8": tensor(bool),')
    branch = message("If", '"t9": tensor(bool),')
    assert message_core(loop) == message_core(branch)
    assert "single static assignment" in message_core(loop)


def test_localization_and_reduction_keep_the_finding_core_not_the_message():
    """An invalid model that fails inference at another node is the same finding; one that
    breaks another rule is not; symptoms without a key detail compare messages."""
    from fuzzer.findings.signature import FindingCore
    from oracles.validity import error_class

    def invalid(message: str) -> Finding:
        return Finding("invalid-model", "validate", message,
                       {"error_class": error_class(message)})

    relu = invalid("InferenceError: [ShapeInferenceError] (op_type:Relu): [ShapeInferenceError]"
                   " Inferred shape and existing shape differ in rank: (0) vs (3)")
    floor = invalid("InferenceError: [ShapeInferenceError] (op_type:Floor, node name: n2): "
                    "[ShapeInferenceError] Inferred shape and existing shape differ in "
                    "dimension 0: (2) vs (1)")
    ssa = invalid("ValidationError: Graph must be in single static assignment (SSA) form, "
                  "however '19' has been used as output names multiple times.")
    core = FindingCore.of(relu)
    assert core.matches(floor) and not core.matches(ssa)
    crash = Finding("optimizer-error", "optimize", "RuntimeError: pass.h:250: failed for 'a'")
    assert FindingCore.of(crash).matches(
        Finding("optimizer-error", "optimize", "RuntimeError: pass.h:250: failed for 'b'"))
    assert not FindingCore.of(crash).matches(
        Finding("optimizer-error", "optimize", "RuntimeError: pass.h:260: failed for 'a'"))


def test_a_list_of_names_is_one_placeholder_however_many_and_however_replaced():
    """onnxoptimizer's lift_lexical_references prints each unresolved name followed by a
    comma; the model's own names, the generated ones and the rest all make one list."""
    from fuzzer.findings.rootcause import message_core

    names = {"w3", "model/add/kernel:0", "x"}
    cores = {message_core(f"RuntimeError: Unresolved value references: {listed}", names=names)
             for listed in ("w3,", "w3,x,", "model/add/kernel:0,x,", "t8,_v_9,",
                            "w3,x,onnx::Pad_", "model/add/kernel:0,x,model/res")}
    assert cores == {"RuntimeError: Unresolved value references: <names>"}  # some truncated


def test_crashes_with_no_site_of_their_own_are_one_site_of_their_culprit():
    """An out-of-bounds read kills the worker in one run and asks for an impossible
    allocation in the next: one crash site of the pass; a crash with a site stays apart."""
    segv = Finding("optimizer-abort", "optimize", "worker killed by SIGSEGV")
    alloc = Finding("optimizer-error", "optimize", "MemoryError: std::bad_alloc")
    vector = Finding("optimizer-error", "optimize",
                     "ValueError: cannot create std::vector larger than max_size()")
    string = Finding("optimizer-error", "optimize", "ValueError: basic_string::_M_create")
    keys = {root_cause_key("o", "eliminate_slice_after_shape", f)
            for f in (segv, alloc, vector, string)}
    assert len(keys) == 1
    site = Finding("optimizer-error", "optimize", "RuntimeError: pass.h:250: Assertion failed")
    assert root_cause_key("o", "eliminate_slice_after_shape", site) not in keys


def test_a_pure_elimination_is_named_by_the_nodes_it_removed_first():
    """onnxslim's dead_node_elimination erases a Dropout whose mask is read, and the mask's
    reader or the Dropout's producer with it, whatever its op type: one footprint,
    ``-Dropout``; a pass that acts on any op (constant folding) removes the model's ops."""
    def dropout(reader: str):
        nodes = [helper.make_node("Dropout", ["x"], ["d", "mask"]),
                 helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT),
                 helper.make_node(reader, ["m"], ["r"]),
                 helper.make_node("Add", ["d", "r"], ["y"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                                  [helper.make_tensor_value_info("y", 1, [2])])
        return helper.make_model(graph)

    def erased(model):
        out = onnx.ModelProto()
        out.CopyFrom(model)
        del out.graph.node[:3]
        out.graph.node[0].input[:] = ["x", "x"]
        return out

    anchors = {"Dropout", "Identity", "Pad"}
    assert {op_footprint(m, erased(m), anchors) for m in (dropout("Tanh"), dropout("Floor"))} \
        == {"-Dropout"}
    from fuzzer.targets.base import ANY

    assert op_footprint(dropout("Tanh"), erased(dropout("Tanh")), ANY) == ""  # folding-like

    def dead_producer(op: str):
        """x -> op -> Dropout whose mask is read: the erased Dropout leaves ``op`` dead."""
        nodes = [helper.make_node(op, ["x"], ["p"]),
                 helper.make_node("Dropout", ["p"], ["d", "mask"]),
                 helper.make_node("Cast", ["mask"], ["y"], to=TensorProto.FLOAT)]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                                  [helper.make_tensor_value_info("y", 1, [2])])
        model = helper.make_model(graph)
        out = onnx.ModelProto()
        out.CopyFrom(model)
        del out.graph.node[:2]
        return model, out

    assert {op_footprint(*dead_producer(op), anchors) for op in ("Celu", "Abs")} == \
        {"-Dropout"}
    assert op_footprint(_model(["Neg", "Exp", "Neg"]), _model(["Identity", "Exp"])) == \
        "-Neg"  # a rewrite that adds is named by the nodes it rewrote


def test_the_node_name_shape_inference_prints_is_no_part_of_the_site():
    """onnx's shape inference names the node only where it has a name: one site either way
    (onnxslim's constant folding on TopK made two bundles of one message)."""
    from fuzzer.findings.rootcause import message_core

    named = "InferenceError: [ShapeInferenceError] (op_type:TopK, node name: " \
            "model/topk_47/TopK): Output 1 is out of bounds."
    unnamed = "InferenceError: [ShapeInferenceError] (op_type:TopK): Output 1 is out of bounds."
    assert message_core(named, ["TopK"]) == message_core(unnamed, ["TopK"])
    assert "Output <n> is out of bounds" in message_core(unnamed, ["TopK"])
