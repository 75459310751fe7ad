"""Reference runs in onnxruntime, configured as design.md fixes: CPU execution provider,
``ORT_DISABLE_ALL`` (onnxruntime's own rewrites neither hide nor cause a difference), logging
silenced, one intra-op thread. The session functions are the stage driver's
(:mod:`fuzzer.execution.stage_driver`), which repro.py carries too; this module adds the
warm-up of a process that workers fork from."""

from __future__ import annotations

import contextlib
from functools import lru_cache

import numpy as np

from fuzzer.execution.stage_driver import make_session, run_session, session_options

__all__ = ["make_session", "run_session", "session_options", "warm_up"]


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
