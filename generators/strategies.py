"""Hypothesis strategies over generated ONNX models, for property tests of any optimizer.

Every strategy draws small, shrinkable choices (a seed, a node count, a motif list, an
opset) and builds the model from them with :func:`generators.generate_model`, so Hypothesis
shrinks a failing model toward fewer nodes, no motifs and seed 0. Models pass onnx.checker
(full_check) and run in onnxruntime on :func:`generators.inputs.synthesize_inputs` feeds.

Example::

    from hypothesis import given
    from generators.strategies import onnx_models

    @given(onnx_models(passes=["fuse_bn_into_conv"]))
    def test_my_optimizer_keeps_outputs(model): ...
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from generators import GeneratedModel, generate_model
from generators.motifs import MOTIFS
from generators.versions import MAX_OPSET, MIN_OPSET


def seeds() -> st.SearchStrategy[int]:
    """Generator seeds (non-negative 32-bit ints; shrink toward 0)."""
    return st.integers(min_value=0, max_value=2**32 - 1)


def motif_names(passes: list[str] | None = None,
                max_size: int = 3) -> st.SearchStrategy[list[str]]:
    """Lists of motif names (shrink toward the empty list); with ``passes``, only motifs that
    target one of them.

    Raises:
        ValueError: no motif targets any of ``passes``.
    """
    names = sorted(n for n, m in MOTIFS.items() if not passes or set(m.passes) & set(passes))
    if not names:
        raise ValueError(f"no motif targets any of {passes}")
    return st.lists(st.sampled_from(names), max_size=max_size)


def opsets(min_opset: int = MIN_OPSET, max_opset: int = MAX_OPSET) -> st.SearchStrategy[int]:
    """Default-domain opsets in ``[min_opset, max_opset]`` (shrink toward ``max_opset``, the
    best-supported forms)."""
    return st.integers(min_value=0, max_value=max_opset - min_opset).map(
        lambda k: max_opset - k)


@st.composite
def generated_models(draw: Any, *, generator: str = "v2", passes: list[str] | None = None,
                     max_nodes: int = 10, opset: st.SearchStrategy[int] | None = None,
                     motifs: st.SearchStrategy[list[str]] | None = None) -> GeneratedModel:
    """:class:`generators.GeneratedModel` values (model plus seed, motifs, opset).

    Args:
        generator: ``"v1"`` or ``"v2"``.
        passes: bias motifs toward these onnxoptimizer passes.
        max_nodes: most random steps besides the motifs (each step adds 1-3 nodes).
        opset: strategy of opsets; default: the generator draws one from the seed.
        motifs: strategy of motif-name lists; default :func:`motif_names` (``passes``).
    """
    seed = draw(seeds())
    steps = draw(st.integers(min_value=0, max_value=max_nodes))
    chosen = draw(motifs if motifs is not None else motif_names(passes))
    declared = draw(opset) if opset is not None else None
    return generate_model(seed, generator=generator, passes=passes, nodes=(steps, steps),
                          motifs=chosen, opset=declared)


def onnx_models(**kwargs: Any) -> st.SearchStrategy[Any]:
    """``onnx.ModelProto`` values; keyword arguments as :func:`generated_models`."""
    return generated_models(**kwargs).map(lambda g: g.model)


@st.composite
def models_with_inputs(draw: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """``(onnx.ModelProto, feeds)`` pairs; feeds follow :mod:`generators.inputs` (floats
    standard normal, ints in [0, 3], bools uniform). Keyword arguments as
    :func:`generated_models`."""
    from generators.inputs import synthesize_inputs

    gm = draw(generated_models(**kwargs))
    feeds = synthesize_inputs(gm.model, draw(seeds()), gm.input_shapes)
    return gm.model, feeds
