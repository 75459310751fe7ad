"""What a pairwise plan is: its rows (:data:`Row`) and the plan of one motif
(:class:`MotifPlan`). :mod:`generators.schema.plan` builds plans; :mod:`generators.schema.apply`
makes a motif draw take one of their rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generators.schema.levels import NA
from generators.schema.space import OPSET, OpSpace, Pair

#: one plan row: ``"opset"`` -> first opset of an interval; ``"Op|factor"`` -> level.
Row = dict[str, str]
#: factor separator in joint row keys (``"Conv|attr:group"``).
SEP = "|"


def key(op: str, factor: str) -> str:
    """The joint row key of ``factor`` of anchor ``op``."""
    return f"{op}{SEP}{factor}"


@dataclass(frozen=True)
class MotifPlan:
    """The pairwise plan of one motif.

    Attributes:
        motif: motif name.
        opsets: inclusive opset range the plan covers (the motif's within the generator's).
        spaces: anchor op -> its :class:`~generators.schema.space.OpSpace` over ``opsets``.
        intervals: opset intervals of the ``opset`` factor (level ``str(lo)``).
        rows: the plan's rows.
        pairs: anchor op -> its feasible pairs (what ``coverage --schema`` counts).
        infeasible: anchor op -> {pair: reason} for pairs no valid model can hold.
        missing: anchor ops with no ONNX schema (contrib ops), with the reason.
        unplanned: anchor op -> {pair: reason} for feasible pairs no row holds (a motif of
            variants whose joint row over-constrains them; see
            :func:`generators.schema.plan.build_plan`).
    """

    motif: str
    opsets: tuple[int, int]
    spaces: dict[str, OpSpace]
    intervals: tuple[tuple[int, int], ...]
    rows: tuple[Row, ...]
    pairs: dict[str, frozenset[Pair]]
    infeasible: dict[str, dict[Pair, str]]
    missing: dict[str, str]
    unplanned: dict[str, dict[Pair, str]] = field(default_factory=dict)

    def interval(self, row: Row) -> tuple[int, int]:
        """The opset interval ``row`` asks for."""
        lo = int(row[OPSET])
        return next(iv for iv in self.intervals if iv[0] == lo)

    def op_row(self, row: Row, op: str) -> dict[str, str]:
        """``row``'s levels of anchor ``op``'s factors (``n/a`` left out)."""
        prefix = f"{op}{SEP}"
        return {k[len(prefix):]: v for k, v in row.items()
                if k.startswith(prefix) and v != NA}
