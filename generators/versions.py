"""Opset and IR version pairs (the IR version that matches an opset, from onnx's VERSION_TABLE),
and the pass hints by which a target pins a generated model's opset (and bounds its random
ops, for one rewrite at a time).

onnxruntime 1.31 reads IR versions up to 13, so :data:`MAX_IR` caps the table; onnx 1.23 would
write IR 14 by default.
"""

from __future__ import annotations

from onnx import helper

#: Highest IR version the reference runtime reads.
MAX_IR = 13
#: Lowest default-domain opset generated models declare.
MIN_OPSET = 7
#: Highest default-domain opset generated models declare.
MAX_OPSET = 21


#: Prefix of a pass hint that pins the opset of a generated model (``"opset=9"``): a target
#: whose configuration starts at an opset (the version converter) hints it.
OPSET_HINT = "opset="


def opset_hint(opset: int) -> str:
    """The pass hint that pins generated models to default-domain ``opset``."""
    return f"{OPSET_HINT}{opset}"


def hinted_opset(passes: tuple[str, ...] | list[str] | None) -> int | None:
    """The opset an :func:`opset_hint` among ``passes`` pins (the first one), else None."""
    for name in passes or ():
        if name.startswith(OPSET_HINT) and name[len(OPSET_HINT):].isdigit():
            return int(name[len(OPSET_HINT):])
    return None


#: Prefix of a pass hint that bounds the random ops around the motifs (``"steps=0..2"``): a
#: target that tests one rewrite at a time asks for graphs that hold little else.
STEPS_HINT = "steps="


def steps_hint(low: int, high: int) -> str:
    """The pass hint that draws between ``low`` and ``high`` random ops per model."""
    return f"{STEPS_HINT}{low}..{high}"


def hinted_steps(passes: tuple[str, ...] | list[str] | None) -> tuple[int, int] | None:
    """The ``(low, high)`` random ops a :func:`steps_hint` among ``passes`` asks for, else
    None."""
    for name in passes or ():
        low, sep, high = name[len(STEPS_HINT):].partition("..")
        if name.startswith(STEPS_HINT) and sep and low.isdigit() and high.isdigit():
            return int(low), int(high)
    return None


def _ir_table() -> dict[int, int]:
    table: dict[int, int] = {}
    for _release, ir, opset, *_rest in helper.VERSION_TABLE:
        for o in range(1, opset + 1):
            table.setdefault(o, ir)
    return table


_IR_FOR_OPSET = _ir_table()


def ir_version_for(opset: int) -> int:
    """The IR version of the first onnx release that supports default-domain ``opset``
    (e.g. 7 -> 3, 13 -> 7, 21 -> 10), capped at :data:`MAX_IR`.

    Raises:
        KeyError: an opset newer than the installed onnx knows.
    """
    return min(_IR_FOR_OPSET[opset], MAX_IR)
