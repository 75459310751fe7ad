"""Input values at their edges: policies that rewrite the floating-point feeds of a model.

The model is left as it is; a mutated case names the policy (``Mutation.feeds``) and its feeds
are synthesized as for any model (:func:`generators.inputs.synthesize_inputs`, or a corpus
model's stored feeds) and then rewritten by :func:`apply_policies`. Policies replace a share of
the elements: NaN and +-Inf; huge magnitudes that overflow Exp and Pow (``1e30`` in float32,
``6e4`` in float16); tiny normal magnitudes; denormals; ties (halves, for Round and Cast, and
repeated values, for ArgMax and TopK); negative zero; negatives (into Log and Sqrt).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from onnx import ModelProto

from fuzzer.registry import Registry
from generators.inputs import graph_feed_inputs
from generators.mutate.spec import Mutator
from generators.values import NP_DTYPE

#: Share of a feed's elements a policy replaces.
SHARE = 0.3

Policy = Callable[[np.random.Generator, np.ndarray], np.ndarray]


def _edge(dtype: np.dtype, kind: str) -> np.ndarray:
    info = np.finfo(dtype)
    values = {
        "huge": [float(info.max) / 4, -float(info.max) / 4, 1e30 if dtype.itemsize >= 4
                 else 6e4, 88.8, -104.0],
        "tiny": [float(info.tiny), -float(info.tiny), float(info.tiny) * 4],
        "denormal": [float(info.smallest_subnormal), -float(info.smallest_subnormal),
                     float(info.tiny) / 2],
    }[kind]
    return np.asarray(values, dtype)


def _sprinkle(values: Callable[[np.dtype], np.ndarray]) -> Policy:
    """A policy that replaces :data:`SHARE` of the elements by draws from ``values(dtype)``."""
    def policy(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
        out = x.copy()
        mask = rng.random(x.shape) < SHARE
        if x.size and not mask.any():
            mask.flat[rng.integers(x.size)] = True
        pool = values(x.dtype)
        out[mask] = rng.choice(pool, size=int(mask.sum()))
        return out
    return policy


def _ties(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    halves = np.asarray([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], x.dtype)
    return rng.choice(halves[: rng.integers(1, len(halves) + 1)], size=x.shape).astype(x.dtype)


def _negatives(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    return -np.abs(x)


#: policy name -> Policy (applied to floating-point feeds only).
POLICIES: Registry[Policy] = Registry("feed policy", {
    "special-floats": _sprinkle(lambda d: np.asarray([np.nan, np.inf, -np.inf], d)),
    "huge": _sprinkle(lambda d: _edge(d, "huge")),
    "tiny": _sprinkle(lambda d: _edge(d, "tiny")),
    "denormals": _sprinkle(lambda d: _edge(d, "denormal")),
    "ties": _ties,
    "negative-zero": _sprinkle(lambda d: np.asarray([-0.0, -0.0, 0.0], d)),
    "negatives": _negatives,
})


def apply_policies(names: Sequence[str], feeds: Mapping[str, np.ndarray],
                   seed: int) -> dict[str, np.ndarray]:
    """``feeds`` with each policy of ``names`` applied in order to every floating-point feed,
    deterministic from ``seed`` (other feeds unchanged; the argument is not changed).

    Raises:
        KeyError: an unknown policy name.
    """
    rng = np.random.default_rng(seed)
    out = dict(feeds)
    for name in names:
        policy = POLICIES[name]
        for key, x in out.items():
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":
                out[key] = policy(rng, x)
    return out


def _has_float_feed(model: ModelProto, rng: random.Random) -> ModelProto | None:
    floats = [i for i in graph_feed_inputs(model)
              if NP_DTYPE.get(i.type.tensor_type.elem_type, np.dtype(object)).kind == "f"]
    return model if floats else None


MUTATORS = tuple(Mutator(f"inputs-{name}", "inputs", _has_float_feed, weight=0.25, feeds=name)
                 for name in POLICIES)
