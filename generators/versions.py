"""Opset and IR version pairs (the IR version that matches an opset, from onnx's VERSION_TABLE).

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
