"""The rewrite rules of onnxscript's optimizer and rewriter, by name.

A rule set (:data:`RULE_SETS`) is what the optimizer's ``RewritePass`` runs:

- ``default``: ``onnxscript.rewriter._DEFAULT_REWRITE_RULES``, the rules
  ``onnxscript.optimizer.optimize`` (``optimize_ir``) runs;
- ``common``: those and every other rule ``onnxscript.rewriter.rules.common`` exports (the
  opt-in ones: HardSwish fusion, MatMul + Add to Gemm and back, Expand before a binary op,
  Conv affine fusions), as a user passes them to ``onnxscript.rewriter.rewrite``;
- ``ort_fusions``: not a rule list but the one step
  ``onnxscript.rewriter.ort_fusions.optimize_for_ort`` (exported there), which runs
  ``optimize`` around the onnxruntime transformer fusions (Gelu, layer and RMS
  normalization, attention, rotary embedding ...) and its own pattern rules (Softmax,
  FusedMatMul, group normalization), emitting ``com.microsoft`` ops.

Each rule goes by its own name (``RewriteRule.name``: ``FuseBatchNormIntoConv``,
``CastCast`` ...); a rule without one goes by the name ``onnxscript.rewriter.rules.common``
exports it under (``mul_by_1_rule``, ``collapse_slice_rule`` ...). The commuted variants of a
rule (``RewriteRule.commute()``) share its name, so one name may stand for several rule
objects. Read from onnxscript 0.7.2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from fuzzer.registry import Registry

#: rule set name -> what it holds (the configuration space of the onnxscript target).
RULE_SETS: Registry[str] = Registry("rule set", {
    "default": "onnxscript.rewriter._DEFAULT_REWRITE_RULES (what optimize() runs)",
    "common": "the default rules and every other rule of onnxscript.rewriter.rules.common",
    "ort_fusions": "onnxscript.rewriter.ort_fusions.optimize_for_ort (optimize() around the "
                   "onnxruntime transformer fusions and pattern rules), run as one step",
})
#: the rule set run as one step, ``onnxscript.rewriter.ort_fusions.optimize_for_ort``.
ORT_FUSIONS = "ort_fusions"
#: its step name.
ORT_STEP = "optimize_for_ort"
#: passes of the onnxruntime targets whose motifs build what ``optimize_for_ort``'s fusions
#: match: Gelu forms, layer and RMS normalization with and without a skip, attention,
#: FusedMatMul's scaled and transposed MatMuls, Softmax.
ORT_FUSION_DONORS = ("enable_gelu", "enable_bias_gelu", "enable_skip_layer_norm",
                     "enable_embed_layer_norm", "enable_attention", "FastGeluFusion",
                     "SimplifiedLayerNormFusion", "MatMulScaleFusion", "BiasSoftmaxFusion",
                     "MatmulTransposeFusion")


@dataclass(frozen=True)
class NamedRule:
    """One rule name and the rule objects it stands for.

    Attributes:
        name: the rule's own name (see the module docstring).
        rules: the ``RewriteRule`` objects (a rule and its commuted variants).
        anchors: op types of the rule's target pattern (each must be present for it to act).
    """

    name: str
    rules: tuple[Any, ...]
    anchors: frozenset[str]


def _flatten(obj: Any) -> list[Any]:
    """The RewriteRule objects of an export of ``onnxscript.rewriter.rules.common``: a rule,
    a RewriteRuleSet, a sequence of them, or a function without arguments returning one."""
    from onnxscript.rewriter._rewrite_rule import RewriteRule, RewriteRuleSet

    if isinstance(obj, RewriteRule):
        return [obj]
    if isinstance(obj, RewriteRuleSet):
        return list(obj.rules)
    if isinstance(obj, list | tuple):
        return [rule for item in obj for rule in _flatten(item)]
    if isinstance(obj, Callable):
        return _flatten(obj())
    return []


@lru_cache(maxsize=1)
def _exports() -> tuple[dict[int, str], list[tuple[str, Any]]]:
    """``(replacement pattern id -> exported name, [(exported name, rule)])`` of
    ``onnxscript.rewriter.rules.common`` (commuted variants share the replacement pattern
    object of the rule they come from)."""
    from onnxscript.rewriter.rules import common

    by_replacement: dict[int, str] = {}
    exported: list[tuple[str, Any]] = []
    for variable in common.__all__:
        for rule in _flatten(getattr(common, variable)):
            by_replacement.setdefault(id(rule._replacement_pattern), variable)
            exported.append((variable, rule))
    return by_replacement, exported


def rule_name(rule: Any) -> str:
    """The name of ``rule`` (a ``RewriteRule``): its own, else the name
    ``onnxscript.rewriter.rules.common`` exports it (or the rule it was commuted from)
    under, else ``"<replacement function>"``."""
    if rule.name:
        return str(rule.name)
    by_replacement, _ = _exports()
    found = by_replacement.get(id(rule._replacement_pattern))
    if found:
        return found
    function = getattr(rule._replacement_pattern, "_function", None)
    return f"<{getattr(function, '__name__', 'rule')}>"


def _anchors(rules: list[Any]) -> frozenset[str]:
    ops: set[str] = set()
    for rule in rules:
        for node in getattr(rule._target_pattern, "_nodes", ()):
            identifier = node.op_identifier()
            if identifier is not None and identifier[1]:
                ops.add(identifier[1])
    return frozenset(ops)


def _group(rules: list[Any]) -> tuple[NamedRule, ...]:
    """Rules by name, in the order of first appearance."""
    names: dict[str, list[Any]] = {}
    for rule in rules:
        names.setdefault(rule_name(rule), []).append(rule)
    return tuple(NamedRule(name, tuple(group), _anchors(group)) for name, group in names.items())


@cache
def rule_set(name: str) -> tuple[NamedRule, ...]:
    """The named rules of rule set ``name`` (:data:`RULE_SETS`), in the order the
    ``RewritePass`` tries them (none for :data:`ORT_FUSIONS`, which runs as one step).

    Raises:
        UnknownName: a ``KeyError``: an unknown rule set.
    """
    from onnxscript import rewriter

    if name not in RULE_SETS:
        raise RULE_SETS.unknown(name)
    if name == ORT_FUSIONS:  # one step of its own, no RewritePass of named rules
        return ()
    default = list(rewriter._DEFAULT_REWRITE_RULES)
    if name == "default":
        return _group(default)
    known = {rule_name(rule) for rule in default}
    _, exported = _exports()
    extra = [rule for variable, rule in exported if rule_name(rule) not in known]
    return _group(default + extra)


#: rule or step name -> passes of other targets whose motifs build what it rewrites (pattern
#: donors across tools, as MirrorFuzz, arXiv 2510.15690, replays a trigger against analogous
#: passes); the ``onnxscript`` and ``functions`` motif families name the rest.
DONORS: dict[str, tuple[str, ...]] = {
    "mul_by_1_rule": ("eliminate_nop_with_unit",),
    "add_0_rule": ("eliminate_nop_with_unit",),
    "sub_0_rule": ("eliminate_nop_with_unit",),
    "div_by_1_rule": ("eliminate_nop_with_unit",),
    "dropout_zero_rule": ("eliminate_nop_dropout", "EliminateDropout"),
    "dropout_inference_rule": ("eliminate_nop_dropout", "EliminateDropout"),
    "CastIdentity": ("eliminate_nop_cast",),
    "CastCast": ("CastElimination",),
    "ExpandIdentity": ("eliminate_nop_expand", "ExpandElimination"),
    "Flatten2Reshape": ("eliminate_nop_flatten",),
    "ReshapeReshape": ("eliminate_nop_reshape", "fuse_concat_into_reshape"),
    "TransposeIdentity": ("eliminate_nop_transpose",),
    "TransposeTranspose": ("fuse_consecutive_transposes",),
    "UnsqueezeUnsqueeze": ("fuse_consecutive_unsqueezes",),
    "collapse_slice_rule": ("EliminateSlice",),
    "collapse_slice2_rule": ("EliminateSlice",),
    "MaterializeReshapeShape": ("ReshapeFusion", "fuse_concat_into_reshape"),
    "NormalizePadFormatConv": ("fuse_pad_into_conv",),
    "FuseConvPad": ("fuse_pad_into_conv", "Pad_Fusion"),
    "FuseBatchNormIntoConv": ("fuse_bn_into_conv", "ConvBNFusion"),
    "FuseBatchNormIntoGemm": ("MatMul_BatchNormalization_Fusion",),
    "FuseSuccessiveReluClip": ("FuseReluClip",),
    "FuseSuccessiveClipRelu": ("FuseReluClip",),
    "RemoveOptionalBiasFromQLinearConv": ("NhwcTransformer",),
    "MatMulAddToGemm": ("fuse_matmul_add_bias_into_gemm", "MatMulAddFusion"),
    "TransBMatMulAddToGemm": ("GemmTransposeFusion",),
    "FoldConstantsPass": ("ConstantFolding", "eliminate_shape_op", "eliminate_shape_gather",
                          "eliminate_if_with_const_cond"),
    "RemoveUnusedNodesPass": ("eliminate_deadend", "eliminate_unused_initializer"),
    "LiftConstantsToInitializersPass": ("extract_constant_to_initializer",),
    "LiftSubgraphInitializersToMainGraphPass": ("lift_lexical_references",
                                                "eliminate_if_with_const_cond"),
    "DeduplicateInitializersPass": ("eliminate_duplicate_initializer",),
    "CommonSubexpressionEliminationPass": ("eliminate_common_subexpression",
                                           "CommonSubexpressionElimination"),
    "OutputFixPass": ("rename_input_output",),
}
