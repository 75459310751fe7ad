"""Node growth a rewriter documents: the ops a pass adds in place of what it rewrote, per the
pass's own source, judged from a bloat finding's op footprint (``detail["ops_added"]`` and
``["ops_removed"]``, :func:`oracles.bloat.op_changes`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from oracles import shows


@dataclass(frozen=True)
class Expansion:
    """What one pass documents adding.

    Attributes:
        removes: an op type the rewritten form must have lost ("" where the pass keeps the
            op it rewrites, e.g. an ArgMax rewritten into another ArgMax).
        adds: the op types it may add; None for any (an unrolled loop body).
    """

    removes: str
    adds: frozenset[str] | None


def documented_growth(finding: Any, passes: Iterable[str],
                      table: Mapping[str, Expansion]) -> bool:
    """Whether ``finding`` is node growth made only of what the named ``passes`` document
    adding (``table``: pass -> :class:`Expansion`), with no initializer left unused."""
    detail = finding.detail
    added = set(detail.get("ops_added") or ())
    if not shows(finding, "bloat") or not added or detail.get("unused_initializers"):
        return False
    removed = set(detail.get("ops_removed") or ())
    allowed: set[str] = set()
    for name in passes:
        expansion = table.get(name)
        if expansion is None or (expansion.removes and expansion.removes not in removed):
            continue
        if expansion.adds is None:
            return True
        allowed |= expansion.adds
    return added <= allowed
