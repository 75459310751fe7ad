"""A float64 reference: the input model evaluated in double precision, to tell a rewrite that
computes a more exact result from one that computes a wrong one.

``Log(Softmax(x))`` underflows to ``-inf`` in float32 where ``Softmax`` rounds to 0; the
``LogSoftmax`` that onnxoptimizer's ``fuse_consecutive_log_softmax`` puts in its place is
finite there, and right. Both models compute the same function (the ONNX spec defines
LogSoftmax as log of Softmax), so the output comparison sees a mismatch that no maintainer
would call a bug. Judging the two float32 runs against a run in higher precision is how
numerical differential testing separates the two (the higher-precision oracle of Herbie,
PLDI'15, and of FPDiff, ISSTA'20).

The conversion turns every float32 tensor type of the model (graph inputs, outputs,
value_info, initializers, Constant values, Cast targets, subgraphs included) into float64.
A model it cannot convert faithfully (other float attributes that set a dtype, sparse
initializers) or that onnxruntime's CPU kernels cannot run in float64 has no such
reference: :func:`double_outputs` returns None and the finding stands.

A rewrite that merely reorders float arithmetic moves float32 rounding, and some ops turn a
one-ulp difference into a large one: a discrete output (a comparison's bool, an ArgMax index)
flips where two values it compares are a rounding apart, and Acos of a Tanh that rounds to 1
or just below it is 0 or 0.0005. :func:`rounding_only` tells such a difference from a wrong
rewrite by running *both* models in float64, where a rewrite that computes the same function
gives the same answer (the equivalent-program oracle of PolyJuice, OOPSLA'24).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzer.execution.reference import make_session, run_session
from fuzzer.modelio.graphs import iter_graphs

FLOAT, DOUBLE = 1, 11
#: attributes naming an element type that the conversion rewrites from float to double.
_TYPE_ATTRIBUTES = {("Cast", "to"), ("CastLike", "to")}
#: attributes naming an element type the conversion does not rewrite: such a model has no
#: float64 reference.
_UNSUPPORTED = {"dtype", "output_dtype"}


def _tensor(tensor: Any) -> None:
    from onnx import numpy_helper

    if tensor.data_type == FLOAT:
        tensor.CopyFrom(numpy_helper.from_array(
            numpy_helper.to_array(tensor).astype(np.float64), tensor.name))


def as_double(model: Any) -> Any | None:
    """A copy of ``model`` (``onnx.ModelProto``) with every float32 tensor type made float64
    (see the module docstring), or None where that cannot be done faithfully."""
    import onnx
    from onnx import helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    for graph in iter_graphs(model.graph):
        if graph.sparse_initializer:
            return None
        for value in [*graph.input, *graph.output, *graph.value_info]:
            tensor_type = value.type.tensor_type
            if value.type.HasField("tensor_type") and tensor_type.elem_type == FLOAT:
                tensor_type.elem_type = DOUBLE
        for init in graph.initializer:
            _tensor(init)
        for node in graph.node:
            for attr in node.attribute:
                if attr.name in _UNSUPPORTED:
                    return None
                if (node.op_type, attr.name) in _TYPE_ATTRIBUTES and attr.i == FLOAT:
                    attr.i = DOUBLE
                elif attr.type == onnx.AttributeProto.TENSOR:
                    _tensor(attr.t)
                elif node.op_type == "Constant" and attr.name in ("value_float",
                                                                  "value_floats"):
                    data = [attr.f] if attr.name == "value_float" else list(attr.floats)
                    dims = [] if attr.name == "value_float" else [len(data)]
                    node.attribute.remove(attr)
                    node.attribute.append(helper.make_attribute(
                        "value", helper.make_tensor("value", DOUBLE, dims, data)))
                    break
    return model


def double_outputs(model_bytes: bytes, feeds: dict[str, np.ndarray]
                   ) -> dict[str, np.ndarray] | None:
    """Outputs of the model ``model_bytes`` run in float64 on ``feeds`` (float32 feeds
    widened) at ``ORT_DISABLE_ALL``, keyed by output name, or, where onnxruntime has no
    float64 kernel for an op (Acos), in ``onnx.reference.ReferenceEvaluator``; None where
    the model cannot be converted or neither runs the converted one. Runs untrusted models:
    call it in a sandbox worker (:meth:`fuzzer.execution.sandbox.Sandbox.call`)."""
    import onnx

    converted = as_double(onnx.load_model_from_string(model_bytes))
    if converted is None:
        return None
    wide = {name: x.astype(np.float64)
            if isinstance(x, np.ndarray) and x.dtype == np.float32 else x
            for name, x in feeds.items()}  # a sequence (list) or empty optional (None) as is
    try:
        return run_session(make_session(converted.SerializeToString()), wide)
    except Exception:  # no double kernel, or a conversion onnxruntime rejects
        pass
    try:  # the spec's reference implementation computes every op in numpy's float64
        from onnx.reference import ReferenceEvaluator

        with np.errstate(all="ignore"):
            evaluator = ReferenceEvaluator(converted)
            names = [o.name for o in converted.graph.output]
            inputs = {i.name for i in converted.graph.input}
            values = evaluator.run(names, {k: v for k, v in wide.items() if k in inputs})
        return {name: np.asarray(value) for name, value in zip(names, values, strict=True)}
    except Exception:  # an op the evaluator does not implement, or a model it refuses
        return None


def tensors_only(*outputs: dict[str, Any]) -> bool:
    """Whether every value of ``outputs`` (``{name: value}`` each) is an array: no sequence
    (a list) and no optional (None where empty), which the float64 judgements leave to
    the output oracle."""
    return all(isinstance(v, np.ndarray) for out in outputs for v in out.values())


def more_exact(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray],
               exact: dict[str, np.ndarray] | None) -> bool:
    """Whether the optimized model's ``actual`` outputs are the better float32 answer: each
    agrees with the float64 ``exact`` one rounded to float32 (within the output tolerance of
    :func:`oracles.tolerance.compare_arrays`) while some output of the original's
    ``expected`` does not. False where any of the three is missing or differs in layout, or
    an output is no tensor (a sequence or an optional: :func:`tensors_only`)."""
    from oracles.tolerance import compare_arrays

    if exact is None or list(expected) != list(actual) or set(expected) - set(exact) or \
            not tensors_only(expected, actual):
        return False
    worse = False
    for name, want in expected.items():
        got, truth = actual[name], exact[name]
        if want.dtype != np.float32 or truth.shape != want.shape:
            if compare_arrays(want, got) is not None:
                return False
            continue
        rounded = truth.astype(np.float32)
        if compare_arrays(rounded, got) is not None:
            return False
        worse = worse or compare_arrays(rounded, want) is not None
    return worse


def rounding_only(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray],
                  exact_original: dict[str, np.ndarray] | None,
                  exact_optimized: dict[str, np.ndarray] | None) -> bool:
    """Whether the original's ``expected`` and the optimized model's ``actual`` float32
    outputs differ while the float64 runs of both models (``exact_original``,
    ``exact_optimized``) agree on every output: both compute the same function, and the
    difference is float32 rounding that an ill-conditioned op amplified (Acos just below 1)
    or that flipped a comparison or an ArgMax at a tie. False where a float64 run is
    missing, the layouts differ, an output is no tensor, or nothing differs."""
    from oracles.tolerance import compare_arrays

    if exact_original is None or exact_optimized is None or list(expected) != list(actual) \
            or list(exact_original) != list(exact_optimized) or \
            not tensors_only(expected, actual):
        return False
    differs = any(compare_arrays(want, actual[name]) is not None
                  for name, want in expected.items())
    return differs and all(compare_arrays(exact_original[name], exact_optimized[name]) is None
                           for name in exact_original)
