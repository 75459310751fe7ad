"""What each FusionOptions flag of ``onnxruntime.transformers`` fuses, where the fusion is
defined, the op types it starts from (localization's anchors) and the onnxruntime graph
transformers whose motifs build what it fuses (motif hints).

The flag names are the attribute names of
``onnxruntime/transformers/fusion_options.py:FusionOptions``; the order is the order in which
``onnx_model_bert.py:BertOnnxModel.optimize`` (the base of every model class this target
uses) consults them. Source files are relative to ``onnxruntime/transformers/``. Read from
onnxruntime 1.32.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.registry import Registry


@dataclass(frozen=True)
class Fusion:
    """One FusionOptions flag.

    Attributes:
        what: the subgraph the flag's fusions rewrite and what they make of it.
        source: the modules that define the fusions.
        anchors: op types one of which must be present for the fusions to act.
        motifs: onnxruntime graph transformer names (``Motif.passes`` of the onnxruntime
            motif families) whose motifs build the subgraph in forms this target's own
            families (``generators/motifs/onnxruntime_transformers/``) do not; empty where
            those build every form the flag's fusions match, so that the hinted draws go
            to them.
    """

    what: str
    source: str
    anchors: frozenset[str]
    motifs: tuple[str, ...] = ()


FUSIONS: Registry[Fusion] = Registry("fusion", {
    "enable_layer_norm": Fusion(
        "ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div (then Mul gamma, Add beta) into "
        "LayerNormalization, the TensorFlow form too; the RMS form into "
        "SimplifiedLayerNormalization (com.microsoft); t5 fuses the RMS form only",
        "fusion_layernorm.py (FusionLayerNormalization, FusionLayerNormalizationTF), "
        "fusion_simplified_layernorm.py, fusion_qordered_layernorm.py; onnx_model_t5.py",
        frozenset({"ReduceMean", "LayerNormalization"})),
    "enable_gelu": Fusion(
        "x * 0.5 * (1 + Erf(x / sqrt(2))) into Gelu, the tanh approximation into FastGelu, "
        "x * Sigmoid(1.702 x) into QuickGelu (com.microsoft)",
        "fusion_gelu.py, fusion_fastgelu.py, fusion_quickgelu.py, fusion_qordered_gelu.py",
        frozenset({"Erf", "Tanh", "Sigmoid", "Gelu"}),
        ("GeluFusionL1", "FastGeluFusion", "QuickGeluFusion")),
    "enable_skip_layer_norm": Fusion(
        "Add of two 3-D tensors of one shape (or a (1, S, H) or (S, H) skip) then "
        "LayerNormalization into SkipLayerNormalization; Add then "
        "SimplifiedLayerNormalization into SkipSimplifiedLayerNormalization (com.microsoft)",
        "fusion_skiplayernorm.py (FusionSkipLayerNormalization), "
        "fusion_simplified_layernorm.py (FusionSkipSimplifiedLayerNormalization)",
        frozenset({"LayerNormalization", "SimplifiedLayerNormalization"})),
    "enable_rotary_embeddings": Fusion(
        "the rotate-half rotary position embedding (Slice, Neg, Concat, Mul by cos and sin "
        "caches, Add) into RotaryEmbedding (com.microsoft)",
        "fusion_rotary_attention.py (FusionRotaryEmbeddings)",
        frozenset({"Add", "RotaryEmbedding"})),
    "enable_attention": Fusion(
        "self-attention (Q, K, V MatMul + Add, Reshape to heads, Transpose, Q.K^T scaled, "
        "additive mask, Softmax, MatMul with V, Transpose, Reshape) that ends in a residual "
        "Add and a (Skip)LayerNormalization into Attention (com.microsoft); clip, bart, t5 "
        "and gpt2 add their own attention forms",
        "fusion_attention.py (FusionAttention, AttentionMask), fusion_attention_clip.py, "
        "fusion_bart_attention.py, onnx_model_t5.py (FusionT5Attention), "
        "fusion_gpt_attention*.py, fusion_rotary_attention.py, fusion_qordered_attention.py",
        frozenset({"Softmax"})),
    "enable_qordered_matmul": Fusion(
        "DequantizeLinear inputs, MatMul and QuantizeLinear into QOrderedMatMul "
        "(com.microsoft, a CUDA kernel only)",
        "fusion_qordered_matmul.py",
        frozenset({"DequantizeLinear"})),
    "enable_embed_layer_norm": Fusion(
        "word, position and (optional) segment embedding Gathers, their Adds and the "
        "LayerNormalization after them, where an attention block follows, into "
        "EmbedLayerNormalization (com.microsoft)",
        "fusion_embedlayer.py (FusionEmbedLayerNormalization)",
        frozenset({"Gather"})),
    "enable_bias_gelu": Fusion(
        "MatMul, Add of a 1-D constant bias, then Gelu or FastGelu into BiasGelu or FastGelu "
        "with a bias input (com.microsoft)",
        "fusion_biasgelu.py",
        frozenset({"Gelu", "FastGelu"})),
    "enable_bias_skip_layer_norm": Fusion(
        "MatMul, Add of a 1-D constant bias, then SkipLayerNormalization into "
        "SkipLayerNormalization with a bias input",
        "fusion_skiplayernorm.py (FusionBiasSkipLayerNormalization)",
        frozenset({"SkipLayerNormalization"})),
    "enable_gemm_fast_gelu": Fusion(
        "MatMul of a 2-D constant weight then FastGelu into GemmFastGelu (com.microsoft, a "
        "ROCm kernel only)",
        "fusion_gemmfastgelu.py",
        frozenset({"FastGelu"}),
        ("FastGeluFusion",)),
})

#: Flags whose fused op has no CPU kernel by design: drawn only when named with --passes.
NOT_ON_CPU: frozenset[str] = frozenset({"enable_gemm_fast_gelu"})
