"""Generator recipes: the knobs that distinguish one generator from another (registry
:data:`RECIPES`; a new generator is one new entry).

- ``v1``: the first generator — the v1 op subset, opsets 11..21, exporter-style names of one
  style per model, three motifs (Conv→BatchNormalization, Constant-node weights, duplicate
  initializers), one or two float32 graph inputs with static shapes.
- ``v2``: the whole catalogue and motif library, opsets 7..21, every name style including mixed,
  up to three graph inputs of several dtypes, symbolic batch dims, weights as initializers,
  Constant nodes or graph inputs, intermediate tensors that are also graph outputs, and the
  interface forms of :mod:`generators.interfaces`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.registry import Registry


@dataclass(frozen=True)
class Recipe:
    """Knobs of one generator.

    Attributes:
        name: registry name (``"v1"``, ``"v2"``).
        opsets: inclusive range of default-domain opsets.
        v1_ops: restrict the catalogue to ops marked ``v1``.
        motifs_v1_only: restrict motifs to those marked ``v1``.
        name_styles: name styles to draw from (:data:`generators.names.STYLE_NAMES`).
        max_inputs: most graph inputs.
        input_dtypes: weighted element types of extra graph inputs (the first is float32).
        dynamic_dims: probability that a graph input declares its batch dim symbolic.
        extra_outputs: probability per model of making an intermediate tensor a graph output.
        nodes: inclusive range of the number of ops/motifs to append.
        motif_rate: probability that a step appends a motif instead of a random op (no hint).
        annotate: probability that a model declares value_info for its intermediate tensors
            (then for all of them, or for a random half).
        schema_share: share of a model's first draws of motifs with anchor ops (and of
            the draws of motifs given by name) that take a row of the motif's pairwise
            schema plan (:mod:`generators.schema`; which draws and rows:
            :func:`generators.generate._row_index`); a model's later draws take none.
        interfaces: factor of the rates of the interface forms (:mod:`generators.interfaces`:
            exporter shapes, sequence and optional inputs and outputs, initializers listed
            as inputs, symbolic and unknown input dims); 0 draws none.
    """

    name: str
    opsets: tuple[int, int]
    v1_ops: bool
    motifs_v1_only: bool
    name_styles: tuple[str, ...]
    max_inputs: int
    input_dtypes: tuple[str, ...]
    dynamic_dims: float
    extra_outputs: float
    nodes: tuple[int, int]
    motif_rate: float
    annotate: float = 0.0
    schema_share: float = 0.0
    interfaces: float = 0.0


RECIPES: Registry[Recipe] = Registry("generator", {
    "v1": Recipe("v1", (11, 21), True, True, ("torch_new", "torch_old", "plain"), 2,
                 ("float",), 0.0, 0.0, (4, 9), 0.25),
    "v2": Recipe("v2", (7, 21), False, False,
                 ("torch_new", "torch_old", "tf2onnx", "plain", "mixed"), 3,
                 ("float", "float", "int64", "bool", "float16", "int32"), 0.3, 0.2, (4, 9),
                 0.35, 0.6, 0.5, 1.0),
})
