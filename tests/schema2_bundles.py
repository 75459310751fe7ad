"""Bundle folders with schema-2 meta.json (breaking pass, enabling passes, trigger, variants,
verified) written through BundleMeta, with real model.onnx and inputs.npz files, for the
report, triage and summary tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from fuzzer.store.folder import dump_json
from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import npz_bytes
from tests.bundle_files import meta_dict
from tests.conftest import unary_chain_model

#: the feeds of :func:`write_bundle`'s default model (x: float32[2, 3]).
FEEDS = {"x": np.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]], dtype=np.float32)}


def write_bundle(root: Path, bundle_id: str, model: onnx.ModelProto | None = None,
                 feeds: dict[str, np.ndarray] | None = None, **changes: Any) -> BundleMeta:
    """Write the bundle ``root/bundle_id``: meta.json (a fake-target meta, see
    :func:`tests.bundle_files.meta_dict`, with ``changes``, parsed and written by
    BundleMeta), model.onnx (default: x -> Exp -> Neg -> y) and inputs.npz; return its
    meta."""
    folder = root / bundle_id
    folder.mkdir(parents=True)
    meta = BundleMeta.from_json(meta_dict(bundle_id, **changes))
    (folder / "meta.json").write_bytes(dump_json(meta.to_json()))
    onnx.save(model or unary_chain_model(("Exp", "Neg")), folder / "model.onnx")
    (folder / "inputs.npz").write_bytes(npz_bytes(feeds or FEEDS))
    return meta


def if_model(branch_ops: int = 2) -> onnx.ModelProto:
    """``y = If(c) then x -> Neg^n else x -> Abs^n``: one node in the main graph and
    ``branch_ops`` in each branch (1 + 2 * branch_ops nodes with subgraphs)."""
    def branch(op: str) -> onnx.GraphProto:
        nodes, prev = [], "x"
        for index in range(branch_ops):
            out = f"{op.lower()}_out" if index == branch_ops - 1 else f"{op.lower()}_{index}"
            nodes.append(helper.make_node(op, [prev], [out]))
            prev = out
        return helper.make_graph(nodes, op.lower(), [], [
            helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2, 3])])

    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("Neg"),
                            else_branch=branch("Abs"))
    graph = helper.make_graph(
        [node], "if", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                       helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
