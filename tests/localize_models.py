"""Small ONNX models and fake-target pass lists shared by the localization, signature and
dedupe tests."""

from __future__ import annotations

from collections.abc import Sequence

LENGTH = 39


def chain(ops: Sequence[str], prefix: str = "t", shape: Sequence[int] = (2, 3),
          tail: str | None = None) -> bytes:
    """A serialized float model applying ``ops`` (unary op types) in a chain, then ``tail``
    (``Add`` of the value with itself) when given; IR 8, opset 17."""
    import onnx
    from onnx import TensorProto, helper

    nodes, prev = [], "x"
    for index, op in enumerate(ops):
        out = f"{prefix}{index}"
        nodes.append(helper.make_node(op, [prev], [out], name=f"{prefix}_node{index}"))
        prev = out
    if tail:
        nodes.append(helper.make_node(tail, [prev, prev], [f"{prefix}_out"],
                                      name=f"{prefix}_tail"))
        prev = f"{prefix}_out"
    graph = helper.make_graph(nodes, f"g_{prefix}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def fillers(placed: dict[int, str], length: int = LENGTH) -> list[str]:
    """``length`` ``nop-*`` fillers with ``placed`` ({position: pass name}) put in."""
    return [placed.get(i, f"nop-{i}") for i in range(length)]


def fake_case(model: bytes, passes: list[str], fixed_point: bool = False, seed: int = 0):
    """A fake-target TestCase of ``model`` with ``passes``."""
    from fuzzer.execution.case import TestCase

    return TestCase("fake", {"passes": passes, "fixed_point": fixed_point},
                    {"kind": "bytes", "seed": seed}, model_bytes=model)
