"""The "Expected" and "Actual" section of an issue draft: the behaviour the symptom violates,
and what happened; for output mismatches, the first values of each differing output from
the bundle's expected.npz and actual.npz."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import read_npz
from oracles import symptom as symptom_record

MAX_VALUES = 6


def _npz(path: Path) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    try:
        return read_npz(path)
    except (OSError, ValueError):  # a damaged file: the section goes without its table
        return None


def _values(array: np.ndarray) -> str:
    flat = np.asarray(array).ravel()
    shown = [f"{x:.5g}" if isinstance(x, (float, np.floating)) else str(x)
             for x in flat[:MAX_VALUES].tolist()]
    return "[" + ", ".join(shown) + (", ..." if flat.size > MAX_VALUES else "") + "]"


def output_table(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray]) -> str:
    """A markdown table, one row per output: name, dtype[shape] and the first values on
    each side, and the max abs error where both are numeric with equal shapes."""
    rows = ["| output | expected | actual | max abs error |", "| --- | --- | --- | --- |"]
    actual_list = list(actual.values())
    for index, (name, e) in enumerate(expected.items()):
        a = actual_list[index] if index < len(actual_list) else None
        error = "-"
        if a is not None and a.shape == e.shape and np.issubdtype(e.dtype, np.number) \
                and np.issubdtype(a.dtype, np.number) and e.size:
            with np.errstate(invalid="ignore"):
                error = f"{np.nanmax(np.abs(a.astype(np.float64) - e.astype(np.float64))):.4g}"
        right = "missing" if a is None else f"`{a.dtype}{list(a.shape)}` {_values(a)}"
        rows.append(f"| `{name}` | `{e.dtype}{list(e.shape)}` {_values(e)} | {right} | "
                    f"{error} |")
    return "\n".join(rows)


def expected_actual_section(meta: BundleMeta, folder: Path | None = None) -> str:
    """Markdown for "Expected" and "Actual" of a bundle; ``folder`` (the bundle) supplies
    expected.npz / actual.npz where they exist and are readable."""
    text = symptom_record(meta.symptom)
    parts = [f"**Expected:** {text.expected}\n",
             f"**Actual:** `{meta.symptom}` at stage `{meta.stage}`: "
             f"`{meta.message}`\n"]
    if folder is not None:
        expected, actual = _npz(folder / "expected.npz"), _npz(folder / "actual.npz")
        if expected and actual:
            parts.append(output_table(expected, actual) + "\n")
    return "\n".join(parts)
