"""Edge values planted in the constants a rewrite folds (generators.edge_values)."""

from __future__ import annotations

import math
import random

import numpy as np
from onnx import numpy_helper

from generators import generate_model
from generators.edge_values import EDGE_KINDS, FINITE_KINDS, edge_value, maybe_edge


def test_every_kind_has_a_float32_and_float16_value() -> None:
    for kind in EDGE_KINDS:
        for dt in (np.float32, np.float16):
            v = edge_value(kind, dt)
            assert isinstance(v, float)
    assert math.copysign(1.0, edge_value("negative-zero")) == -1.0
    assert 0 < edge_value("denormal") < np.finfo(np.float32).tiny
    assert all(math.isfinite(edge_value(k)) for k in FINITE_KINDS)


def test_maybe_edge_plants_one_kind_at_its_share() -> None:
    rng = random.Random(0)
    hits = 0
    for _ in range(2000):
        arr = np.ones(4, np.float32)
        out, kind = maybe_edge(rng, arr, ("zero",))
        if kind is None:
            assert out is arr
        else:
            hits += 1
            assert (out == 0).any() and (arr == 1).all()
    assert 200 < hits < 400  # EDGE_SHARE = 0.15
    ints = np.ones(3, np.int64)
    assert maybe_edge(rng, ints)[1] is None


def test_conv_bn_draws_plant_zero_and_denormal_variances() -> None:
    seen = set()
    for seed in range(150):
        gm = generate_model(seed, motifs=["conv-bn"], opset=13)
        inits = {t.name: numpy_helper.to_array(t) for t in gm.model.graph.initializer}
        for n in gm.model.graph.node:
            if n.op_type == "BatchNormalization" and n.input[4] in inits:
                var = inits[n.input[4]]
                if (var == 0).any():
                    seen.add("zero")
                if ((var > 0) & (var < np.finfo(np.float32).tiny)).any():
                    seen.add("denormal")
    assert {"zero", "denormal"} <= seen
