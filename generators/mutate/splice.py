"""Splicing a motif of :data:`generators.motifs.MOTIFS` into a model at a type-compatible edge.

The motif is applied as the generator applies it (:func:`generators.generate._step_motif`:
a pooled value of a dtype and rank the motif accepts, or one reshaped to fit) on a builder over
the model's statically shaped values (:func:`generators.mutate.graft.builder_for`). Where the
motif's result has the consumed value's dtype and shape, one consumer of that value reads the
result instead (the motif sits on the edge); the motif's other results become graph outputs.
This is how OATest splices optimizer test patterns into real models.
"""

from __future__ import annotations

import random

from onnx import ModelProto

from generators.generate import _step_motif
from generators.motifs import MOTIFS
from generators.mutate.graft import builder_for, merge
from generators.mutate.graph import consumers, redirect
from generators.mutate.spec import Mutator


def splice_motif(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """Apply one motif that exists at the model's opset to one of its values."""
    b = builder_for(model, rng)
    if not b.pool:
        return None
    old = {v.name: v for v in b.pool}
    fitting = sorted(m.name for m in MOTIFS.values()
                     if m.emit is not None and m.since <= b.opset <= m.until
                     and any(m.fits(v.dtype, v.rank) for v in b.pool))
    if not fitting or not _step_motif(b, MOTIFS[rng.choice(fitting)]):
        return None
    read = [old[i] for n in b.nodes for i in n.input if i in old]
    made = [v for v in b.leaves() if v.name not in old]
    users = consumers(model.graph)
    result = made[-1] if made else None
    edges = [x for x in read if result is not None and x.dtype == result.dtype
             and x.shape == result.shape and users.get(x.name)]
    if edges and rng.random() < 0.7:
        x = rng.choice(edges)
        redirect(model.graph.node[rng.choice(users[x.name])], x.name, result.name)
        made.remove(result)
    for v in made:
        b.graph_output(v)
    try:
        return merge(model, b)
    except ValueError:  # the redirected consumer feeds the motif: a cycle
        return None


MUTATORS = (Mutator("splice-motif", "splice", splice_motif, weight=2.0),)
