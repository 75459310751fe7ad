"""What the onnx-simplifier and onnxslim motif families (``onnxsim``, ``onnxslim``) share:
a sealed emitter (:func:`generators.motifs.helpers.sealed`) that, half the time, declares
value_info for the pattern's intermediate tensors, as exporters that run shape inference do.
Both tools' shape-reading rewrites (a Reshape pair, a reduction over size-1 axes, a rank-3
MatMul) then act on their own, without the tools' shape inference; the other half they need
it, and a configuration without it must leave the pattern alone.

Not a motif family: it exports no ``MOTIFS``.
"""

from __future__ import annotations

from typing import Any

from generators.builder import GraphBuilder, value_info
from generators.motifs.helpers import Emit, ort_motif
from generators.motifs.spec import Motif
from generators.values import Value

#: share of emitted patterns whose intermediate tensors get value_info.
ANNOTATED = 0.5


def annotating(emit: Emit) -> Emit:
    """Wrap ``emit`` so that, with probability :data:`ANNOTATED`, every value it pooled other
    than its result (and graph inputs, outputs and values already declared) gets a value_info
    entry."""

    def wrapped(b: GraphBuilder, x: Value) -> Value | None:
        start = len(b.pool)
        out = emit(b, x)
        if out is not None and b.rng.random() < ANNOTATED:
            skip = b.input_names | b.output_names | {out.name} | \
                {v.name for v in b.value_infos}
            b.value_infos.extend(value_info(v.name, v.dtype, v.shape)
                                 for v in b.pool[start:] if v.name not in skip)
        return out

    return wrapped


def shaped_motif(name: str, passes: tuple[str, ...], emit: Emit, **kw: Any) -> Motif:
    """A sealed :class:`Motif` for ``passes`` whose intermediates are annotated at random
    (:func:`annotating`)."""
    return ort_motif(name, passes, annotating(emit), **kw)
