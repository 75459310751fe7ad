"""What the schema allows but no valid model can hold: rules over one node's levels.

``onnx.defs`` lists each attribute, optional input and output on its own; it does not say
that BatchNormalization-14 has its running statistics outputs exactly in training mode, that
a Conv's strides must be positive, or that onnxruntime refuses ``auto_pad`` together with
``pads``. Each :class:`Rule` here is one such fact, written by hand from the operator's
documentation (https://onnx.ai/onnx/operators/) or onnxruntime's kernel checks, with the
sentence a report shows for the pairs it excludes. A plan never asks for a combination a
rule refuses, and ``coverage --schema`` counts the pairs a rule excludes as infeasible with
that sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from generators.schema.levels import ABSENT, DEFAULT, EDGE, NONDEFAULT, integer_type

#: levels of an optional output that name it.
_NAMED = frozenset({"unused", "consumed", "output"})


@dataclass(frozen=True)
class Rule:
    """One refused combination.

    Attributes:
        ops: op types the rule applies to.
        versions: inclusive range of the ops' versions (``since_version``) it applies to.
        refuses: ``(levels) -> bool`` on a possibly partial ``factor -> level`` assignment
            of one node: True only when the assigned levels alone are refused.
        reason: the sentence reported for what it refuses.
    """

    ops: frozenset[str]
    versions: tuple[int, int]
    refuses: Callable[[dict[str, str]], bool]
    reason: str


def _level_is(factor: str, *levels: str) -> Callable[[dict[str, str]], bool]:
    return lambda a: a.get(factor) in levels


def _bn_training(a: dict[str, str]) -> bool:
    mode = a.get("attr:training_mode")
    outs = [a.get(f) for f in ("out:running_mean", "out:running_var")]
    if mode in (ABSENT, DEFAULT) and any(o in _NAMED for o in outs):
        return True
    if mode == NONDEFAULT and any(o == ABSENT for o in outs):
        return True
    return False


def _all_or_none(*factors: str) -> Callable[[dict[str, str]], bool]:
    def refuses(a: dict[str, str]) -> bool:
        seen = {a[f] in _NAMED for f in factors if f in a}
        return len(seen) > 1
    return refuses


def _conv_auto_pad(a: dict[str, str]) -> bool:
    return a.get("attr:auto_pad") == NONDEFAULT and a.get("attr:pads") not in (None, ABSENT)


def _split_sizes(a: dict[str, str]) -> bool:
    given, count = a.get("in:split"), a.get("attr:num_outputs")
    if given is None or count is None:
        return False
    return (given == "present") == (count != ABSENT)


def _saturate_not_float8(a: dict[str, str]) -> bool:
    to = a.get("dtype:T2")
    return a.get("attr:saturate") not in (None, ABSENT) and to is not None and \
        not to.startswith("float8")


def _pad_int32_axes(a: dict[str, str]) -> bool:
    return a.get("dtype:Tind") == "int32" and a.get("in:axes") in (None, "present")


def _quantized_type_without_zero_point(a: dict[str, str]) -> bool:
    to = a.get("dtype:T2")
    return a.get("in:y_zero_point") in (ABSENT, "empty") and to is not None and \
        to != "uint8" and a.get("attr:output_dtype") in (None, ABSENT, DEFAULT)


def _nearest_with(attr: str) -> Callable[[dict[str, str]], bool]:
    """Resize's ``attr`` set while its mode is nearest (the default)."""
    return lambda a: a.get(attr) == NONDEFAULT and a.get("attr:mode") in (ABSENT, DEFAULT)


def _bfloat16_stash_with_statistics(a: dict[str, str]) -> bool:
    return a.get("attr:stash_type") == NONDEFAULT and any(
        a.get(f) in _NAMED for f in ("out:Mean", "out:InvStdDev"))


#: Constant's value attributes (from version 12) -> the element type its output then has
#: (None: the tensor's own).
CONSTANT_VALUES = {"value": None, "sparse_value": None, "value_float": "float",
                    "value_floats": "float", "value_int": "int64", "value_ints": "int64",
                    "value_string": "string", "value_strings": "string"}


def _one_constant_value(*names: str) -> Callable[[dict[str, str]], bool]:
    """Constant with more than one of its value attributes ``names`` set, with none where
    every one of them is assigned, or with one whose type is not the node's ``T``."""
    def refuses(a: dict[str, str]) -> bool:
        given = [n for n in names if a.get(f"attr:{n}") not in (None, ABSENT)]
        if len(given) > 1:
            return True
        if not given:
            return all(f"attr:{n}" in a for n in names)
        typed = CONSTANT_VALUES[given[0]]
        return typed is not None and a.get("dtype:T", typed) != typed
    return refuses


