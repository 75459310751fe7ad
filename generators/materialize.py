"""Materializer for ``source["kind"] == "generated"``: rebuild a generated model from its seed
in the worker (registered in ``fuzzer.execution.case.SOURCE_KINDS``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Materialized:
    """A model built from a source by a materializer.

    Attributes:
        model: the ``onnx.ModelProto``.
        feeds: stored feeds for it (e.g. a corpus model's test data), or ``None``.
        provenance: facts merged into the case's source (e.g. ``{"motifs": [...]}``).
        task: task category, or ``None``.
        input_shapes: default sizes of its dynamic dims, or ``None``.
    """

    model: Any
    feeds: dict[str, np.ndarray] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    task: str | None = None
    input_shapes: dict[str, list[int]] | None = None



def materialize(source: dict[str, Any], input_seed: int,
                input_shapes: dict[str, list[int]] | None) -> Materialized:
    """Build the model described by ``source``.

    Args:
        source: ``{"kind": "generated", "seed": int, "generator": "v1" | "v2" (default
            "v2"), the JSON of :class:`~generators.hints.GenerationHints` ("passes": [pass
            names], "opset": int, "steps": [low, high], "avoid": [features], each optional),
            "with_motifs": [motif names]
            (optional: exactly these motifs, e.g. the ``block-run`` of a case that asks for
            the scaling probe), "with_interfaces": [interface form names] (optional: exactly
            these forms of :mod:`generators.interfaces`)}``.
        input_seed: unused here (feeds are synthesized by the worker from the model).
        input_shapes: the user's sizes for dynamic dims; they win over the generator's.

    Returns:
        :class:`Materialized` with provenance ``{"motifs", "opset", "ir_version",
        "generator", "name_style", "interfaces"}`` and the concrete shapes of the inputs
        whose declaration is not static (sequences: ``[length, *element dims]``).

    Raises:
        KeyError: missing ``seed``, unknown generator or interface form.
    """
    from generators.generate import generate
    from generators.hints import GenerationHints  # the generator is heavy to import: not for
    # every importer of Materialized (a reducer process never generates)

    gm = generate(int(source["seed"]), source.get("generator", "v2"),
                  GenerationHints.from_source(source),
                  motifs=source.get("with_motifs"),
                  interfaces=source.get("with_interfaces"))
    shapes = gm.input_shapes
    if input_shapes:
        shapes = {**(shapes or {}), **input_shapes}
    return Materialized(
        model=gm.model,
        provenance={"motifs": gm.motifs, "opset": gm.opset, "ir_version": gm.ir_version,
                    "generator": gm.generator, "name_style": gm.name_style,
                    "interfaces": gm.interfaces},
        input_shapes=shapes,
    )
