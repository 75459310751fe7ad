"""The onnxruntime motif families: their models are valid, and the transformer a motif names
rewrites them when it is the only one enabled (every other name of its level goes into
``disabled_optimizers``). onnxruntime runs in a sandbox worker, never in the test process."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fuzzer.execution.sandbox import Sandbox
from generators.motifs import MOTIFS, motifs_for_pass

#: (motif, transformer, level, opset, op types of which one must appear after the rewrite;
#: empty: the op types must change in any way)
CASES = [
    ("ort-gelu-erf", "GeluFusionL2", "extended", 17, {"com.microsoft:Gelu"}),
    ("ort-gelu-erf", "GeluFusionL1", "basic", 20, {"Gelu"}),
    ("ort-layer-norm", "LayerNormFusionL1", "basic", 18, {"LayerNormalization"}),
    ("ort-matmul-add", "MatMulAddFusion", "basic", 13, {"Gemm"}),
    ("ort-reshape-from-shape", "ReshapeFusion", "basic", 15, set()),
    ("ort-qdq-unit", "QDQSelectorActionTransformer", "extended", 13, set()),
    ("ort-attention", "AttentionFusion", "extended", 17, {"com.microsoft:MultiHeadAttention"}),
]
SEEDS = range(10)


def _op_types(model: Any) -> Counter[str]:
    return Counter(f"{n.domain}:{n.op_type}" if n.domain else n.op_type
                   for n in model.graph.node)


def rewrite(motif: str, opset: int, seed: int, transformer: str, level: str) -> dict[str, Any]:
    """In a worker: generate the model (the motif's pattern as it emits it: in this worker,
    v2 draws take no row of a schema plan, whose edits exist to step off the pattern; the
    recipe keeps its name, which seeds the model's random stream), check it (onnx checker,
    full check; a run at ORT_DISABLE_ALL), optimize it with no transformer and with
    ``transformer`` alone at ``level``, and return the op types of both saved models."""
    import dataclasses

    import onnx
    import onnxruntime as ort

    from fuzzer.targets import get_target
    from generators import generate_model, recipe
    from generators.inputs import synthesize_inputs

    recipe.RECIPES["v2"] = dataclasses.replace(recipe.RECIPES["v2"], schema_share=0.0)
    gm = generate_model(seed, motifs=[motif], opset=opset)
    onnx.checker.check_model(gm.model, full_check=True)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    session = ort.InferenceSession(gm.model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    session.run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    target = get_target("onnxruntime")
    before = target.optimize(gm.model, {"level": level, "passes": []})
    after = target.optimize(gm.model, {"level": level, "passes": [transformer]})
    return {"applied": motif in gm.motifs, "before": _op_types(before),
            "after": _op_types(after)}


@pytest.fixture(scope="module")
def box() -> Sandbox:
    """One worker: the optimizer never runs in the test process."""
    with Sandbox(jobs=1, timeout=60.0) as sandbox:
        yield sandbox


@pytest.mark.parametrize(("motif", "transformer", "level", "opset", "fused"), CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_named_transformer_rewrites_the_motif(box: Sandbox, motif: str, transformer: str,
                                                  level: str, opset: int,
                                                  fused: set[str]) -> None:
    assert transformer in MOTIFS[motif].passes
    applied, rewritten = [], []
    for seed in SEEDS:
        result = box.call(rewrite, motif, opset, seed, transformer, level)
        before, after = result["before"], result["after"]
        applied += [seed] if result["applied"] else []
        if before != after and (not fused or fused & set(after) - set(before)):
            rewritten.append(seed)
    assert len(applied) >= len(SEEDS) // 2, f"{motif} applied only in seeds {applied}"
    assert rewritten, f"{transformer} rewrote none of seeds {list(SEEDS)} of {motif}"


def test_every_onnxruntime_motif_names_transformers_of_the_target() -> None:
    from fuzzer.targets import get_target

    names = set(get_target("onnxruntime").available_passes())
    ours = [m for m in MOTIFS.values() if m.name.startswith("ort-")]
    assert len(ours) >= 40
    for m in ours:
        assert set(m.passes) <= names, m.name
    assert motifs_for_pass("GeluFusionL1") and motifs_for_pass("TransposeOptimizer")


def test_motif_hints_lead_with_the_enabled_transformers() -> None:
    from fuzzer.targets import get_target

    target = get_target("onnxruntime")
    config = target.with_passes(target.default_config(), ["ConvBNFusion", "GeluFusionL2"])
    hints = target.motif_hints(config)
    assert hints[:2] == ["ConvBNFusion", "GeluFusionL2"]
    assert "fuse_bn_into_conv" in hints and len(hints) == len(set(hints))