def _scales_xor_sizes(a: dict[str, str]) -> bool:
    scales, sizes = a.get("in:scales"), a.get("in:sizes")
    if scales is None or sizes is None:
        return False
    return (scales == "present") == (sizes == "present")


def _policy_with_scales(a: dict[str, str]) -> bool:
    return a.get("attr:keep_aspect_ratio_policy") == NONDEFAULT and \
        a.get("in:scales") == "present"


def _valueless_constant_of_shape(a: dict[str, str]) -> bool:
    return a.get("attr:value") == ABSENT and a.get("dtype:T2") not in (None, "float")


_CONV_LIKE = frozenset({"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"})
_POOLS = frozenset({"MaxPool", "AveragePool", "LpPool"})
_WINDOWED = _CONV_LIKE | _POOLS
_ANY = (1, 10_000)

#: every rule.
RULES: tuple[Rule, ...] = (
    Rule(frozenset({"BatchNormalization"}), (14, 10_000), _bn_training,
         "BatchNormalization-14+ has its running_mean and running_var outputs exactly in "
         "training mode (training_mode=1)"),
    Rule(frozenset({"BatchNormalization"}), (7, 13),
         _all_or_none("out:mean", "out:var", "out:saved_mean", "out:saved_var"),
         "BatchNormalization-7/9 has one output or all five"),
    Rule(frozenset({"BatchNormalization"}), (7, 8), _level_is("attr:spatial", NONDEFAULT),
         "BatchNormalization-7 with spatial=0 needs scale, B, mean and var of the input's "
         "shape without its batch dim: no attribute edit of a per-channel pattern gives it"),
    Rule(frozenset({"Constant"}), (12, 10_000), _one_constant_value(*CONSTANT_VALUES),
         "Constant takes exactly one of value, sparse_value and the value_* attributes, and "
         "a value_float(s), value_int(s) or value_string(s) makes float, int64 or string"),
    Rule(frozenset({"Constant"}), (11, 11), _one_constant_value("value", "sparse_value"),
         "Constant-11 takes exactly one of value and sparse_value"),
    Rule(frozenset({"Cast"}), (19, 10_000), _saturate_not_float8,
         "onnxruntime's Cast takes saturate only for a cast to a float 8 type"),
    Rule(frozenset({"ConstantOfShape"}), _ANY, _valueless_constant_of_shape,
         "ConstantOfShape without its value attribute makes float zeros"),
    Rule(frozenset({"ConstantOfShape"}), _ANY,
         lambda a: a.get("attr:value") == EDGE and a.get("dtype:T2") == "bool",
         "a bool value is never an edge value (a number that is zero, negative, huge or not "
         "finite: generators.schema.levels)"),
    Rule(frozenset({"Resize"}), (11, 10_000), _scales_xor_sizes,
         "Resize-11+ takes its output size from exactly one of its scales and sizes inputs"),
    Rule(frozenset({"Resize"}), (18, 10_000), _policy_with_scales,
         "Resize's keep_aspect_ratio_policy other than stretch needs sizes, not scales"),
    Rule(frozenset({"Optional"}), _ANY,
         lambda a: a.get("in:input") in (ABSENT, "empty") and a.get("attr:type") == ABSENT,
         "Optional takes its element type from its input or its type attribute: one of them "
         "is given"),
    Rule(frozenset({"Optional"}), _ANY, _level_is("in:input", "empty"),
         "onnx's inference and onnxruntime read Optional's empty-named input as an input "
         "without a type ('Input type is null'), its type attribute notwithstanding (onnx "
         "1.23, onnxruntime 1.32)"),
    Rule(frozenset({"Mod"}), _ANY,
         lambda a: a.get("dtype:T") in ("float", "double", "float16", "bfloat16") and
         a.get("attr:fmod") in (ABSENT, DEFAULT),
         "Mod of a floating point type needs fmod=1 (its operator docs; onnxruntime refuses "
         "the others)"),
    Rule(frozenset({"Upsample"}), _ANY, _level_is("attr:scales", EDGE),
         "Upsample's scales must each be 1 or more (its operator docs); an edge value (zero, "
         "negative, not finite, huge) gives the output no valid shape"),
    Rule(frozenset({"CastLike"}), (19, 10_000), _saturate_not_float8,
         "onnxruntime runs CastLike as a Cast, which takes saturate only for a cast to a "
         "float 8 type"),
    Rule(frozenset({"Split"}), (18, 10_000), _split_sizes,
         "Split-18 takes its sizes from exactly one of the split input and num_outputs"),
    Rule(frozenset({"Pad"}), (18, 10_000), _pad_int32_axes,
         "onnx's shape inference reads a constant Pad axes input as int64 only (ParseData "
         "type mismatch for int32), so no model with int32 axes passes the full check"),
    Rule(frozenset({"QuantizeLinear"}), _ANY, _quantized_type_without_zero_point,
         "QuantizeLinear without a y_zero_point makes uint8 unless its output_dtype (from "
         "opset 21) names another type: its output has the zero point's type"),
    Rule(frozenset({"Resize"}), _ANY, _nearest_with("attr:exclude_outside"),
         "onnxruntime's Resize takes exclude_outside=1 only in mode linear or cubic"),
    Rule(frozenset({"Resize"}), _ANY, _nearest_with("attr:antialias"),
         "onnxruntime's Resize antialiases only in mode linear or cubic"),
    Rule(frozenset({"Resize"}), (11, 17),
         lambda a: a.get("attr:exclude_outside") == NONDEFAULT and integer_type(a.get("dtype:T1")),
         "onnxruntime's Resize-11 takes exclude_outside only in mode cubic, which it runs "
         "on float data only"),
    Rule(frozenset({"Resize"}), (18, 10_000),
         lambda a: a.get("attr:exclude_outside") == NONDEFAULT and integer_type(a.get("dtype:T1"))
         and a.get("attr:antialias") in (ABSENT, DEFAULT),
         "onnxruntime's Resize takes exclude_outside only in mode cubic, which it runs on "
         "float data only, or in mode linear with antialias"),
    Rule(frozenset({"LayerNormalization"}), (17, 10_000), _bfloat16_stash_with_statistics,
         "onnxruntime runs a LayerNormalization whose stash_type is bfloat16 and whose Mean "
         "or InvStdDev output is named through the op's function, and that function's "
         "ReduceMean has no bfloat16 kernel"),
    Rule(frozenset({"Transpose"}), _ANY, _level_is("attr:perm", EDGE),
         "perm must list every axis once, none negative (onnxruntime refuses others)"),
    Rule(frozenset({"Squeeze", "Unsqueeze"}), (1, 10), _level_is("attr:axes", EDGE),
         "Squeeze-1 and Unsqueeze-1 take non-negative axes only (negative ones from version "
         "11); an empty axes list, the one edge value left, makes the node a no-op to onnx's "
         "shape inference, while onnxruntime's Squeeze-1 removes every unit axis with it"),
    Rule(frozenset({"Slice"}), (1, 9), _level_is("attr:axes", EDGE),
         "Slice-1 takes non-negative axes only (negative ones from Slice-11: onnx's shape "
         "inference of Slice-1 gives no shape with one), and an empty axes list needs empty "
         "starts and ends, which onnx refuses"),
    Rule(frozenset({"Squeeze", "Unsqueeze"}), (13, 10_000), _level_is("in:axes", "empty"),
         "onnxruntime's Squeeze and Unsqueeze read an empty-named axes input and fail"),
    Rule(_WINDOWED, _ANY, _conv_auto_pad,
         "onnxruntime refuses auto_pad other than NOTSET together with pads"),
    Rule(_WINDOWED, _ANY, _level_is("attr:kernel_shape", EDGE),
         "kernel_shape must hold one positive size per spatial axis"),
    Rule(_WINDOWED, _ANY, _level_is("attr:strides", EDGE),
         "strides must hold one positive stride per spatial axis"),
    Rule(_WINDOWED, _ANY, _level_is("attr:dilations", EDGE),
         "dilations must hold one positive dilation per spatial axis"),
    Rule(_WINDOWED, _ANY, _level_is("attr:pads", EDGE),
         "pads must hold two non-negative pads per spatial axis"),
    Rule(_CONV_LIKE, _ANY, _level_is("attr:group", EDGE),
         "group must be a positive divisor of the input channels"),
    Rule(frozenset({"Split"}), (1, 17), _level_is("attr:split", EDGE),
         "Split's split attribute holds one non-negative size per output (an edge list is "
         "empty, negative or huge: onnx refuses each)"),
    Rule(frozenset({"Split"}), (18, 10_000), _level_is("attr:num_outputs", EDGE),
         "num_outputs must be positive (one output or more)"),
    Rule(frozenset({"QuantizeLinear", "DequantizeLinear"}), _ANY,
         _level_is("attr:block_size", EDGE),
         "block_size must be non-negative (onnxruntime refuses others)"),
    Rule(frozenset({"ConvTranspose"}), _ANY, _level_is("attr:output_shape", EDGE),
         "output_shape must hold one positive size per spatial axis"),
    Rule(frozenset({"ConvTranspose"}), _ANY, _level_is("attr:output_padding", EDGE),
         "output_padding must hold one non-negative padding (below the stride) per "
         "spatial axis"),
)


def refusal(op: str, version: int, levels: dict[str, str]) -> str | None:
    """The reason of the first rule that refuses ``levels`` of an ``op`` node of version
    ``version`` (None: no rule does)."""
    for r in RULES:
        if op in r.ops and r.versions[0] <= version <= r.versions[1] and r.refuses(levels):
            return r.reason
    return None
