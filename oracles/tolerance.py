"""Output comparison with magnitude-scaled tolerances, NaN-aware (design.md, "Reference run").

An element passes when ``|actual - expected| <= atol * scale + rtol * |expected|`` where
``scale = max(1, max |expected|)`` over the finite values of that output. NaN in the same place
on both sides is equal; infinities must match exactly. NaN on one side against an infinity on
the other in the same place is an overflow on both sides (a folded constant of the largest
finite value overflows in another order: a BatchNormalization scale of FLT_MAX gives inf unfused
and inf * 0 = NaN fused), not a difference: floating-point rewrites reassociate, and neither
result is a number. Integer, bool and string outputs must be equal.

The tolerance is that of the least precise float type the model computes in
(:func:`computed_in`), not only of the output's dtype: a float32 graph whose last node casts to
float64 has float32 rounding in its double output (a fused kernel that rounds once where the
original rounded twice differs by one float32 ulp, 1.2e-7, far beyond float64's tolerance).

A caller may set the tolerance of one test (``optfuzz check --rtol/--atol``): the
:data:`TOLERANCE` entry of ``Outcome.extra``, ``{"rtol": float, "atol": float}`` (either
key), replaces the computed value of that key.

Outputs of sequence type (a list of arrays from onnxruntime) compare element by element
after their lengths; outputs of optional type are an array or None (empty), and an empty
optional equals only an empty one (:func:`compare_values`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.base import iter_graphs

#: dtype -> (rtol, atol) for floating outputs.
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-3, 1e-4),
    np.dtype(np.float64): (1e-7, 1e-9),
}
DEFAULT_TOLERANCE = (1e-2, 1e-2)  # bfloat16 and other low-precision floats
#: the ``Outcome.extra`` key of a test's own tolerance, ``{"rtol": float, "atol": float}``.
TOLERANCE = "tolerance"
#: how a difference of infinities that only the input model has ends its summary.
ONLY_INPUT_INFINITE = "where the optimized one is finite"


@dataclass
class Difference:
    """Why two arrays differ: ``kind`` is ``dtype``, ``shape``, ``nan`` or ``values``."""

    kind: str
    summary: str
    mismatched: int = 0
    max_abs_error: float = 0.0
    tolerance: float = 0.0


#: ONNX float element types, least precise first (bfloat16, float16, float32, float64).
_FLOAT_TYPES: tuple[tuple[int, np.dtype | None], ...] = (
    (16, None), (10, np.dtype(np.float16)), (1, np.dtype(np.float32)),
    (11, np.dtype(np.float64)))


def computed_in(model: Any) -> np.dtype | None:
    """The least precise float dtype ``model`` (``onnx.ModelProto``) holds anywhere, subgraphs
    included: graph inputs, outputs, value_info, initializers, Cast targets and tensor
    attributes. ``np.dtype(object)`` stands for bfloat16 (the default tolerance); None where
    the model names no float type."""
    seen: set[int] = set()
    for graph in iter_graphs(model.graph):
        for value in (*graph.input, *graph.output, *graph.value_info):
            seen.add(value.type.tensor_type.elem_type)
        seen.update(init.data_type for init in graph.initializer)
        for node in graph.node:
            for attr in node.attribute:
                if attr.name == "to" and node.op_type in ("Cast", "CastLike"):
                    seen.add(attr.i)
                elif attr.HasField("t"):
                    seen.add(attr.t.data_type)
    for code, dtype in _FLOAT_TYPES:
        if code in seen:
            return dtype if dtype is not None else np.dtype(object)
    return None


def compare_arrays(expected: np.ndarray, actual: np.ndarray,
                   precision: np.dtype | None = None,
                   tolerance: dict[str, float] | None = None) -> Difference | None:
    """Return ``None`` when ``actual`` matches ``expected`` within tolerance, else why not.
    ``precision``: the float dtype the model computes in (:func:`computed_in`); the tolerance
    is the looser of its and the output dtype's. ``tolerance``: ``rtol`` and/or ``atol`` that
    replace those (the caller's own, see :data:`TOLERANCE`)."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype:
        return Difference("dtype", f"dtype {expected.dtype} became {actual.dtype}")
    if expected.shape != actual.shape:
        return Difference("shape", f"shape {expected.shape} became {actual.shape}")
    if expected.dtype != object and expected.tobytes() == actual.tobytes():
        return None  # bitwise equal, the common case: nothing to measure
    if expected.dtype.kind != "f":
        bad = int(np.count_nonzero(expected != actual))
        if bad:
            gap = float(np.max(np.abs(expected.astype(np.float64) - actual.astype(np.float64)))) \
                if expected.dtype.kind in "iub" else 0.0
            return Difference("values", f"{bad} of {expected.size} values differ", bad, gap)
        return None
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    nan_e, nan_a = np.isnan(e), np.isnan(a)
    overflow = (nan_e & np.isinf(a)) | (nan_a & np.isinf(e))  # both sides overflow there
    if overflow.any():
        e, a = np.where(overflow, np.nan, e), np.where(overflow, np.nan, a)
        nan_e, nan_a = np.isnan(e), np.isnan(a)
    if not np.array_equal(nan_e, nan_a):
        bad = int(np.count_nonzero(nan_e != nan_a))
        return Difference("nan", f"NaN in {bad} places on one side only", bad)
    inf_e, inf_a = np.isinf(e), np.isinf(a)
    if not np.array_equal(np.where(inf_e, e, 0), np.where(inf_a, a, 0)):
        bad = int(np.count_nonzero((inf_e | inf_a) & (e != a)))
        if bad == int(np.count_nonzero(inf_e & np.isfinite(a))):
            return Difference("values", f"the input model's output is infinite in {bad} "
                              f"places {ONLY_INPUT_INFINITE}", bad)
        return Difference("values", f"infinities differ in {bad} places", bad)
    finite = np.isfinite(e) & np.isfinite(a)
    if not finite.any():
        return None
    rtol, atol = TOLERANCES.get(expected.dtype, DEFAULT_TOLERANCE)
    if precision is not None:
        looser = TOLERANCES.get(precision, DEFAULT_TOLERANCE)
        rtol, atol = max(rtol, looser[0]), max(atol, looser[1])
    if tolerance:
        rtol, atol = tolerance.get("rtol", rtol), tolerance.get("atol", atol)
    scale = max(1.0, float(np.max(np.abs(e[finite]))))
    err = np.abs(a[finite] - e[finite])
    allowed = atol * scale + rtol * np.abs(e[finite])
    over = err > allowed
    bad = int(np.count_nonzero(over))
    if not bad:
        return None
    max_err = float(err.max())
    return Difference("values", f"{bad} of {expected.size} values differ, max abs error "
                      f"{max_err:.3g} (tolerance {atol * scale:.3g})", bad, max_err,
                      atol * scale)


def compare_values(expected: Any, actual: Any, precision: np.dtype | None = None,
                   tolerance: dict[str, float] | None = None) -> Difference | None:
    """:func:`compare_arrays` for any output value onnxruntime returns: an array, a list of
    arrays (a sequence: lengths first, then element by element, the first difference
    named by its element's index) or None (an empty optional). A sequence against an array,
    a present optional against an empty one, or a length change is a ``shape`` difference.
    """
    if expected is None or actual is None:
        if expected is None and actual is None:
            return None
        return Difference("shape", "an empty optional became a value" if expected is None
                          else "a value became an empty optional")
    is_seq = isinstance(expected, list), isinstance(actual, list)
    if is_seq == (False, False):
        return compare_arrays(expected, actual, precision, tolerance)
    if is_seq != (True, True):
        return Difference("shape", "a sequence became a tensor" if is_seq[0]
                          else "a tensor became a sequence")
    if len(expected) != len(actual):
        return Difference("shape", f"sequence length {len(expected)} became {len(actual)}")
    for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
        diff = compare_values(e, a, precision, tolerance)
        if diff is not None:
            return Difference(diff.kind, f"element {index}: {diff.summary}", diff.mismatched,
                              diff.max_abs_error, diff.tolerance)
    return None


def value_dtype(value: Any) -> str:
    """The element type of an output value as text: an array's dtype, a sequence's
    first element's (``seq(<dtype>)``), ``none`` for an empty optional."""
    if value is None:
        return "none"
    if isinstance(value, list):
        return f"seq({value_dtype(value[0]) if value else 'empty'})"
    return str(np.asarray(value).dtype)
