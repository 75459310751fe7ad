"""How large a wrong output's difference is: the max and mean absolute difference between
the input model's and the optimized model's values of one output, over the places where
both are finite (:func:`error_size`, from the outputs of a run or the bundle's expected.npz
/ actual.npz); where there are none, the max the oracle's message recorded
(``max abs error 0.5``, :func:`recorded_line`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from fuzzer.report.markdown import code_span

_RECORDED_MAX = re.compile(r"max abs error (?P<value>[-+0-9.eE]+|nan|inf)")
_OUTPUT = re.compile(r"^output \d+ '(?P<name>[^']*)'")


@dataclass(frozen=True)
class ErrorSize:
    """The size of one output's difference.

    Attributes:
        max: the largest absolute difference (in the output's units).
        mean: the mean absolute difference.
        values: how many places it was taken over (both sides finite).
        one_sided_nan: places where one side only is NaN (counted apart).
    """

    max: float
    mean: float
    values: int
    one_sided_nan: int = 0


def error_size(expected: np.ndarray, actual: np.ndarray) -> ErrorSize | None:
    """The :class:`ErrorSize` of two arrays of one output, None where they cannot be
    compared place by place (another shape, a non-numeric type, no element)."""
    if expected.shape != actual.shape or not expected.size or not (
            np.issubdtype(expected.dtype, np.number) or expected.dtype == bool) or not (
            np.issubdtype(actual.dtype, np.number) or actual.dtype == bool):
        return None
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    one_sided = int(np.count_nonzero(np.isnan(e) != np.isnan(a)))
    finite = np.isfinite(e) & np.isfinite(a)
    gap = np.abs(a[finite] - e[finite])
    if not gap.size:
        return ErrorSize(float("nan"), float("nan"), 0, one_sided)
    return ErrorSize(float(gap.max()), float(gap.mean()), int(gap.size), one_sided)


def recorded_max(message: str) -> float | None:
    """The max abs error an output-mismatch message records, else None."""
    found = _RECORDED_MAX.search(message)
    return float(found.group("value")) if found else None


def recorded_line(message: str) -> str | None:
    """The difference an output-mismatch ``message`` records, for a report without the
    outputs themselves: ``Difference of `y`: max abs 0.5 (as recorded; the mean was
    not).``; None where it records no size."""
    recorded = recorded_max(message)
    if recorded is None:
        return None
    output = _OUTPUT.match(message)
    where = f" of {code_span(output.group('name'))}" if output else ""
    return f"Difference{where}: max abs {recorded:.4g} (as recorded; the mean was not)."
