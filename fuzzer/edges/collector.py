"""Per-case branch edges of a coverage build, read in the worker that ran the case.

After each case the worker asks libgcov to write its counters (``__gcov_dump``, exported
by the build under the name ``optfuzz_gcov_dump``) and to zero them (``__gcov_reset``).
libgcov adds the dumped counts to the ``.gcda`` files already on disk, so the files hold the
worker's running totals (what ``gcovr`` reads for line and branch coverage at the end) and a
case's own counts are the difference to the totals read after the case before it.

An *edge* is one instrumented arc of the control-flow graph (gcov's arc counters), named
``(object file, function ident, arc index)``; a case's edge *features* pair each edge it
took with AFL's hit-count bucket (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+), so that taking a
loop more often is new coverage too, as in AFL (Zalewski, "technical details").
"""

from __future__ import annotations

import ctypes
import os
import zlib
from collections.abc import Iterable
from pathlib import Path

from fuzzer.edges.gcda import GcdaError, read_gcda_file

#: exported aliases of libgcov's dump and reset (linker ``--defsym``; see fuzzer.builds).
DUMP_SYMBOL = "optfuzz_gcov_dump"
RESET_SYMBOL = "optfuzz_gcov_reset"
_BUCKETS = (1, 2, 3, 4, 8, 16, 32, 128)


def bucket(count: int) -> int:
    """AFL's hit-count bucket of ``count`` (> 0): 0 for 1 hit up to 7 for 128 and more."""
    return sum(1 for b in _BUCKETS[1:] if count >= b)


def edge_id(obj: str, ident: int, arc: int) -> int:
    """A stable 32-bit id of arc ``arc`` of function ``ident`` in object ``obj``."""
    return zlib.crc32(f"{obj}:{ident}:{arc}".encode())


def features(edges: dict[int, int]) -> frozenset[int]:
    """Edge features ``edge id * 8 + bucket`` of per-case hit counts ``{edge id: hits}``."""
    return frozenset(e * 8 + bucket(n) for e, n in edges.items() if n > 0)


class GcovCollector:
    """Reads one worker's per-case edge hit counts from a coverage build.

    Args:
        module_path: the build's extension module (already imported in this process).
        prefix: the folder this worker's ``.gcda`` files go to (``GCOV_PREFIX``).
        keep: object-file name suffixes whose counters count (``None``: all).

    Raises:
        OSError: the module cannot be opened; AttributeError: it does not export the dump
            and reset symbols (not an optfuzz coverage build).
    """

    def __init__(self, module_path: str, prefix: Path,
                 keep: Iterable[str] | None = None) -> None:
        lib = ctypes.CDLL(module_path)
        self._dump, self._reset = getattr(lib, DUMP_SYMBOL), getattr(lib, RESET_SYMBOL)
        prefix.mkdir(parents=True, exist_ok=True)
        os.environ["GCOV_PREFIX"] = str(prefix)
        self.prefix = prefix
        self.keep = tuple(keep) if keep is not None else None
        self._totals: dict[int, int] = {}
        self._reset()

    def start(self) -> None:
        """Forget counts made outside a case (call before the case runs)."""
        self.collect()

    def collect(self) -> dict[int, int]:
        """Write the counters, zero them, and return the hit counts since the last call:
        ``{edge id: hits}`` of the edges taken (hits > 0)."""
        self._dump()
        self._reset()
        delta: dict[int, int] = {}
        for path in self.prefix.rglob("*.gcda"):
            if self.keep is not None and not path.name.endswith(self.keep):
                continue
            try:
                functions = read_gcda_file(path)
            except (OSError, GcdaError):
                continue
            for fn in functions:
                for arc, total in enumerate(fn.arcs):
                    if not total:
                        continue
                    eid = edge_id(path.name, fn.ident, arc)
                    hits = total - self._totals.get(eid, 0)
                    if hits > 0:
                        delta[eid] = hits
                        self._totals[eid] = total
        return delta
