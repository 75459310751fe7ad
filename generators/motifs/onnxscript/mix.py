"""Motifs that mix the draws of other motifs, picked at random per draw, the next on the
previous result where shapes allow, so that one region of the graph holds several patterns
of one onnxscript step next to one another (and its rewrites meet one another's results):

- ``os-rules-mix``: the motifs of :mod:`generators.motifs.onnxscript.rules` and
  :mod:`generators.motifs.onnxscript.checks` for the rules ``onnxscript.optimizer.optimize``
  runs (its default rule set), patterns and near misses;
- ``os-ort-attention``, ``os-ort-encoder``, ``os-ort-rotary``: the transformer blocks of
  :mod:`generators.motifs.onnxruntime_transformers` whose patterns
  ``onnxscript.rewriter.ort_fusions.optimize_for_ort`` fuses (scaled dot-product attention
  in its BERT, SDPA and multi-form layouts; the encoder attention of BART, CLIP and T5;
  rotary embeddings, the Llama attention around them and the embedding layer norm).
"""

from __future__ import annotations

from collections.abc import Iterable

from generators.builder import GraphBuilder
from generators.motifs.helpers import FLOAT_INPUT, Emit, ort_motif
from generators.motifs.onnxruntime_transformers import attention, blocks, rotary
from generators.motifs.onnxscript import checks, rules
from generators.motifs.onnxscript.fold import repeat
from generators.motifs.spec import Motif
from generators.values import Value

#: the one step of the ``ort_fusions`` rule set (``fuzzer.targets.onnxscript.rules.ORT_STEP``).
_ORT_STEP = "optimize_for_ort"

def _parts(motifs: Iterable[Motif], names: set[str]) -> tuple[Motif, ...]:
    """The motifs of ``motifs`` named in ``names``, in their order."""
    return tuple(m for m in motifs if m.name in names)


def mix(parts: tuple[Motif, ...]) -> Emit:
    """An emitter of the draw of one motif of ``parts`` that exists at the builder's opset
    and takes ``x`` (its dtype and rank), or of None where none does."""

    def emit(b: GraphBuilder, x: Value) -> Value | None:
        fits = [m for m in parts if m.since <= b.opset <= m.until and m.fits(x.dtype, x.rank)]
        return b.rng.choice(fits).emit(b, x) if fits else None

    return emit


#: motifs of the default rule set's rules.
_RULES = _parts((*rules.MOTIFS, *checks.MOTIFS), {
    "os-min-max", "os-relu-clip", "os-cast-chain", "os-constant-of-shape-cast",
    "os-reshape-matmul", "os-reshape-chain", "os-slices-split", "os-collapse-slice",
    "os-squeeze-reshape", "os-flatten", "os-scatter-all", "os-gemm-bn",
    "os-conv-transpose-bn", "os-zero-bias", "os-unit-operand", "os-scatter-forms",
    "os-conv-integer", "os-reshape-zeros", "os-reshape-symbolic", "os-clip-bounds",
    "os-bn-checks", "os-conv-auto-pad", "os-qlinear-conv-zero-bias", "os-unsqueeze-pair",
    "os-symbolic-shapes", "os-unknown-shapes", "os-conv-pad-checks"})
_TRANSFORMERS = (*blocks.MOTIFS, *attention.MOTIFS, *rotary.MOTIFS)
#: attention blocks (3-D float input, opset 11+).
_ATTENTION = _parts(_TRANSFORMERS, {"tb-attention-sdpa", "tb-attention-forms",
                                    "tb-bert-attention"})
_ENCODER = _parts(_TRANSFORMERS, {"tb-bart-encoder", "tb-clip-attention", "tb-t5-attention"})
#: rotary embeddings and the blocks around them (opset 13+ but the embedding layer norm).
_ROTARY = _parts(_TRANSFORMERS, {"tb-llama-attention", "tb-rotary", "tb-embed-layer-norm"})


MOTIFS = (
    ort_motif("os-rules-mix", tuple(dict.fromkeys(p for m in _RULES for p in m.passes)),
              repeat(mix(_RULES), 4)),
    ort_motif("os-ort-attention", (_ORT_STEP,), repeat(mix(_ATTENTION), 2),
              dtypes=FLOAT_INPUT, ranks=(3, 3), since=11),
    ort_motif("os-ort-encoder", (_ORT_STEP,), repeat(mix(_ENCODER), 2), dtypes=FLOAT_INPUT,
              ranks=(3, 3), since=11),
    ort_motif("os-ort-rotary", (_ORT_STEP,), repeat(mix(_ROTARY), 2), dtypes=FLOAT_INPUT,
              since=11),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 144
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
