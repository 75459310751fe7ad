"""What optfuzz knows about onnx-simplifier's rewrites, read from onnxsim 0.8.1's sources
(``onnxsim/onnxsim.cpp``, ``onnxsim/custom_optimizer_passes.cpp``, ``onnxsim/passes/*.h``).

``simplify`` runs a fixed point of three stages: shape inference, the optimizer passes of its
bundled onnx-optimizer (``GetFuseAndEliminationPass()`` after onnxsim registers its own
passes, minus :data:`ALWAYS_DISABLED`, plus :data:`OPTED_IN`) and constant folding. The
optimizer passes are named as ``--list-default-optimizers`` names them; the other two
stages are named after the options that switch them off (``skip_shape_inference``,
``skip_constant_folding``; ``onnxsim.shape_inference`` and ``onnxsim.constant_folding`` in
the metadata onnxsim writes).
"""

from __future__ import annotations

from fuzzer.targets.base import ANY

#: onnxsim's own stages, named after their ``skip_*`` options, in the order a pass list
#: keeps them (before every optimizer pass: they mostly enable rewrites, so a blamed prefix
#: ends with the rewrite they enabled).
SHAPE_INFERENCE = "shape_inference"
CONSTANT_FOLDING = "constant_folding"
OWN_STAGES: tuple[str, ...] = (SHAPE_INFERENCE, CONSTANT_FOLDING)

#: onnxsim.cpp, SimplifyImpl: ``always_disabled_passes`` are dropped from every pass list
#: ("eliminate_shape_gather ... aborts the whole process on graphs where a Gather index
#: cannot be statically resolved"; "extract_constant_to_initializer would erase [Constant
#: nodes] right back").
ALWAYS_DISABLED: tuple[str, ...] = ("eliminate_shape_gather", "extract_constant_to_initializer")

#: onnxsim.cpp, SimplifyImpl: an ``Other`` pass onnxsim adds to the default list itself.
OPTED_IN: tuple[str, ...] = ("fuse_matmul_add_bias_into_gemm_batched",)

_REDUCE = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                     "ReduceL1", "ReduceL2", "ReduceLogSumExp"})
_SHAPE_FAMILY = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten"})

#: Anchors of onnxsim's own passes (``onnxsim/passes/<name>.h``: the op each pattern matches
#: first); the onnx-optimizer passes it shares take onnxoptimizer's table.
OWN_ANCHORS: dict[str, frozenset[str]] = {
    SHAPE_INFERENCE: ANY,
    CONSTANT_FOLDING: ANY,
    "fuse_consecutive_squeeze_unsqueeze": frozenset({"Squeeze", "Unsqueeze"}),
    "eliminate_loop_with_const_trip_count": frozenset({"Loop"}),
    "eliminate_optional_get_element": frozenset({"OptionalGetElement"}),
    "eliminate_optional_has_element": frozenset({"OptionalHasElement"}),
    "eliminate_nop_reduce": _REDUCE,
    "eliminate_nop_softmax": frozenset({"Softmax", "LogSoftmax"}),
    "eliminate_reshape_around_elementwise": frozenset({"Reshape"}),
    "eliminate_reshape_family_on_constant": _SHAPE_FAMILY,
    "eliminate_sequence_at_construct": frozenset({"SequenceAt"}),
    "eliminate_sequence_length_construct": frozenset({"SequenceLength"}),
    "fuse_attention": frozenset({"Softmax"}),
    "fuse_consecutive_mul": frozenset({"Mul"}),
    "fuse_consecutive_reduce": _REDUCE,
    "fuse_consecutive_reshapes": frozenset({"Reshape"}),
    "fuse_gelu": frozenset({"Erf"}),
    "fuse_gqa": frozenset({"Softmax"}),
    "fuse_layer_norm": frozenset({"ReduceMean"}),
    "fuse_mul_into_conv": frozenset({"Conv"}),
    "fuse_preceding_mul_into_conv": frozenset({"Conv"}),
    "fuse_reshape_family": _SHAPE_FAMILY,
    "fuse_lp_normalization": frozenset({"ReduceL1", "ReduceL2"}),
    "fuse_rms_norm": frozenset({"ReduceMean"}),
    "fuse_rope": frozenset({"Concat"}),
    "fuse_split_gather_concat": frozenset({"Split"}),
    "rewrite_arg_reduce_select_last_index": frozenset({"ArgMax", "ArgMin"}),
    "rewrite_bool_where": frozenset({"Where"}),
    "fuse_matmul_add_bias_into_gemm_batched": frozenset({"MatMul"}),
}

#: onnxsim pass -> names (any target's) whose motifs build what it rewrites: pattern donors
#: across tools (MirrorFuzz, arXiv 2510.15690), beside the ``onnxsim_*`` motif families.
DONORS: dict[str, tuple[str, ...]] = {
    CONSTANT_FOLDING: ("eliminate_shape_op", "fuse_concat_into_reshape", "ConstantFolding"),
    SHAPE_INFERENCE: ("eliminate_shape_op",),
    "fuse_layer_norm": ("LayerNormFusionL1", "enable_layer_norm"),
    "fuse_rms_norm": ("SimplifiedLayerNormFusion",),
    "fuse_attention": ("AttentionFusion", "enable_attention"),
    "fuse_gqa": ("AttentionFusion",),
    "fuse_mul_into_conv": ("ConvMulFusion",),
    "fuse_matmul_add_bias_into_gemm_batched": ("MatMulAddFusion",
                                               "fuse_matmul_add_bias_into_gemm"),
    "eliminate_reshape_around_elementwise": ("MatMulAddFusion",),
    "fuse_consecutive_reshapes": ("ReshapeFusion", "eliminate_consecutive_idempotent_ops"),
    "fuse_consecutive_mul": ("MatMulScaleFusion",),
}

#: Passes no graph of this project's generator can make change, with the reason read in
#: onnxsim's sources (shown by ``optfuzz coverage``).
UNREACHABLE: dict[str, str] = {
    "fuse_rms_norm": "emits RMSNormalization, so it fires only at opset >= 23 "
                     "(fuse_rms_norm.h); the generator declares opsets 7-21",
    "fuse_rope": "emits RotaryEmbedding, so it fires only at opset >= 23 (fuse_rope.h); "
                 "the generator declares opsets 7-21",
    "rewrite_bool_where": "rewrites a Where on bool data, which onnxruntime's CPU execution "
                          "provider has no kernel for (rewrite_bool_where.h), so the original "
                          "model never runs: an unusable seed",
    "fuse_gqa": "needs a causal grouped-query attention block with a provably causal constant "
                "mask and repeat_kv broadcast (fuse_gqa.h); no motif builds one",
}
