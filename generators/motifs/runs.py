"""Runs of alike blocks: one shape-keeping motif's pattern repeated 4 to 8 times in a row.

Each repetition is drawn from the same random state, so the blocks are alike in the sense of
:mod:`fuzzer.modelio.repeat` (the same op types, attributes and relative wiring; initializers
of the same dtype and dims). A case that asks for the ``slow`` oracle's scaling probe
(``TestCase.growth_nodes``, one generated case in
:data:`fuzzer.campaign.stream.GROWTH_ONE_IN`) then times the target on the run grown to
thousands of blocks: a pass whose time grows superlinearly with the nodes it rewrites shows
on a model that stays small, and its bundle is that small model (the run scaled down to the
fewest blocks that still show the growth) with the timing table.
"""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.values import ALL, Value

#: the motifs a run repeats: patterns whose output may keep their input's type and shape
#: (a run ends early where one does not).
REPEATED: tuple[str, ...] = ("idempotent-pair", "nop-cast", "nop-transpose", "identity",
                             "op-with-unit", "transpose-chain", "nop-pad", "nop-concat",
                             "nop-dropout", "softmax-log", "nop-reshape", "nop-expand")
#: fewest and most blocks of a run (a run needs 4 to be found:
#: :data:`fuzzer.modelio.repeat.MIN_BLOCKS`).
BLOCKS = (4, 8)


def _block_run(b: GraphBuilder, x: Value) -> Value | None:
    from generators.motifs import MOTIFS

    names = [n for n in REPEATED if n in MOTIFS and MOTIFS[n].fits(x.dtype, x.rank)
             and MOTIFS[n].since <= b.opset <= MOTIFS[n].until and MOTIFS[n].emit]
    if not names:
        return None
    motif = MOTIFS[b.rng.choice(names)]
    count = b.rng.randint(*BLOCKS)
    state, pooled = b.rng.getstate(), len(b.pool)
    y = motif.emit(b, x)  # type: ignore[misc]
    for _ in range(count - 1):
        if y is None or y.shape != x.shape or y.dtype != x.dtype:
            break
        b.rng.setstate(state)  # the same choices: the next block is alike
        y = motif.emit(b, y) or y  # type: ignore[misc]
    if y is not None:  # later nodes read the last block only, as a run's blocks must
        del b.pool[pooled:]
        b.pool.append(y)
    return y


MOTIFS = (
    Motif("block-run", ("eliminate_consecutive_idempotent_ops", "eliminate_nop_cast",
                        "eliminate_nop_transpose", "eliminate_identity",
                        "eliminate_nop_with_unit", "fuse_consecutive_transposes",
                        "eliminate_nop_pad", "eliminate_nop_concat", "eliminate_nop_dropout",
                        "fuse_consecutive_log_softmax", "eliminate_nop_reshape",
                        "eliminate_nop_expand"),
          emit=_block_run, dtypes=frozenset(ALL), ranks=(1, 4)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 220
