"""Reading GCC's coverage counter files (``.gcda``), as GCC 12 and later write them.

A ``.gcda`` file is a sequence of 32-bit words in the machine's byte order: the magic
``"gcda"``, the GCC version, a stamp and a checksum, then records of ``tag, length, body``
(length in bytes). A function record (tag ``0x01000000``) names the function by its
``ident``; the arc-counter record that follows it (tag ``0x01a10000``) holds one 64-bit
counter per instrumented control-flow arc, or a negative length when every counter is zero.
The format is GCC's own (``gcc/gcov-io.h``, "Coverage file format"); no counter other than
arcs is read, since ``--coverage`` writes no other.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0x67636461  # "gcda"
TAG_FUNCTION = 0x01000000
TAG_ARCS = 0x01A10000
_HEADER_WORDS = 4  # magic, version, stamp, checksum


class GcdaError(ValueError):
    """The file is not a ``.gcda`` file this reader understands (wrong magic, cut short)."""


@dataclass(frozen=True)
class FunctionCounters:
    """The arc counters of one function.

    Attributes:
        ident: the function's id within its object file (GCC's ``ident``).
        cfg_checksum: checksum of its control-flow graph (changes with the code).
        arcs: one execution count per instrumented arc, in GCC's arc order.
    """

    ident: int
    cfg_checksum: int
    arcs: tuple[int, ...]


def read_gcda(data: bytes) -> list[FunctionCounters]:
    """Parse the bytes of one ``.gcda`` file into its functions' arc counters.

    Raises:
        GcdaError: not a ``.gcda`` file, or a record runs past the end.
    """
    if len(data) < 4 * _HEADER_WORDS:
        raise GcdaError("too short for a .gcda header")
    order = "<" if struct.unpack_from("<I", data)[0] == MAGIC else ">"
    if struct.unpack_from(order + "I", data)[0] != MAGIC:
        raise GcdaError("no gcda magic")
    out: list[FunctionCounters] = []
    ident = cfg = None
    for tag, body in _records(data, order):
        if tag == TAG_FUNCTION and len(body) >= 12:
            ident, _, cfg = struct.unpack_from(order + "3I", body)
        elif tag == TAG_FUNCTION:
            ident = cfg = None  # a function the object did not emit
        elif tag == TAG_ARCS and ident is not None:
            out.append(FunctionCounters(ident, cfg or 0, _counters(body, order)))
    return out


def _records(data: bytes, order: str) -> Iterator[tuple[int, bytes | int]]:
    """``(tag, body)`` per record; an all-zero counter record's body is its counter count."""
    pos = 4 * _HEADER_WORDS
    while pos + 8 <= len(data):
        tag, length = struct.unpack_from(order + "Ii", data, pos)
        pos += 8
        if length < 0:  # GCC writes only the size of a record whose counters are all zero
            yield tag, -length // 8
            continue
        if pos + length > len(data):
            raise GcdaError(f"record {tag:#010x} runs past the end of the file")
        yield tag, data[pos:pos + length]
        pos += length


def _counters(body: bytes | int, order: str) -> tuple[int, ...]:
    if isinstance(body, int):
        return (0,) * body
    # each 64-bit counter is written as two 32-bit words, low word first
    words = struct.unpack_from(f"{order}{len(body) // 4}I", body)
    return tuple(words[i] | (words[i + 1] << 32) for i in range(0, len(words) - 1, 2))


def read_gcda_file(path: Path) -> list[FunctionCounters]:
    """:func:`read_gcda` of a file.

    Raises:
        GcdaError: as :func:`read_gcda`; OSError: the file cannot be read.
    """
    return read_gcda(path.read_bytes())
