"""Motifs that make a model long: a run of hundreds to thousands of alike blocks (a chain of
idempotent or no-op nodes, an Add of a constant, a Transpose pair), so that a pass whose time
grows superlinearly with the node count shows it (the ``slow`` symptom, :mod:`oracles.slow`).

Such a model costs a worker tenths of a second, and a suspicious one a scaling probe of
seconds, so the long form is rare: a drawn motif emits it with probability
:data:`LONG_RATE` and otherwise returns None (no side effects; the generator goes on as if
the motif did not fit). The run is what :mod:`fuzzer.modelio.repeat` scales: the same block,
each reading the one before it.
"""

from __future__ import annotations

from collections.abc import Callable

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.values import FLOAT, Value

#: chance that a drawn long-chain motif emits its run (1 in 10,000 draws: at 1 in 500, a
#: 3-minute campaign bundled five 'slow' root causes but ran at a tenth of its speed).
LONG_RATE = 0.0001
#: nodes of the run, drawn uniformly: onnxoptimizer's default passes take about 0.1 s at
#: 1,000 nodes and 0.4 s at 2,000 (a single run past 0.2 s is timed again at three sizes).
NODES = (1500, 3000)

#: ``(builder, input name, x, shared weights) -> output name``: one block, its nodes appended
#: unpooled (a later random op reading the middle of the run would make it unscalable).
Block = Callable[[GraphBuilder, str, Value, dict[str, Value]], str]


def _idempotent(b: GraphBuilder, name: str, x: Value, shared: dict[str, Value]) -> str:
    return b.node("Relu", [name])[0]


def _identity(b: GraphBuilder, name: str, x: Value, shared: dict[str, Value]) -> str:
    return b.node("Identity", [name])[0]


def _add_shared(b: GraphBuilder, name: str, x: Value, shared: dict[str, Value]) -> str:
    if "c" not in shared:
        shared["c"] = b.scalar(0.5, x.dtype)
    return b.node("Add", [name, shared["c"].name])[0]


def _transpose_pair(b: GraphBuilder, name: str, x: Value, shared: dict[str, Value]) -> str:
    perm = list(range(x.rank))[::-1]
    middle = b.node("Transpose", [name], perm=perm)[0]
    return b.node("Transpose", [middle], perm=perm)[0]


def _chain(block: Block, period: int) -> Callable[[GraphBuilder, Value], Value | None]:
    """An emitter of a run of ``block`` (``period`` nodes each, same shape and dtype in and
    out), long with :data:`LONG_RATE`, else None; only the run's last tensor is pooled."""

    def emit(b: GraphBuilder, x: Value) -> Value | None:
        if b.rng.random() >= LONG_RATE:
            return None
        shared: dict[str, Value] = {}
        name = x.name
        for _ in range(b.rng.randint(*NODES) // period):
            name = block(b, name, x, shared)
        return b.add(Value(name, x.dtype, x.shape, x.props))

    return emit


#: passes whose time on a long chain is worth watching (they walk every node; some rewrite
#: every block).
_CHAIN_PASSES = ("eliminate_consecutive_idempotent_ops", "eliminate_common_subexpression",
                 "eliminate_deadend", "eliminate_unused_initializer")

MOTIFS = (
    Motif("long-relu-chain", (*_CHAIN_PASSES,), emit=_chain(_idempotent, 1), ranks=(1, 4)),
    Motif("long-identity-chain", ("eliminate_identity", *_CHAIN_PASSES),
          emit=_chain(_identity, 1), ranks=(1, 4)),
    Motif("long-add-chain", ("fuse_add_bias_into_conv", *_CHAIN_PASSES),
          emit=_chain(_add_shared, 1), ranks=(1, 4), dtypes=frozenset({FLOAT})),
    Motif("long-transpose-chain", ("fuse_consecutive_transposes", "eliminate_nop_transpose",
                                   *_CHAIN_PASSES),
          emit=_chain(_transpose_pair, 2), ranks=(2, 4)),
)
