"""What optfuzz knows about onnxslim's rewrites, read from onnxslim 0.1.98's sources
(``onnxslim/cli/_main.py``, ``onnxslim/core/__init__.py``,
``onnxslim/core/optimization/*.py``, ``onnxslim/core/pattern/{fusion,elimination}/*.py``).

``slim`` repeats, until the graph stops changing (at most ``ONNXSLIM_MAX_ITER`` = 10 rounds):
constant folding (onnx-graphsurgeon's ``fold_constants``), the registered fusion patterns
(``graph_fusion``), dead-node elimination, subexpression elimination and weight tying, then
shape inference (symbolic, onnx's as the fallback). Each is switched off by an option
``slim`` documents: the patterns by ``skip_fusion_patterns`` (their registered names,
``FusionConvBN`` ...), the steps by ``skip_optimizations`` (``OptimizationSettings.keys()``),
shape inference by ``no_shape_infer``.
"""

from __future__ import annotations

from fuzzer.targets.base import ANY

#: the shape-inference step (``onnxslim.core.shape_infer``, off with ``no_shape_infer``).
SHAPE_INFER = "shape_infer"
#: ``size_threshold`` of every run, in bytes: no folded constant above it.
FOLDED_TENSOR_LIMIT = 1 << 20
#: the ``skip_optimizations`` key of the fusion step: on exactly when a pattern is enabled.
GRAPH_FUSION = "graph_fusion"
#: steps that enable rewrites, put first in a pass list (a blamed prefix then ends with the
#: rewrite they enabled, not with them).
ENABLING_STEPS: tuple[str, ...] = (SHAPE_INFER, "constant_folding")

#: Anchors (the op each pattern or step matches first; ``core/pattern/**``,
#: ``dead_node_elimination.py``).
ANCHORS: dict[str, frozenset[str]] = {
    SHAPE_INFER: ANY,
    "constant_folding": ANY,
    "dead_node_elimination": frozenset({
        "Identity", "Dropout", "Pad", "Cast", "Reshape", "Slice", "Mul", "Add", "Expand",
        "Transpose", "Concat", "Sub", "Div", "Split", "Resize"}),
    "subexpression_elimination": ANY,
    "weight_tying": ANY,
    "EliminationConcat": frozenset({"Concat"}),
    "EliminationReshape": frozenset({"Reshape"}),
    "EliminationReshapeAs": frozenset({"Shape"}),
    "EliminationSlice": frozenset({"Slice"}),
    "EliminationTranspose": frozenset({"Transpose"}),
    "EliminationTransposeViewTranspose": frozenset({"Transpose"}),
    "EliminationUnsqueeze": frozenset({"Unsqueeze"}),
    "EliminationTransposeAsReshape": frozenset({"Transpose"}),
    "FusionConcatReshape": frozenset({"Concat"}),
    "FusionConvAdd": frozenset({"Conv"}),
    "FusionConvTransposeAdd": frozenset({"ConvTranspose"}),
    "FusionConvBN": frozenset({"BatchNormalization"}),
    "FusionConvTransposeBN": frozenset({"BatchNormalization"}),
    "FusionConvMul": frozenset({"Conv"}),
    "FusionConvTransposeMul": frozenset({"ConvTranspose"}),
    "FusionGemm": frozenset({"MatMul"}),
    "FusionGemmMul": frozenset({"Gemm"}),
    "FusionGemmAdd": frozenset({"Gemm"}),
    "FusionPadConv": frozenset({"Pad"}),
    "FusionReduce": frozenset({"ReduceSum"}),
}

#: onnxslim rewrite -> names (any target's) whose motifs build what it rewrites: pattern
#: donors across tools (MirrorFuzz, arXiv 2510.15690), beside the ``onnxslim_*`` families.
DONORS: dict[str, tuple[str, ...]] = {
    "constant_folding": ("eliminate_shape_op", "fuse_concat_into_reshape", "ConstantFolding"),
    "dead_node_elimination": ("eliminate_identity", "eliminate_nop_dropout", "eliminate_nop_pad",
                              "eliminate_nop_cast", "eliminate_nop_with_unit",
                              "eliminate_nop_expand", "eliminate_nop_transpose",
                              "eliminate_nop_concat", "eliminate_nop_reshape",
                              "eliminate_nop_split"),
    "subexpression_elimination": ("eliminate_common_subexpression",
                                  "CommonSubexpressionElimination"),
    "weight_tying": ("eliminate_duplicate_initializer", "ConstantSharing"),
    "EliminationConcat": ("fuse_consecutive_concats",),
    "EliminationReshape": ("eliminate_consecutive_idempotent_ops", "ReshapeFusion"),
    "EliminationReshapeAs": ("eliminate_shape_op", "fuse_concat_into_reshape"),
    "EliminationSlice": ("fuse_consecutive_slices",),
    "EliminationTranspose": ("fuse_consecutive_transposes", "eliminate_nop_transpose"),
    "EliminationTransposeViewTranspose": ("TransposeOptimizer",),
    "EliminationUnsqueeze": ("fuse_consecutive_unsqueezes",),
    "EliminationTransposeAsReshape": ("TransposeOptimizer",),
    "FusionConcatReshape": ("fuse_concat_into_reshape",),
    "FusionConvAdd": ("fuse_add_bias_into_conv", "ConvAddFusion"),
    "FusionConvBN": ("fuse_bn_into_conv", "ConvBNFusion"),
    "FusionConvMul": ("ConvMulFusion",),
    "FusionGemm": ("fuse_matmul_add_bias_into_gemm", "MatMulAddFusion"),
    "FusionPadConv": ("fuse_pad_into_conv", "Pad_Fusion"),
    "FusionReduce": ("fuse_consecutive_reduce_unsqueeze",),
}

#: Rewrites no generated graph can make change, with the reason read in onnxslim's sources.
UNREACHABLE: dict[str, str] = {}
