"""Reference runs in onnxruntime, configured as design.md fixes: CPU execution provider,
``ORT_DISABLE_ALL`` (onnxruntime's own rewrites neither hide nor cause a difference), logging
silenced, one intra-op thread."""

from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import Any

import numpy as np


@lru_cache(maxsize=4)
def session_options(level: str = "ORT_DISABLE_ALL") -> Any:
    """Shared SessionOptions for a graph optimization level name of onnxruntime."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.log_severity_level = 4  # fatal only: errors become findings
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return options


def make_session(model_bytes: bytes, level: str = "ORT_DISABLE_ALL") -> Any:
    """An onnxruntime InferenceSession on CPU for serialized ``model_bytes``.

    Raises:
        Exception: whatever onnxruntime raises for a model it cannot load.
    """
    import onnxruntime as ort

    return ort.InferenceSession(model_bytes, session_options(level),
                                providers=["CPUExecutionProvider"])


@lru_cache(maxsize=1)
def warm_up() -> None:
    """Build, run and check a one-node model (a Relu on two float32 values, opset 13) in
    this process, so that onnxruntime's kernel registry and onnx's schema registry, each
    built on first use (about 35 ms and 10 ms of CPU), exist before workers fork from it:
    every forked worker, and each one replaced after a death or for recycling, inherits
    them instead of building them in its first case. Creates no thread (one intra-op
    thread, sequential execution, :func:`session_options`). Never raises: where onnx or
    onnxruntime cannot do even this, the cases say so in their own results.

    Runs once per process; later calls return at once. A later sandbox (a campaign's
    finding thread makes its own on its first finding) is made while the first one's pool
    may fork a worker at any moment, and a session built then could hold onnxruntime's
    locks across that fork, leaving them held in the new worker."""
    import onnx
    from onnx import TensorProto, helper

    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in "xy"]
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])],
                                                "warm_up", value[:1], value[1:]),
                              opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    data = model.SerializeToString()
    with contextlib.suppress(Exception):
        onnx.checker.check_model(data, full_check=True)
        run_session(make_session(data), {"x": np.ones(2, np.float32)})


def run_session(session: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``session`` on the feeds it declares and return ``{output name: ndarray}`` in the
    graph's output order.

    Feeds the session does not declare are left out (an optimizer may drop an unused input).

    Raises:
        KeyError: the session declares an input that ``feeds`` lacks.
        Exception: whatever onnxruntime raises while running.
    """
    wanted = [i.name for i in session.get_inputs()]
    missing = [n for n in wanted if n not in feeds]
    if missing:
        raise KeyError(f"model needs input(s) {missing} that the original did not have")
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, {n: feeds[n] for n in wanted})
    return dict(zip(names, values, strict=True))
