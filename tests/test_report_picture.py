"""The report's picture (graph.png / graph.svg) names the attributes of the nodes a target
changed: a Pad whose ``value`` became 0.5 reads ``value=0.5``, not just ``Pad``."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from fuzzer.report.graph_model import changed_attributes, model_digraph
from fuzzer.report.picture import render_side_by_side


def pad_model(value: float, pads: list[int]) -> onnx.ModelProto:
    """x -> Pad(constant, value) -> Neg -> y at opset 10, where Pad's value is an attribute."""
    nodes = [helper.make_node("Pad", ["x"], ["p"], mode="constant", pads=pads, value=value),
             helper.make_node("Neg", ["p"], ["y"])]
    graph = helper.make_graph(nodes, "pad", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=5)


def test_the_picture_names_the_attribute_a_pass_changed(tmp_path: Path):
    before, after = pad_model(0.0, [0, 1, 0, 1]), pad_model(0.5, [0, 1, 0, 1])
    left = model_digraph(before, after.graph.node, "removed")
    right = model_digraph(after, before.graph.node, "added")
    assert right.nodes["op:0"]["mark"] == "added" and left.nodes["op:0"]["mark"] == "removed"
    assert right.nodes["op:0"]["label"] == ["Pad", "value=0.5"]  # only what changed
    assert left.nodes["op:0"]["label"] == ["Pad", "value=0"]
    assert right.nodes["op:1"]["label"] == ["Neg"] and right.nodes["op:1"]["mark"] is None

    render_side_by_side(before, after, tmp_path / "graph.png", "minimized", "optimized")
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", (tmp_path / "graph.svg").read_text())
    assert "value=0.5" in texts and "value=0" in texts


def test_a_node_without_counterpart_shows_all_its_attributes_a_few_at_most():
    pad = pad_model(0.5, [0, 1, 0, 1]).graph.node[0]
    assert changed_attributes(pad, None) == ["mode=constant", "pads=[0,1,0,1]", "value=0.5"]
    unset = helper.make_node("Pad", ["x"], ["p"], mode="constant", pads=[0, 1, 0, 1])
    assert changed_attributes(unset, pad) == ["value unset"]
    many = helper.make_node("Conv", ["x", "w"], ["y"], dilations=[1, 1], group=1,
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1],
                            auto_pad="NOTSET")
    assert changed_attributes(many, None)[-1] == "+3 more"
    tensor = helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
        "c", TensorProto.FLOAT, [2], [0.25, 1.5]))
    assert changed_attributes(tensor, None) == ["value=[0.25,1.5]"]
