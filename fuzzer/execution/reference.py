"""Reference runs in onnxruntime, configured as design.md fixes: CPU execution provider,
``ORT_DISABLE_ALL`` (onnxruntime's own rewrites neither hide nor cause a difference), logging
silenced, one intra-op thread."""

from __future__ import annotations

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
