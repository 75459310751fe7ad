"""The ladder target's motif family, registered through the ``optfuzz.motifs`` entry-point
group (see pyproject.toml): one Neg node, the first rung of the ladder
(:mod:`optfuzz_ladder_example.rewrite`).

Without it the generator's random ops make the runs alone, as they do for the ``fake``
target's ``ladder`` pass; but they make a run of two in about one model in a thousand, and
the models of a hint that no motif answers carry motifs drawn from the whole library, often
dozens of nodes, in which a mutation seldom repeats the Neg: guided campaigns of 1500 cases
stopped below a run of three on three seeds of six. With this family every model of the hint
holds one or two draws of it among a handful of random ops (a run of two where one reads
the other, in about one model in eight), so guidance climbs from there by repeating a Neg of
the run (the ``repeat-node`` mutator), while chance stops at three or four.
"""

from __future__ import annotations

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.values import Value


def _neg(b: GraphBuilder, x: Value) -> Value:
    return b.op("Neg", [x], x.dtype, x.shape)


MOTIFS = (Motif("neg-run", ("ladder",), emit=_neg),)
#: drawn only for a hint of ``ladder``: other targets' models stay as they were with this
#: package installed.
HINTED_ONLY = True
