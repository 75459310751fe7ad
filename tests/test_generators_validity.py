"""Generated models pass onnx.checker (full_check) and run in onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

from generators import generate_model
from generators.inputs import synthesize_inputs
from generators.motifs import MOTIFS
from tests.conftest import cpu_session


def _check_and_run(gm, seed: int) -> list:
    onnx.checker.check_model(gm.model, full_check=True)
    return cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))


def _arrays(outs: list[Any]) -> list[np.ndarray]:
    """The arrays of onnxruntime's outputs: a sequence output's elements, no empty
    optional (None)."""
    return [a for o in outs if o is not None for a in (o if isinstance(o, list) else [o])]


def _took_an_edge(gm: Any) -> bool:
    """Whether a draw of ``gm`` took a schema plan row that holds an ``edge`` level (an
    attribute at zero, a negative, non-finite or huge value): its outputs may be non-finite
    by design."""
    from generators.schema.levels import EDGE
    from generators.schema.plan import motif_plan

    return any(EDGE in motif_plan(v["motif"]).rows[v["row"]].values() for v in gm.varied)


@pytest.mark.parametrize(("generator", "count"), [("v1", 150), ("v2", 300)])
def test_random_seeds_are_valid_and_finite(generator: str, count: int) -> None:
    nonfinite = 0
    for seed in range(count):
        gm = generate_model(seed, generator=generator)
        outs = _check_and_run(gm, seed)
        by_design = _took_an_edge(gm) or any(MOTIFS[m].nonfinite for m in gm.motifs)
        nonfinite += not by_design and not all(
            np.isfinite(o).all() for o in _arrays(outs) if o.dtype.kind == "f")
    assert nonfinite <= count // 100


@pytest.mark.parametrize("name", sorted(MOTIFS))
def test_every_motif_is_valid_at_old_and_new_opsets(name: str) -> None:
    for opset in (7, 11, 13, 21):
        for seed in range(2):
            gm = generate_model(seed, motifs=[name], opset=opset, nodes=(1, 4))
            _check_and_run(gm, seed)


def test_pass_hinted_models_are_valid() -> None:
    import onnxoptimizer

    for i, name in enumerate(onnxoptimizer.get_available_passes()):
        gm = generate_model(i, passes=[name])
        _check_and_run(gm, i)
