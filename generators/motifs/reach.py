"""Passes no generated graph can make change, with the reason (shown by ``optfuzz coverage``)."""

from __future__ import annotations

#: pass name -> why no input graph makes it change anything.
UNREACHABLE: dict[str, str] = {
    "nop": "does nothing by design (returns the graph unchanged)",
}
