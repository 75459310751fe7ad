"""Cheap, optimizer-free evidence about which passes of a list can have caused a finding.

Localization asks two questions before it spends optimizer runs:

* *suspects*: passes that the evidence points at, most likely first: a pass whose name (or
  whose source file, as in onnxoptimizer's ``fuse_bn_into_conv.h:87`` assertions) appears in
  the finding's message or traceback, then passes whose anchor op types vanished from or
  appeared in the optimized model;
* *plausible*: passes that can act on the model at all. A pass whose anchor op types occur
  neither in the original nor in the optimized graph (subgraphs included) cannot have
  rewritten it.

Both are hints: localization verifies every conclusion with a real run. Anchors are
per-target tables in :data:`ANCHORS` (target name -> pass -> op types); a pass missing from
the table, or mapped to :data:`ANY`, is always plausible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: The pass may act on any graph (it looks at every node or at initializers).
ANY: frozenset[str] = frozenset({"*"})

_BINARY_WITH_UNIT = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Concat"})

#: target -> pass -> op types one of which must be present for the pass to act.
ANCHORS: dict[str, dict[str, frozenset[str]]] = {
    "onnxoptimizer": {
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
        "replace_einsum_with_matmul": frozenset({"Einsum"}),
    },
}

_LOCATION = re.compile(r"([\w-]+)\.(?:cc|cpp|cxx|c|h|hpp):\d+")


def mentioned(passes: Sequence[str], text: str, locations: str = "") -> list[str]:
    """Passes named in ``text`` as a whole word or as a C/C++ source file stem
    (``fuse_bn_into_conv.h:87``), or as a file stem in ``locations`` (e.g. a traceback, whose
    words are code, not evidence), in list order without repeats."""
    stems = {m.group(1) for m in _LOCATION.finditer(text + "\n" + locations)}
    out = []
    for name in dict.fromkeys(passes):
        word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        if name in stems or word.search(text):
            out.append(name)
    return out


def plausible(target: str, passes: Sequence[str], present: Iterable[str]) -> list[str]:
    """The passes of ``passes`` (order and repeats kept) that can act given the op types
    ``present`` in the original and optimized graphs."""
    table = ANCHORS.get(target, {})
    have = set(present)
    return [p for p in passes if p not in table or table[p] is ANY or table[p] & have]


def changed_anchor_passes(target: str, passes: Sequence[str], before: set[str],
                          after: set[str]) -> list[str]:
    """Passes whose specific anchor op types vanished or appeared between ``before`` and
    ``after`` (op type sets), in list order, without repeats."""
    table = ANCHORS.get(target, {})
    moved = before ^ after
    return [p for p in dict.fromkeys(passes)
            if p in table and table[p] is not ANY and table[p] & moved]
