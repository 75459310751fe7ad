"""Branch edges that a target written in Python reports itself (the planted-bug ``fake``
target, through :func:`fuzzer.targets.hits.hit`): a worker reads and clears the counts after
every case, as :class:`fuzzer.edges.collector.GcovCollector` does for a gcov build."""

from __future__ import annotations

import zlib

from fuzzer.targets.hits import take_hits


class PythonEdgeCollector:
    """Reads the counts :func:`fuzzer.targets.hits.hit` made in this process since the last
    call."""

    def start(self) -> None:
        """Forget counts made outside a case."""
        take_hits()

    def collect(self) -> dict[int, int]:
        """``{edge id: hits}`` since the last call (edge id: CRC-32 of the branch name)."""
        return {zlib.crc32(name.encode()): n for name, n in take_hits().items()}
