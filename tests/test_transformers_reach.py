"""The onnxruntime-transformers motifs that plant the forms the Python fusions match: each
draws valid models that run on onnxruntime's CPU execution provider, and the fusion it aims
at acts on some of them (its fused op appears, or the nodes it removes go)."""

from __future__ import annotations

from collections import Counter

import onnx
import pytest

pytest.importorskip("onnxruntime.transformers")
pytest.importorskip("sympy")

from fuzzer.execution.reference import make_session, run_session  # noqa: E402
from fuzzer.targets.onnxruntime_transformers.target import (  # noqa: E402
    ALWAYS_HINT,
    OnnxRuntimeTransformersTarget,
    model_hint,
)
from generators import generate_model  # noqa: E402
from generators.inputs import synthesize_inputs  # noqa: E402
from generators.motifs import MOTIFS  # noqa: E402
from oracles.base import Finding  # noqa: E402


@pytest.fixture(scope="module")
def target() -> OnnxRuntimeTransformersTarget:
    return OnnxRuntimeTransformersTarget()


def _ops(model: onnx.ModelProto) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


#: motif -> (model type, seeds, how many must reach, what reaching looks like: an op the
#: optimized model has and the original has not, "-Op" for fewer Op nodes than before, or
#: "!Error" for the optimizer raising that exception type)
REACH = {
    "tb-bias-gelu": ("bert", 10, 4, ("Gelu", "FastGelu", "QuickGelu", "BiasGelu")),
    "tb-bias-skip-layer-norm": ("bert", 10, 4, ("LayerNormalization",
                                                "SimplifiedLayerNormalization",
                                                "SkipLayerNormalization",
                                                "SkipSimplifiedLayerNormalization")),
    "tb-attention-forms": ("bert", 12, 2, ("Attention",)),
    "tb-attention-sdpa": ("bert", 10, 2, ("Attention",)),
    # FusionAttention's Where forms end in checks that refuse them (see the motif): validity
    "tb-attention-where": ("bert", 4, 0, ("Attention",)),
    "tb-attention-albert": ("bert", 10, 1, ("Attention",)),
    "tb-clip-attention": ("clip", 12, 1, ("Attention",)),
    "tb-clip-causal": ("clip", 12, 1, ("Attention",)),
    "tb-gpt2-attention": ("gpt2", 8, 2, ("Attention",)),
    # FusionGptAttentionMegatron matches it through, finds no mask input and then casts
    # the missing mask (a TypeError in onnxruntime 1.32): that exception is the mark
    "tb-gpt2-megatron": ("gpt2", 10, 2, ("!TypeError",)),
    "tb-gpt2-no-past": ("gpt2", 10, 1, ("Attention",)),
    "tb-t5-attention": ("t5", 6, 2, ("RelativePositionBias",)),
    "tb-t5-sliced-mask": ("t5", 6, 2, ("Attention",)),
    "tb-t5-decoder": ("t5", 6, 2, ("MultiHeadAttention",)),
    "tb-t5-cross": ("t5", 6, 2, ("MultiHeadAttention",)),
    "tb-bart-encoder": ("bart", 8, 2, ("Attention",)),
    "tb-bart-decoder": ("bart", 8, 2, ("Attention",)),
    # the cross attention reaches create_multihead_attention_node, which builds nothing for
    # it under these options: validity only
    "tb-bart-cross": ("bart", 4, 0, ("MultiHeadAttention",)),
    "tb-rotary": ("bert", 8, 3, ("RotaryEmbedding",)),
    # under gpt2 FusionRotaryAttention matches it through and then asserts the num_heads
    # argument the target leaves 0 (documented); under bert its RotaryEmbedding nodes mark it
    "tb-llama-attention": ("bert", 8, 2, ("RotaryEmbedding",)),
    "tb-qdq": ("bert", 10, 2, ("QOrderedGelu", "QOrderedLayerNormalization", "QOrderedMatMul")),
    "tb-optimize-steps": ("bert", 12, 3, ("-Transpose", "-Concat", "-Identity", "-Cast",
                                          "-Reshape")),
}


def _reached(before: Counter, after: Counter, signs: tuple[str, ...]) -> bool:
    for sign in signs:
        if sign.startswith("-"):
            if after[sign[1:]] < before[sign[1:]]:
                return True
        elif after[sign] > before[sign]:
            return True
    return False


@pytest.mark.parametrize("motif", sorted(REACH))
def test_motif_draws_valid_models_that_reach_its_fusion(motif, target):
    model_type, seeds, need, signs = REACH[motif]
    reached = 0
    for seed in range(seeds):
        gm = generate_model(seed, motifs=[motif], interfaces=[])
        assert motif in gm.motifs
        onnx.checker.check_model(gm.model, full_check=True)
        feeds = synthesize_inputs(gm.model, seed, gm.input_shapes)
        run_session(make_session(gm.model.SerializeToString()), feeds)
        try:  # some forms plant what the fusions raise on (findings, not this test's)
            optimized = target.optimize(gm.model, {"model_type": model_type, "passes": None})
        except Exception as error:  # noqa: BLE001
            reached += f"!{type(error).__name__}" in signs
            continue
        reached += _reached(_ops(gm.model), _ops(optimized), signs)
    assert reached >= need, f"{motif}: {reached} of {seeds} seeds reached {signs}"


def test_model_type_forms_are_hinted_under_their_model_type_only(target):
    enabled = ["enable_attention"]
    gpt2 = target.motif_hints({"model_type": "gpt2", "passes": enabled})
    bert = target.motif_hints({"model_type": "bert", "passes": enabled})
    assert model_hint("gpt2", "enable_attention") in gpt2
    assert model_hint("gpt2", "enable_attention") not in bert
    assert ALWAYS_HINT in bert and ALWAYS_HINT not in gpt2
    assert set(MOTIFS["tb-gpt2-attention"].passes) & set(gpt2)
    assert not set(MOTIFS["tb-gpt2-attention"].passes) & set(bert)
    assert set(MOTIFS["tb-optimize-steps"].passes) & set(bert)
    # BERT-layout attention forms are not drawn for a class with its own attention fusion
    assert not set(MOTIFS["tb-bert-attention"].passes) & set(gpt2)
    assert set(MOTIFS["tb-bert-attention"].passes) & set(bert)


def test_load_failures_of_what_the_target_cannot_run_are_documented(target):
    heads = Finding("load-failure", "load", "[ONNXRuntimeError] : 1 : FAIL : Exception during "
                    "initialization: attention_base.h:61 info.GetAttr(\"num_heads\", "
                    "&num_heads).IsOK() && num_heads > 0 was false.")
    gpt2 = {"model_type": "gpt2", "passes": None}
    assert target.documented(heads, gpt2).name == "num-heads-required-beyond-bert"
    assert target.documented(heads, {"model_type": "bert", "passes": None}) is None
    asserted = Finding("optimizer-error", "optimize", "AssertionError",
                       {"traceback": "fusion_rotary_attention.py, line 56, in create_mha_node\n"
                                     "    assert self.num_heads > 0\nAssertionError"})
    assert target.documented(asserted, gpt2).name == "num-heads-required-beyond-bert"
    rpb = Finding("load-failure", "load", "NOT_IMPLEMENTED : Could not find an implementation "
                  "for RelativePositionBias(1) node with name 'RelPosBias_encoder_0'")
    assert target.documented(rpb, {"model_type": "t5", "passes": None}).name == \
        "fused-op-without-cpu-kernel"
