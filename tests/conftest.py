"""Shared fixtures: small hand-built models and one sandbox per test module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.execution.sandbox import Sandbox


def unary_chain_model(ops: tuple[str, ...] = ("Neg", "Exp"), shape: tuple[int, ...] = (2, 3),
                      opset: int = 17) -> onnx.ModelProto:
    """x -> op -> ... -> y, float32 of ``shape``; IR version matched to ``opset``."""
    nodes, prev = [], "x"
    for index, op in enumerate(ops):
        out = "y" if index == len(ops) - 1 else f"/layer{index}/{op}_output_0"
        nodes.append(helper.make_node(op, [prev], [out], name=f"/layer{index}/{op}"))
        prev = out
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


@pytest.fixture
def chain_model() -> onnx.ModelProto:
    """A two-node Neg -> Exp model."""
    return unary_chain_model()


@pytest.fixture
def chain_file(tmp_path: Path, chain_model: onnx.ModelProto) -> Path:
    """The two-node model saved as model.onnx in its own folder."""
    folder = tmp_path / "models"
    folder.mkdir()
    path = folder / "chain.onnx"
    onnx.save(chain_model, path)
    return path


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    """Two workers with a short per-case timeout (seconds)."""
    with Sandbox(jobs=2, timeout=3.0) as box:
        yield box


def cpu_session(model: onnx.ModelProto) -> Any:
    """An onnxruntime CPU session of ``model`` with graph optimizations off and one thread
    (the generator's validity contract: the model runs as written)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def walked_draws(motif: str, hints: Any, key: str,
                 levels: tuple[str, ...]) -> list[tuple[int, Any, dict[str, str]]]:
    """``(seed, GeneratedModel, plan row)`` of each step of the walk of ``motif``'s schema plan
    under generation ``hints`` (:func:`generators.generate.walk_seeds`) whose row gives factor
    ``key`` (``"Conv|attr:group"``) one of ``levels``, generated with the ``v2`` generator."""
    from generators.generate import generate, walk_seeds
    from generators.schema.plan import motif_plan
    from generators.schema.walk import walk_steps

    plan, steps = motif_plan(motif), walk_steps(motif)
    return [(seed, generate(seed, "v2", hints), row)
            for step, seed in walk_seeds(motif, "v2", hints).items()
            if (row := plan.rows[steps[step].row]).get(key) in levels]


def pass_hints(target: str, name: str) -> Any:
    """The generation hints of ``target``'s default configuration running pass ``name``
    alone (what a campaign draws its cases for that pass with)."""
    from fuzzer.targets import get_target

    adapter = get_target(target)
    return adapter.generation_hints(adapter.with_passes(adapter.default_config(), [name]))
