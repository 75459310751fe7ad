"""The onnxscript motifs of ``fold``, ``checks``, ``passes`` and ``mix`` (and the reworked
Conv affine and Reshape-MatMul forms of ``rules``): every draw passes the checker and runs
in onnxruntime, and each motif reaches what it aims at: the rule rewrites
(``RewriteRuleSet.apply_to_model`` counts a rewrite), the pass reports a change, or
``optimize_for_ort`` emits the fused com.microsoft op, on some of a few seeds; the near-miss
motifs leave their rules alone when their draws are not varied. (``os-slices-split`` is not
among them: onnxscript 0.7.2's matcher binds both Slices of ``SlicesSplit``'s two-output
pattern to one node, so the rule fails its own check on every model.)"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator

import onnx
import pytest

pytest.importorskip("onnxscript")

import onnxruntime as ort  # noqa: E402

from generators import recipe  # noqa: E402
from generators.generate import generate  # noqa: E402
from generators.inputs import synthesize_inputs  # noqa: E402
from generators.motifs import MOTIFS  # noqa: E402
from tests.conftest import cpu_session  # noqa: E402

#: motif -> the rules or passes (onnxscript's names) each must make change on some seed.
AIMS: dict[str, tuple[str, ...]] = {
    "os-fold-shape-values": ("FoldConstantsPass",),
    "os-fold-cast-like": ("FoldConstantsPass",),
    "os-fold-concat": ("FoldConstantsPass",),
    "os-fold-dropout": ("FoldConstantsPass", "dropout_zero_rule"),
    "os-fold-sequences": ("FoldConstantsPass",),
    "os-fold-constant-attrs": ("FoldConstantsPass", "LiftConstantsToInitializersPass"),
    "os-fold-limits": ("FoldConstantsPass",),
    "os-fold-identity-outputs": ("FoldConstantsPass",),
    "os-fold-mix": ("FoldConstantsPass",),
    "os-rules-mix": ("FuseSuccessiveRelu", "CastCast"),
    "os-reshape-gemm": ("gemm_to_matmul_add_rule",),
    "os-scatter-forms": ("ScatterAllStatic", "ScatterAllDynamic"),
    "os-conv-integer": ("FuseConvIntegerPad", "NormalizePadFormatConvInteger"),
    "os-expand-bitshift": ("ExpandFirst_BitShift", "ExpandSecond_BitShift"),
    "os-if-initializers": ("LiftSubgraphInitializersToMainGraphPass", "FoldConstantsPass"),
    "os-reshape-symbolic": ("MaterializeReshapeShape",),
    "os-reshape-zeros": ("ReshapeReshape",),
    "os-expand-dynamic": ("ExpandFirst_Add", "ExpandSecond_Mul"),
    "os-bn-checks": ("FuseBatchNormIntoConv", "FuseBatchNormIntoGemm"),
    "os-conv-auto-pad": ("NormalizePadFormatConv",),
    "os-qlinear-conv-zero-bias": ("RemoveOptionalBiasFromQLinearConv",),
    "os-unsqueeze-pair": ("UnsqueezeUnsqueeze",),
    "os-symbolic-shapes": ("Flatten2Reshape", "collapse_slice_rule"),
    "os-reshape-matmul": ("one_reshape_matmul_reshape_rule",),
    "os-cse-twins": ("CommonSubexpressionEliminationPass",),
    "os-unused-outputs": ("RemoveUnusedNodesPass",),
    "os-loop-passthrough": ("OutputFixPass", "RemoveUnusedNodesPass"),
    "os-conv-affine": ("ConvAffineFusion", "AffineConvFusion"),
    "os-unknown-shapes": ("Flatten2Reshape", "ExpandIdentity"),
    "os-conv-pad-checks": ("FuseConvPad",),
}
#: near-miss motifs -> rules that must not rewrite their unvaried draws.
SPARED: dict[str, tuple[str, ...]] = {
    "os-clip-bounds": ("FuseSuccessiveClip", "FuseSuccessiveClipRelu",
                       "FuseSuccessiveReluClip", "FuseMaxMinToClip"),
    "os-ml-fold": ("FoldConstantsPass",),
}
#: motifs for ``optimize_for_ort`` (the ``ort_fusions`` rule set, one step) -> the op type
#: (domain com.microsoft) it must emit on some seed.
ORT_AIMS: dict[str, str] = {
    "os-ort-attention": "Attention",
    "os-ort-encoder": "Attention",
    "os-ort-rotary": "MultiHeadAttention",
}
#: seeds tried per motif.
SEEDS = 24


@pytest.fixture(scope="module", autouse=True)
def _quiet() -> Iterator[None]:
    ort.set_default_logger_severity(3)
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    """A generator like v2 whose draws take no schema plan row."""
    recipe.RECIPES["v2-plain"] = dataclasses.replace(recipe.RECIPES["v2"], name="v2-plain",
                                                     schema_share=0.0)
    yield "v2-plain"
    recipe.RECIPES.pop("v2-plain", None)


def _changes(model: onnx.ModelProto, name: str) -> bool:
    """Whether onnxscript's rule or pass ``name`` changes ``model`` (after what the folder
    gives the rules: shapes and Constant values)."""
    import onnx_ir as ir
    from onnxscript.rewriter import RewriteRuleSet

    from fuzzer.targets.onnxscript.rules import rule_set
    from fuzzer.targets.onnxscript.target import STEPS, prepare

    model_ir = ir.serde.deserialize_model(model)
    prepare(model_ir)
    for named in rule_set("common"):
        if named.name == name:
            return RewriteRuleSet(list(named.rules)).apply_to_model(model_ir) > 0
    step = next(s for s in STEPS if s.name == name)
    before = ir.serde.serialize_model(model_ir).SerializeToString()
    modified = step.make()(model_ir).modified  # (not set for trimmed optional outputs)
    return bool(modified) or ir.serde.serialize_model(model_ir).SerializeToString() != before


def _draws(name: str, generator: str = "v2") -> list:
    made = [gm for gm in (generate(seed, generator, motifs=[name], interfaces=[])
                          for seed in range(SEEDS))
            if name in gm.motifs]
    assert len(made) >= SEEDS // 2, name
    return made


@pytest.mark.parametrize("name", [*AIMS, *SPARED, *ORT_AIMS])
def test_motif_draws_pass_the_checker_and_run(name: str) -> None:
    assert name in MOTIFS
    for gm in _draws(name):
        onnx.checker.check_model(gm.model, full_check=True)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, gm.seed, gm.input_shapes))


@pytest.mark.parametrize("name", list(AIMS))
def test_motif_reaches_what_it_aims_at(name: str) -> None:
    draws = _draws(name)
    for aim in AIMS[name]:
        assert aim in MOTIFS[name].passes, (name, aim)
        hits = sum(_changes(gm.model, aim) for gm in draws)
        assert hits >= 1, (name, aim)


@pytest.mark.parametrize("name", list(SPARED))
def test_near_misses_are_left_alone(name: str, plain: str) -> None:
    for gm in _draws(name, plain):
        for rule in SPARED[name]:
            if rule == "FoldConstantsPass":
                assert _kept(gm.model, "Binarizer"), name
            else:
                assert not _changes(gm.model, rule), (name, rule, gm.seed)


@pytest.mark.parametrize("name", list(ORT_AIMS))
def test_ort_fusion_motifs_are_fused(name: str) -> None:
    from fuzzer.targets import get_target

    target = get_target("onnxscript")
    emitted = set()
    for gm in _draws(name):
        out = target.optimize(gm.model, {"rule_set": "ort_fusions", "passes": None})
        emitted |= {n.op_type for n in out.graph.node if n.domain == "com.microsoft"}
    assert ORT_AIMS[name] in emitted, (name, sorted(emitted))


def _kept(model: onnx.ModelProto, op: str) -> bool:
    """Whether ``op`` nodes survive onnxscript's folding (with dead-node removal)."""
    from fuzzer.targets import get_target

    target = get_target("onnxscript")
    out = target.optimize(model, {"rule_set": "default",
                                  "passes": ["FoldConstantsPass", "RemoveUnusedNodesPass"]})
    return any(n.op_type == op for n in out.graph.node)
