"""Per-node progress of a cluster campaign: cases and cases/s of each Ray node, and the cases
lost with an actor that died."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.table import Table


@dataclass
class NodeStats:
    """Cases of each node in this run.

    Attributes:
        cases: node id -> cases run in this run.
        busy: node id -> seconds its actors spent on ranges in this run.
        address: node id -> IP address.
        lost_cases: cases whose actor died before returning them (this run).
        lost_ranges: ranges lost that way (each is run again once).
        actor_deaths: actor failures seen (Ray restarts the actor).
    """

    cases: dict[str, int] = field(default_factory=dict)
    busy: dict[str, float] = field(default_factory=dict)
    address: dict[str, str] = field(default_factory=dict)
    lost_cases: int = 0
    lost_ranges: int = 0
    actor_deaths: int = 0

    def add(self, node: str, address: str, cases: int, seconds: float) -> None:
        """Count a range of ``cases`` that took ``seconds`` on ``node``."""
        self.cases[node] = self.cases.get(node, 0) + cases
        self.busy[node] = self.busy.get(node, 0.0) + seconds
        self.address[node] = address

    def lose(self, cases: int) -> None:
        """Count a range of ``cases`` lost with its actor."""
        self.lost_cases += cases
        self.lost_ranges += 1
        self.actor_deaths += 1

    def to_json(self, run_seconds: float) -> dict[str, Any]:
        """JSON-able: per node its address, cases and cases/s over ``run_seconds``."""
        return {"nodes": {node: {"address": self.address[node], "cases": count,
                                 "cases_per_s": round(count / max(run_seconds, 1e-9), 1)}
                          for node, count in sorted(self.cases.items())},
                "lost_cases": self.lost_cases, "lost_ranges": self.lost_ranges}

    def table(self, run_seconds: float, actors: int) -> Table:
        """The live display's node table."""
        table = Table(title=f"Ray nodes ({actors} case actors; lost cases "
                            f"{self.lost_cases})", show_edge=False)
        for column in ("node", "address", "cases", "cases/s"):
            table.add_column(column, justify="left" if column in ("node", "address")
                             else "right")
        for node, count in sorted(self.cases.items()):
            table.add_row(node[:12], self.address[node], str(count),
                          f"{count / max(run_seconds, 1e-9):,.0f}")
        return table
