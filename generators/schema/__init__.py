"""Schema-complete variation of the motifs' anchor ops.

A motif's pattern is built around a few *anchor ops* (Conv and BatchNormalization for
``conv-bn``). For each anchor op, :mod:`generators.schema.space` derives a *feature space*
from the op's ONNX schema (``onnx.defs``): the op's versions over the opsets the generator
declares, every element type of its type constraints, every attribute absent / at its
explicit default / at another value / at an edge value, every optional input absent,
empty-named or present, and every optional output absent, unused, consumed or a graph
output. :mod:`generators.schema.plan` covers the *pairs* of those features with a pairwise
(all-pairs) plan per motif (Cohen et al., "The AETG system", IEEE TSE 1997; the plan is
drawn by ``allpairspy``), :mod:`generators.schema.apply` makes one motif draw take one row
of its plan, and :mod:`generators.schema.measure` reads which pairs a generated model's
anchor nodes exercise (``optfuzz coverage --schema``).

What onnxruntime cannot run (no CPU kernel for an element type) is known from onnxruntime's
own kernel registry (:mod:`generators.schema.kernels`) and kept out of the plan with its
reason; what a motif's pattern cannot take is recorded per draw with its reason.
"""
