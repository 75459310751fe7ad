"""What the report's standalone repro carries: the model as ONNX text that parses back to
the same model (else its bytes, else the attachment's file), the inputs written out exactly
(else drawn with a fixed seed, else loaded from the attachment), and the tolerance the
output oracle compares with."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fuzzer.report.feeds_source import FROM_FILE as FEEDS_FROM_FILE
from fuzzer.report.feeds_source import MAX_LITERAL, feeds_source
from fuzzer.report.model_source import (
    FROM_FILE,
    MAX_EMBEDDED,
    UNNAMED,
    canonical,
    model_source,
    without_constant_names,
)
from fuzzer.report.snippet import tolerances
from tests.conftest import unary_chain_model


def defined(lines: list[str], name: str) -> Any:
    """The value ``lines`` (Python source) give ``name``."""
    scope: dict[str, Any] = {"np": np, "onnx": onnx, "base64": base64}
    exec("\n".join(lines), scope)  # the repro's own lines, as a maintainer runs them
    return scope[name]


def with_initializer(values: np.ndarray) -> onnx.ModelProto:
    """x -> Add(x, w) -> y, w the initializer ``values`` (float32)."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(values.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(values.shape))],
        [numpy_helper.from_array(values.astype(np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_model_is_its_onnx_text_where_that_parses_back_to_it() -> None:
    model = with_initializer(np.array([0.1, -2.5e-8, 3.4028235e38], np.float32))
    model.graph.node[0].doc_string = "a comment, which the text does not carry"
    source = model_source(model)
    assert source.note is None and source.lines[-1] == "model = onnx.parser.parse_model(MODEL)"
    assert canonical(defined(source.lines, "model")) == canonical(model)  # values bit for bit
    assert source.data_lines == len(onnx.printer.to_text(model).rstrip("\n").split("\n"))


def test_names_of_constant_values_are_left_out_and_said() -> None:
    model = unary_chain_model(("Exp",))
    value = numpy_helper.from_array(np.array([1.5], np.float32), "onnx::Pad_38")
    model.graph.node.insert(0, helper.make_node("Constant", [], ["c"], value=value))
    source = model_source(model)
    assert source.note == UNNAMED
    back = defined(source.lines, "model")
    assert canonical(back) == canonical(without_constant_names(model))


def test_a_model_the_text_cannot_carry_goes_as_bytes_or_as_the_attachment() -> None:
    model = unary_chain_model(("Exp",))
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0], np.float32), "v"),
        numpy_helper.from_array(np.array([0], np.int64), "i"), [2])
    model.graph.sparse_initializer.append(sparse)  # the printer writes no sparse tensor
    source = model_source(model)
    assert source.imports == ("base64",) and "bytes (base64)" in (source.note or "")
    assert defined(source.lines, "model").SerializeToString() == model.SerializeToString()
    long = with_initializer(np.linspace(-1, 1, MAX_EMBEDDED // 8, dtype=np.float32))
    assert "too long" in (model_source(long).note or "")  # its text, not its bytes
    huge = with_initializer(np.linspace(-1, 1, MAX_EMBEDDED, dtype=np.float32))
    assert model_source(huge) == FROM_FILE


def test_small_inputs_are_written_out_exactly() -> None:
    floats = np.array([[0.1, -0.0, np.nan], [np.inf, -np.inf, 3.4028235e38]], np.float32)
    feeds = {"x": floats, "i": np.array([-3, 2**40], np.int64), "b": np.array(True),
             "h": np.array([0.1, 65504], np.float16), "e": np.zeros((0, 3), np.float64)}
    graph = helper.make_graph(
        [], "inputs", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
            a.dtype), list(a.shape)) for n, a in feeds.items()], [])
    model = helper.make_model(graph)
    source = feeds_source(model, feeds)
    assert source.note is None
    written = defined(source.lines, "FEEDS")
    assert list(written) == list(feeds)  # the model's order
    for name, array in feeds.items():
        assert written[name].dtype == array.dtype and written[name].shape == array.shape
        assert written[name].tobytes() == array.tobytes(), name  # NaN and -0.0 included


def test_large_or_missing_inputs_are_drawn_with_a_fixed_seed() -> None:
    model = unary_chain_model(("Exp",), shape=(2, 3))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    big = {"x": np.linspace(0, 1, 6 * MAX_LITERAL, dtype=np.float32).reshape(6, -1)}
    drawn = feeds_source(model, big)
    assert "seed 0" in (drawn.note or "") and "the values the bug was found with" in drawn.note
    assert defined(drawn.lines, "FEEDS")["x"].shape == big["x"].shape
    missing = feeds_source(model, None)
    assert defined(missing.lines, "FEEDS")["x"].shape == (1, 3)  # "batch" taken as 1
    assert defined(missing.lines, "FEEDS")["x"].dtype == np.float32
    text = unary_chain_model(("Exp",))
    text.graph.input[0].type.tensor_type.elem_type = TensorProto.STRING
    assert feeds_source(text, None) == FEEDS_FROM_FILE


def test_the_tolerance_is_the_output_oracles() -> None:
    assert tolerances(unary_chain_model(("Exp",))) == [(1e-3, 1e-4)]
    cast = unary_chain_model(("Exp",))
    cast.graph.node.append(helper.make_node("Cast", ["y"], ["z"], to=TensorProto.DOUBLE))
    cast.graph.output.append(helper.make_tensor_value_info("z", TensorProto.DOUBLE, [2, 3]))
    assert tolerances(cast) == [(1e-3, 1e-4), (1e-3, 1e-4)]  # float32 rounding in the double
    ints = unary_chain_model(("Neg",))
    for value in (*ints.graph.input, *ints.graph.output):
        value.type.tensor_type.elem_type = TensorProto.INT64
    assert tolerances(ints) == [(0.0, 0.0)]
