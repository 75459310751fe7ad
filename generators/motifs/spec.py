"""The motif record: a small graph pattern that gives one or more passes something to rewrite.

A motif has up to three hooks: ``setup`` runs on the empty builder (model-level choices such as
weight placement), ``emit`` consumes a pooled value like an op spec does and appends the
pattern, ``finish`` runs after the random graph is complete (e.g. duplicating initializers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from generators.builder import GraphBuilder
from generators.values import FLOAT, Value


@dataclass(frozen=True, slots=True)
class Motif:
    """One motif.

    Attributes:
        name: registry name (kebab-case), recorded in a case's provenance.
        passes: names of the passes the motif targets, in any target's naming (onnxoptimizer
            passes, onnxruntime graph transformers and rewrite rules); a target's motif hints
            select motifs by these names.
        emit: ``(builder, x) -> Value | None``; ``None`` (no side effects) when x does not fit.
        setup: ``(builder) -> None`` before generation, or ``None``.
        finish: ``(builder) -> None`` after generation, or ``None``.
        dtypes: element types ``x`` may have.
        ranks: inclusive (min, max) rank of ``x``.
        since: first opset the motif's form exists in.
        until: last opset (inclusive).
        v1: part of the first generator.
        anchors: the op types the pattern is built around (``Conv`` and
            ``BatchNormalization`` for Conv→BatchNormalization), whose schema features the
            generator varies pairwise (:mod:`generators.schema`); a contrib op is written
            ``domain::Op``. Empty: the motif's draws are not varied.
        nonfinite: the motif's result holds infinities by design (``1 / (x * -0)``: a
            rewrite that loses the sign of a zero flips them).
        pins: ``(factor key, levels, reason)`` triples: schema levels of an anchor op
            (``"Slice|in:steps"``) that the pattern itself fixes to ``levels``, with the
            reason; a plan asks for no other, and ``coverage --schema`` counts the pairs
            of the other levels as infeasible for that reason.
    """

    name: str
    passes: tuple[str, ...]
    emit: Callable[[GraphBuilder, Value], Value | None] | None = None
    setup: Callable[[GraphBuilder], None] | None = None
    finish: Callable[[GraphBuilder], None] | None = None
    dtypes: frozenset[int] = frozenset({FLOAT})
    ranks: tuple[int, int] = (1, 4)
    since: int = 7
    until: int = 99
    v1: bool = False
    anchors: tuple[str, ...] = ()
    nonfinite: bool = False
    pins: tuple[tuple[str, tuple[str, ...], str], ...] = ()

    def fits(self, dtype: int, rank: int) -> bool:
        """Whether ``emit`` may consume a value of ``dtype``/``rank``."""
        return dtype in self.dtypes and self.ranks[0] <= rank <= self.ranks[1]
