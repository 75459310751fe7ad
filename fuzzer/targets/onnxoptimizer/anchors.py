"""Anchor op types of onnxoptimizer's passes: a pass can rewrite a model only if one of its
anchors occurs in the original or the optimized graph (subgraphs included). Read from the pass
sources (``onnxoptimizer/passes/*.h``: the op types each pattern matches first); localization
uses the table to screen suspects and prune passes that cannot have acted.
"""

from __future__ import annotations

from fuzzer.targets.base import ANY

_BINARY_WITH_UNIT = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Concat"})

#: pass -> op types one of which must be present for the pass to act.
ANCHORS: dict[str, frozenset[str]] = {
    "nop": frozenset(),
    "eliminate_nop_cast": frozenset({"Cast"}),
    "eliminate_nop_dropout": frozenset({"Dropout"}),
    "eliminate_nop_flatten": frozenset({"Flatten"}),
    "extract_constant_to_initializer": frozenset({"Constant"}),
    "eliminate_consecutive_idempotent_ops": frozenset({"Ceil", "Floor", "Round", "Relu",
                                                       "Reshape"}),
    "eliminate_if_with_const_cond": frozenset({"If"}),
    "eliminate_nop_monotone_argmax": frozenset({"ArgMax"}),
    "eliminate_nop_pad": frozenset({"Pad"}),
    "eliminate_nop_concat": frozenset({"Concat"}),
    "eliminate_nop_split": frozenset({"Split"}),
    "eliminate_nop_expand": frozenset({"Expand"}),
    "eliminate_shape_gather": frozenset({"Gather"}),
    "eliminate_slice_after_shape": frozenset({"Slice"}),
    "eliminate_nop_transpose": frozenset({"Transpose"}),
    "fuse_add_bias_into_conv": frozenset({"Conv"}),
    "fuse_bn_into_conv": frozenset({"BatchNormalization"}),
    "fuse_consecutive_concats": frozenset({"Concat"}),
    "fuse_consecutive_log_softmax": frozenset({"Log", "LogSoftmax"}),
    "fuse_consecutive_reduce_unsqueeze": frozenset({"Unsqueeze"}),
    "fuse_consecutive_squeezes": frozenset({"Squeeze"}),
    "fuse_consecutive_transposes": frozenset({"Transpose"}),
    "fuse_matmul_add_bias_into_gemm": frozenset({"MatMul"}),
    "fuse_pad_into_conv": frozenset({"Pad"}),
    "fuse_pad_into_pool": frozenset({"Pad"}),
    "fuse_transpose_into_gemm": frozenset({"Gemm"}),
    "fuse_concat_into_reshape": frozenset({"Reshape"}),
    "eliminate_nop_reshape": frozenset({"Reshape"}),
    "eliminate_nop_with_unit": _BINARY_WITH_UNIT,
    "eliminate_common_subexpression": ANY,
    "fuse_qkv": frozenset({"MatMul"}),
    "fuse_consecutive_unsqueezes": frozenset({"Unsqueeze"}),
    "eliminate_deadend": ANY,
    "eliminate_identity": frozenset({"Identity"}),
    "eliminate_shape_op": frozenset({"Shape"}),
    "fuse_consecutive_slices": frozenset({"Slice"}),
    "eliminate_unused_initializer": ANY,
    "eliminate_duplicate_initializer": ANY,
    "rewrite_where": frozenset({"Where"}),
    "replace_einsum_with_matmul": frozenset({"Einsum"}),}
