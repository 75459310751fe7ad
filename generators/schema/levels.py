"""Feature levels and the value tables behind them.

A *factor* is one thing an op's schema lets a node choose (its version, the element type of
one type constraint, one attribute, one optional input or output); a *level* is one class of
choices for it. Levels are classes, not values, so that a pairwise plan stays small and a
generated node can be classified by reading it:

==============  ======================================================================
factor          levels
==============  ======================================================================
``opset``       the op's version (``since_version``) in force, e.g. ``"11"``
``dtype:T``     an element type name of type constraint ``T`` (``"float16"``, ...)
``attr:a``      ``absent``; ``default`` (the schema's default value written out);
                ``nondefault`` (another ordinary value); ``edge`` (see below)
``in:x``        ``absent`` (not listed); ``empty`` (listed as ``""``); ``present``
``out:y``       ``absent`` (not listed or ``""``); ``unused`` (named, nothing reads it);
                ``consumed`` (a node reads it); ``output`` (a graph output)
==============  ======================================================================

Hand-written tables (everything else is read from ``onnx.defs``), each kept because a value
must be *valid*, which the schema does not say:

- :data:`FLAG_ATTRS`: INT attributes that are booleans (0 / 1): their other value is
  ``nondefault`` and they have no ``edge`` level.
- :data:`DTYPE_ATTRS`: attributes that name an element type (no factor: the type
  constraint they set is one).
- :data:`ENUM_VALUES`: the values a STRING attribute takes (the schema lists them only in
  prose); a STRING attribute has no ``edge`` level.
- :func:`is_edge` and :func:`candidates`: what counts as an edge value per attribute type
  (zero, negative, non-finite, denormal, huge, empty lists, negative axes) and the ordinary
  and edge values tried when a plan row asks for one. A candidate is used only where
  :mod:`generators.schema.apply` finds that the node keeps its output types and shapes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import AttributeProto, helper, numpy_helper

ABSENT = "absent"
DEFAULT = "default"
NONDEFAULT = "nondefault"
EDGE = "edge"
EMPTY = "empty"
PRESENT = "present"
UNUSED = "unused"
CONSUMED = "consumed"
OUTPUT = "output"
#: level of a factor the op has not at a row's version (never counted in a pair).
NA = "n/a"

INPUT_LEVELS = (ABSENT, EMPTY, PRESENT)
OUTPUT_LEVELS = (ABSENT, UNUSED, CONSUMED, OUTPUT)

#: INT attributes that hold a boolean (0 / 1), across ops.
FLAG_ATTRS = frozenset({
    "keepdims", "transA", "transB", "training_mode", "select_last_index",
    "noop_with_empty_axes", "ceil_mode", "count_include_pad", "exclusive", "reverse",
    "largest", "sorted", "allowzero", "detect_positive", "detect_negative", "upper",
    "storage_order", "spatial", "is_test", "center_point_box", "saturate", "layout",
    "interleaved", "is_causal", "linear_before_reset", "input_forget", "onesided",
    "normalized", "fmod", "new_axis", "exclude_outside", "antialias", "stash_type",
})

#: attributes whose value names an element type (Cast's ``to``): their level follows the
#: type constraint they set, so they are no factor of their own.
DTYPE_ATTRS = frozenset({"to", "dtype", "output_dtype"})

#: STRING attribute values: ``(op, attribute)`` first, then the attribute name alone.
ENUM_VALUES: dict[tuple[str, str] | str, tuple[str, ...]] = {
    "auto_pad": ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"),
    ("Pad", "mode"): ("constant", "reflect", "edge", "wrap"),
    ("Resize", "mode"): ("nearest", "linear", "cubic"),
    ("Upsample", "mode"): ("nearest", "linear"),
    "coordinate_transformation_mode": ("half_pixel", "asymmetric", "pytorch_half_pixel",
                                       "tf_crop_and_resize", "align_corners",
                                       "half_pixel_symmetric"),
    "nearest_mode": ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"),
    "keep_aspect_ratio_policy": ("stretch", "not_larger", "not_smaller"),
    "reduction": ("none", "add", "mul", "max", "min"),
    "direction": ("LEFT", "RIGHT"),
    "approximate": ("none", "tanh"),
}

#: smallest normal float32; non-zero values below it are denormals.
_TINY = float(np.finfo(np.float32).tiny)
#: a value at or beyond this magnitude counts as huge (it overflows float16 and, squared or
#: multiplied by a weight, float32).
HUGE = 1e30
#: integers at or beyond this magnitude count as huge (the INT_MAX sentinels of Slice ends).
HUGE_INT = 2**31 - 1


def enum_values(op: str, attr: str) -> tuple[str, ...]:
    """The values :data:`ENUM_VALUES` lists for STRING attribute ``attr`` of ``op`` (empty
    when it lists none)."""
    return ENUM_VALUES.get((op, attr)) or ENUM_VALUES.get(attr) or ()


def edge_float(v: float) -> bool:
    """Whether float ``v`` is an edge value: zero (either sign), negative, NaN, ±Inf, a
    float32 denormal, or of magnitude at least :data:`HUGE`."""
    return (not math.isfinite(v) or v <= 0.0 or abs(v) < _TINY or abs(v) >= HUGE)


def edge_int(v: int) -> bool:
    """Whether int ``v`` is an edge value: zero, negative, or of magnitude at least
    :data:`HUGE_INT`."""
    return v <= 0 or abs(v) >= HUGE_INT


def _tensor_edge(t: Any) -> bool:
    arr = numpy_helper.to_array(t)
    if arr.size == 0:
        return True
    if arr.dtype.kind == "V":  # bfloat16 and float 8 (ml_dtypes): by their float values
        arr = arr.astype(np.float32)
    if arr.dtype.kind == "f":
        return any(edge_float(float(v)) for v in arr.reshape(-1)[:64])
    if arr.dtype.kind in "iu":
        return any(edge_int(int(v)) for v in arr.reshape(-1)[:64])
    return False


def attr_value(a: AttributeProto) -> Any:
    """The Python value of ``a`` (``onnx.helper.get_attribute_value``)."""
    return helper.get_attribute_value(a)


def integer_type(name: str | None) -> bool:
    """Whether element type ``name`` (a ``dtype:`` level: ``"int8"``, ``"uint64"``, ...) is
    an integer type; False for None."""
    return (name or "").startswith(("int", "uint"))


def schema_default(spec: Any) -> AttributeProto | None:
    """The default an ONNX schema gives attribute ``spec`` (an ``OpSchema.Attribute``), or
    None where it gives none (onnx then holds an empty AttributeProto)."""
    d = spec.default_value
    return d if d is not None and d.type else None


def same_value(a: AttributeProto, b: AttributeProto) -> bool:
    """Whether two attributes hold the same value (NaN equal to NaN)."""
    if a.type != b.type:
        return False
    if a.type == AttributeProto.FLOAT:
        return a.f == b.f or (math.isnan(a.f) and math.isnan(b.f))
    if a.type == AttributeProto.TENSOR:
        x, y = numpy_helper.to_array(a.t), numpy_helper.to_array(b.t)
        return x.dtype == y.dtype and x.shape == y.shape and bool(
            np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
    return attr_value(a) == attr_value(b)


def classify(op: str, attr: AttributeProto | None, default: AttributeProto | None) -> str:
    """The level of one attribute of an ``op`` node: ``absent``, ``default``, ``edge`` or
    ``nondefault`` (see the module docstring)."""
    if attr is None:
        return ABSENT
    if default is not None and default.type and same_value(attr, default):
        return DEFAULT
    if attr.name in FLAG_ATTRS:
        return NONDEFAULT
    t = attr.type
    if t == AttributeProto.INT:
        return EDGE if edge_int(attr.i) else NONDEFAULT
    if t == AttributeProto.FLOAT:
        return EDGE if edge_float(attr.f) else NONDEFAULT
    if t == AttributeProto.INTS:
        vals = list(attr.ints)
        return EDGE if not vals or any(v < 0 or v >= HUGE_INT for v in vals) else NONDEFAULT
    if t == AttributeProto.FLOATS:
        vals = list(attr.floats)
        return EDGE if not vals or any(edge_float(v) for v in vals) else NONDEFAULT
    if t == AttributeProto.TENSOR:
        return EDGE if _tensor_edge(attr.t) else NONDEFAULT
    return NONDEFAULT


def attr_levels(op: str, name: str, attr_type: int, required: bool,
                has_default: bool) -> tuple[str, ...]:
    """The levels of attribute ``name`` of ``op`` (its ONNX ``attr_type``): ``absent`` unless
    required, ``default`` where the schema gives one, ``nondefault``, and ``edge`` for
    numeric non-flag attributes."""
    levels = [] if required else [ABSENT]
    if has_default:
        levels.append(DEFAULT)
    levels.append(NONDEFAULT)
    numeric = attr_type in (AttributeProto.INT, AttributeProto.FLOAT, AttributeProto.INTS,
                            AttributeProto.FLOATS, AttributeProto.TENSOR)
    if numeric and name not in FLAG_ATTRS:
        levels.append(EDGE)
    if attr_type == AttributeProto.STRING and has_default and len(enum_values(op, name)) < 2:
        levels.remove(NONDEFAULT)  # no other value known to be valid
    return tuple(levels)


#: ordinary FLOAT values tried for ``nondefault``.
FLOAT_ORDINARY = (0.5, 2.0, 1e-3, 0.25, 3.0)
#: FLOAT edge values tried for ``edge`` (the kinds of :func:`edge_float`).
FLOAT_EDGES = (0.0, -0.0, 1e-40, -1.0, 1e30, float("inf"), float("-inf"), float("nan"))
#: ordinary INT values tried for ``nondefault``.
INT_ORDINARY = (2, 1, 3, 4)
#: INT edge values tried for ``edge`` after the negative form of an axis (no huge value: a
#: count attribute such as Split's num_outputs would make shape inference allocate it).
INT_EDGES = (0, -1, -2)


#: ops whose ``axis`` attribute may equal the rank of their first input (it counts the
#: positions between axes: Flatten's ``[-r, r]``, OneHot's ``[-r-1, r]`` of its output);
#: every other op's ``axis`` names an axis of its first input (``[-r, r)``).
AXIS_UP_TO_RANK = frozenset({"Flatten", "OneHot"})


def has_axis(op: str, level: str, spec: Any, rank: int) -> bool:
    """Whether an input of rank ``rank`` has an axis of level ``level`` for ``op``'s
    ``axis`` attribute (its schema's ``spec``): some candidate of :func:`candidates` is
    one. A QuantizeLinear or Softmax-11, whose default axis is 1, has no non-default one
    below rank 3."""
    default = schema_default(spec)
    return bool(candidates(op, "axis", AttributeProto.INT, level, None,
                           attr_value(default) if default is not None else None, rank, None))


def candidates(op: str, name: str, attr_type: int, level: str, current: Any,
               default: Any, rank: int | None, rng: Any) -> list[Any]:
    """Values to try for attribute ``name`` of ``op`` at ``level`` (``nondefault`` or
    ``edge``), most promising first: for INT and INTS the negative form of an axis
    (``v - rank``) comes first as an edge, since it keeps the node's meaning.

    Args:
        op: op type.
        name: attribute name.
        attr_type: its ``AttributeProto`` type.
        level: ``nondefault`` or ``edge``.
        current: its value on the node, or None.
        default: the schema's default value, or None.
        rank: the rank of the node's first input, where known.
        rng: ``random.Random`` for the order of equally good candidates.

    Returns:
        A list of Python values (possibly empty: nothing known to try).
    """
    out: list[Any] = []
    if name in FLAG_ATTRS:
        if level == NONDEFAULT and attr_type == AttributeProto.INT:
            out = [1 - int(default if default is not None else (current or 0))]
        return out
    if attr_type == AttributeProto.INT:
        if level == EDGE:
            if isinstance(current, int) and current >= 0 and rank:
                out.append(current - rank)
            out += list(INT_EDGES)
        else:
            out += [v for v in INT_ORDINARY if v != default]
            if isinstance(current, int) and current < 0 and rank:
                out.insert(0, current + rank)
        if name == "axis" and rank:  # an axis of the input only (a kernel checks it even
            # where inference does not read it: a per-tensor QuantizeLinear's)
            top = rank + 1 if op in AXIS_UP_TO_RANK else rank
            out = [v for v in out if -top <= v < top]
    elif attr_type == AttributeProto.FLOAT:
        pool = list(FLOAT_EDGES if level == EDGE else FLOAT_ORDINARY)
        rng.shuffle(pool)
        out += [v for v in pool if v != default]
    elif attr_type == AttributeProto.INTS:
        cur = list(current) if current is not None else None
        if level == EDGE:
            if cur and rank:
                out.append([v - rank if v >= 0 else v for v in cur])
            out.append([])
        elif cur is None and rank:
            spatial = max(rank - 2, 1)
            out += [[1] * spatial, [0] * (2 * spatial), [1] * rank, list(range(rank))]
        elif cur:
            if rank and any(v < 0 for v in cur):
                out.append([v + rank if v < 0 else v for v in cur])
            out.append(list(reversed(cur)))
            out.append(cur)
        if name == "axes" and rank and op != "Unsqueeze":  # (Unsqueeze's count the output's)
            # axes of the input only, each once: the generic lists above are sizes
            out = [v for v in out if all(-rank <= a < rank for a in v)
                   and len({a % rank for a in v}) == len(v)]
    elif attr_type == AttributeProto.FLOATS:
        cur = list(current) if current else [1.0]
        if level == EDGE:
            out += [[0.0] * len(cur), [float("inf")] * len(cur), [float("nan")] * len(cur)]
        else:
            out += [[v * 2 for v in cur], [0.5] * len(cur)]
    elif attr_type == AttributeProto.STRING:
        cur = current.decode() if isinstance(current, bytes) else current
        dflt = default.decode() if isinstance(default, bytes) else default
        pool = [v for v in enum_values(op, name) if v != dflt]
        rng.shuffle(pool)
        out += [v for v in pool if v != cur] + [v for v in pool if v == cur]
    elif attr_type == AttributeProto.TENSOR:
        # without a value on the node, one of the type an absent value stands for
        # (ConstantOfShape: a one-element float tensor)
        arr = numpy_helper.to_array(current) if current is not None else \
            np.zeros((1,), np.float32)
        vals = FLOAT_EDGES if level == EDGE else (1.0, 2.0, 0.5)
        for v in vals if arr.dtype.kind in "biuf" else ():  # (a string tensor: none)
            try:
                with np.errstate(over="ignore", invalid="ignore"):  # an edge wraps: intended
                    out.append(numpy_helper.from_array(np.full(arr.shape, v).astype(arr.dtype)))
            except (ValueError, OverflowError):
                continue
    return out


def as_attribute(name: str, value: Any, attr_type: int) -> AttributeProto:
    """An AttributeProto of ``attr_type`` holding ``value`` (empty lists keep their type)."""
    if attr_type in (AttributeProto.INTS, AttributeProto.FLOATS) and not value:
        a = AttributeProto()
        a.name = name
        a.type = attr_type
        return a
    if attr_type == AttributeProto.FLOATS:
        return helper.make_attribute(name, [float(v) for v in value])
    if attr_type == AttributeProto.FLOAT:
        return helper.make_attribute(name, float(value))
    return helper.make_attribute(name, value)


def present_levels(seq: Sequence[str]) -> tuple[str, ...]:
    """``seq`` without duplicates, in order."""
    return tuple(dict.fromkeys(seq))
