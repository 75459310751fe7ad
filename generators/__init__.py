"""Random valid ONNX graphs, pass-relevant motifs, input synthesis and Hypothesis strategies.

Entry points:

- :func:`generate_model` — one model from a seed, by a registered generator (``"v1"``,
  ``"v2"``; see :data:`GENERATORS`);
- :mod:`generators.materialize` — the campaign's materializer for ``{"kind": "generated"}``;
- :mod:`generators.strategies` — Hypothesis strategies over generated models;
- :mod:`generators.inputs` — input feeds for any model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from generators.hints import GenerationHints
from generators.recipe import RECIPES

if TYPE_CHECKING:
    from generators.generate import GeneratedModel

#: Registered generator names.
GENERATORS: tuple[str, ...] = tuple(RECIPES)


def generate_model(seed: int, *, generator: str = "v2",
                   passes: list[str] | GenerationHints | None = None,
                   nodes: tuple[int, int] | None = None,
                   motifs: list[str] | None = None,
                   opset: int | None = None,
                   interfaces: list[str] | None = None) -> GeneratedModel:
    """Generate one model, deterministic from (``seed``, ``generator``, ``passes``).

    Args:
        seed: any int.
        generator: one of :data:`GENERATORS`.
        passes: target pass list, or :class:`~generators.hints.GenerationHints` (an opset
            and a step bound with the passes); biases motif choice toward those passes'
            motifs.
        nodes: (min, max) number of random steps, overriding the generator's default.
        motifs: exact motif names to apply (see :data:`generators.motifs.MOTIFS`).
        opset: default-domain opset to declare (7..21) instead of drawing one.
        interfaces: exact interface forms to apply (:data:`generators.interfaces.INTERFACES`;
            ``[]``: none) instead of drawing them.

    Returns:
        :class:`GeneratedModel` (``model`` is an ``onnx.ModelProto`` whose IR version matches
        its opset and is at most 13).

    Raises:
        KeyError: unknown generator, motif or interface form.
        ValueError: opset outside 7..21.
    """
    from generators.generate import generate

    return generate(seed, generator, passes, nodes, motifs, opset, interfaces)


def __getattr__(name: str) -> Any:
    """``GeneratedModel`` on first use: the generator and its motif library are imported
    only where a model is generated (0.2 s that a process importing the package for
    :class:`generators.materialize.Materialized` or the inputs does not need)."""
    if name == "GeneratedModel":
        from generators.generate import GeneratedModel

        return GeneratedModel
    raise AttributeError(f"module 'generators' has no attribute {name!r}")


__all__ = ["GENERATORS", "GeneratedModel", "GenerationHints", "generate_model"]
