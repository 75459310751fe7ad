"""Output comparison with magnitude-scaled tolerances, NaN-aware (design.md, "Reference run").

An element passes when ``|actual - expected| <= atol * scale + rtol * |expected|`` where
``scale = max(1, max |expected|)`` over the finite values of that output. NaN in the same place
on both sides is equal; infinities must match exactly. Integer, bool and string outputs must be
equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: dtype -> (rtol, atol) for floating outputs.
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-3, 1e-4),
    np.dtype(np.float64): (1e-7, 1e-9),
}
DEFAULT_TOLERANCE = (1e-2, 1e-2)  # bfloat16 and other low-precision floats


@dataclass
class Difference:
    """Why two arrays differ: ``kind`` is ``dtype``, ``shape``, ``nan`` or ``values``."""

    kind: str
    summary: str
    mismatched: int = 0
    max_abs_error: float = 0.0
    tolerance: float = 0.0


def compare_arrays(expected: np.ndarray, actual: np.ndarray) -> Difference | None:
    """Return ``None`` when ``actual`` matches ``expected`` within tolerance, else why not."""
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
            return Difference("values", f"{bad} of {expected.size} values differ", bad)
        return None
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    nan_e, nan_a = np.isnan(e), np.isnan(a)
    if not np.array_equal(nan_e, nan_a):
        bad = int(np.count_nonzero(nan_e != nan_a))
        return Difference("nan", f"NaN in {bad} places on one side only", bad)
    inf_e, inf_a = np.isinf(e), np.isinf(a)
    if not np.array_equal(np.where(inf_e, e, 0), np.where(inf_a, a, 0)):
        bad = int(np.count_nonzero((inf_e | inf_a) & (e != a)))
        if bad == int(np.count_nonzero(inf_e & np.isfinite(a))):
            return Difference("values", f"the input model's output is infinite in {bad} "
                              f"places where the optimized one is finite", bad)
        return Difference("values", f"infinities differ in {bad} places", bad)
    finite = np.isfinite(e) & np.isfinite(a)
    if not finite.any():
        return None
    rtol, atol = TOLERANCES.get(expected.dtype, DEFAULT_TOLERANCE)
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
