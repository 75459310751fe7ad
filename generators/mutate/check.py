"""The checks a mutated model must pass: ``onnx.checker.check_model(full_check=True)`` and
strict shape inference with type checks (the checks the campaign applies to an optimizer's
output), then, unless told otherwise, a run in onnxruntime (CPU, ``ORT_DISABLE_ALL``, one
thread) on the parent's feeds where they fit, else on feeds from
:func:`generators.inputs.synthesize_inputs`, because a mutation that
onnxruntime cannot run (an attribute value its kernel refuses) is no usable case."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, helper

from generators.inputs import graph_feed_inputs, synthesize_inputs
from generators.mutate.graph import first_line

#: Skip the run (the load still happens) for feeds larger than this many elements: real
#: models at full input size (224x224 images) take seconds per run, and each stacked mutator
#: would run them again.
MAX_RUN_ELEMENTS = 1 << 16


@lru_cache(maxsize=1)
def _options() -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return options


def feeds_fit(model: ModelProto, feeds: Mapping[str, np.ndarray]) -> bool:
    """Whether ``feeds`` name exactly the inputs ``model`` needs fed, with the element types
    and ranks of its tensor inputs (a sequence or optional input's feed is left to
    onnxruntime)."""
    inputs = graph_feed_inputs(model)
    if {i.name for i in inputs} != set(feeds):
        return False
    for i in inputs:
        if not i.type.HasField("tensor_type"):
            continue
        tt = i.type.tensor_type
        x = feeds[i.name]
        if np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)) != x.dtype or \
                (tt.HasField("shape") and len(tt.shape.dim) != x.ndim):
            return False
    return True


def _sizes(model: ModelProto, feeds: Mapping[str, Any]) -> dict[str, list[int]]:
    """``{input name: shape}`` for ``model``'s tensor inputs that ``feeds`` holds an array of
    the same rank for: the declared static dims, the array's sizes for the dynamic ones."""
    out: dict[str, list[int]] = {}
    for i in graph_feed_inputs(model):
        value = feeds.get(i.name)
        if not (i.type.HasField("tensor_type") and i.type.tensor_type.HasField("shape")
                and isinstance(value, np.ndarray)):
            continue
        dims = i.type.tensor_type.shape.dim
        if len(dims) == value.ndim:
            out[i.name] = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else n
                           for d, n in zip(dims, value.shape, strict=True)]
    return out


def _elements(feeds: Mapping[str, Any]) -> int:
    """Elements of ``feeds``: arrays, lists of arrays (a sequence input) and None (an empty
    optional input)."""
    return sum(sum(np.size(item) for item in value) if isinstance(value, list) else
               np.size(value) for value in feeds.values() if value is not None)


def run_problem(model: ModelProto, feeds: Mapping[str, np.ndarray] | None = None) -> str | None:
    """None when onnxruntime loads ``model`` and runs it on ``feeds`` where they fit it
    (:func:`feeds_fit`), else on synthesized feeds (seed 0) whose dynamic dims take the
    sizes of ``feeds``' arrays of the same name and rank (the sizes the campaign feeds a
    mutant with: a Loop or a broadcast that fails only at those sizes must fail here too),
    1 elsewhere; else the error."""
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(model.SerializeToString(), _options(),
                                       providers=["CPUExecutionProvider"])
        if feeds is None or not feeds_fit(model, feeds):
            feeds = synthesize_inputs(model, 0, _sizes(model, feeds or {}))
        if _elements(feeds) <= MAX_RUN_ELEMENTS:
            session.run(None, feeds)
    except Exception as exc:
        return f"onnxruntime: {first_line(exc)}"
    return None


def problem(model: ModelProto, run: bool = True,
            feeds: Mapping[str, np.ndarray] | None = None) -> str | None:
    """None when ``model`` is valid (and, with ``run``, runs in onnxruntime, on ``feeds`` where
    they fit), else ``"<ExceptionType>: <first line>"`` of the first check that rejects it."""
    try:
        onnx.checker.check_model(model, full_check=True)  # strict shape inference included
    except Exception as exc:
        return first_line(exc)
    return run_problem(model, feeds) if run else None
