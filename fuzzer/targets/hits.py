"""Branch hits that a target written in Python reports itself (the planted-bug ``fake``
target): :func:`hit` at each branch it wants counted, in the process that runs it; a worker's
collector (:class:`fuzzer.edges.python_edges.PythonEdgeCollector`) takes and clears the counts
after every case, as :class:`fuzzer.edges.collector.GcovCollector` does for a gcov build."""

from __future__ import annotations

from collections import Counter

_hits: Counter[str] = Counter()


def hit(name: str) -> None:
    """Count one pass through the branch called ``name``."""
    _hits[name] += 1


def take_hits() -> dict[str, int]:
    """``{branch name: passes}`` counted in this process since the last call, then cleared
    (called with nothing counted, it forgets nothing and returns ``{}``)."""
    taken = dict(_hits)
    _hits.clear()
    return taken
