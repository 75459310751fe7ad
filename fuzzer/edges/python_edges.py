"""Branch edges that a target written in Python reports itself (the planted-bug ``fake``
target): ``hit(name)`` at each branch it wants counted; a worker reads and clears the counts
after every case, as :class:`fuzzer.edges.collector.GcovCollector` does for a gcov build."""

from __future__ import annotations

import zlib
from collections import Counter

_hits: Counter[str] = Counter()


def hit(name: str) -> None:
    """Count one pass through the branch called ``name``."""
    _hits[name] += 1


class PythonEdgeCollector:
    """Reads the counts :func:`hit` made in this process since the last call."""

    def start(self) -> None:
        """Forget counts made outside a case."""
        _hits.clear()

    def collect(self) -> dict[int, int]:
        """``{edge id: hits}`` since the last call (edge id: CRC-32 of the branch name)."""
        out = {zlib.crc32(name.encode()): n for name, n in _hits.items()}
        _hits.clear()
        return out
