"""Edge values for the constants a rewrite folds or reassociates.

A rewrite that folds a motif's constants into another node (BatchNormalization's scale and
variance into the Conv weights, an Add's bias into the Conv bias, a Pad value into a pool)
has value preconditions it may forget: the folded form overflows where the unfolded one does
not, divides by a zero variance, turns a NaN into a number or a negative zero into a positive
one, rounds a tie the other way. :data:`EDGE_KINDS` is the registry of such value kinds per
element type; :func:`maybe_edge` plants one kind in a few elements of a motif constant with
probability :data:`EDGE_SHARE`, so that fused and unfused forms differ where the rewrite
ignores a precondition (and agree where it does not).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from fuzzer.registry import Registry

#: probability that one motif constant gets edge values.
EDGE_SHARE = 0.15


def _finfo(dtype: np.dtype) -> np.finfo:
    return np.finfo(dtype)


#: kind -> ``(float dtype) -> value``. ``overflow``: the largest finite value (its square,
#: or its product with a weight, overflows); ``tie``: a value halfway between two integers
#: (rounding and truncation differ); ``denormal``: the smallest subnormal.
EDGE_KINDS: Registry[Callable[[np.dtype], float]] = Registry("edge value kind", {
    "zero": lambda dt: 0.0,
    "negative-zero": lambda dt: -0.0,
    "denormal": lambda dt: float(_finfo(dt).smallest_subnormal),
    "overflow": lambda dt: float(_finfo(dt).max),
    "tie": lambda dt: 2.5,
    "nan": lambda dt: float("nan"),
    "inf": lambda dt: float("inf"),
    "-inf": lambda dt: float("-inf"),
})
#: kinds that keep a model's outputs finite where the constant is used as written
#: (a variance of zero plus epsilon, a negative zero, a denormal, a tie).
FINITE_KINDS: tuple[str, ...] = ("zero", "negative-zero", "denormal", "tie")


def edge_value(kind: str, dtype: np.dtype | type = np.float32) -> float:
    """The value of edge kind ``kind`` for float ``dtype``.

    Raises:
        KeyError: an unknown kind.
    """
    return EDGE_KINDS[kind](np.dtype(dtype))


def maybe_edge(rng: random.Random, array: np.ndarray,
               kinds: Sequence[str] = FINITE_KINDS) -> tuple[np.ndarray, str | None]:
    """With probability :data:`EDGE_SHARE`, a copy of float ``array`` with one to all of its
    elements set to one edge value of a kind drawn from ``kinds``; else ``array`` itself.

    Returns:
        ``(array, kind or None)``.
    """
    if array.dtype.kind != "f" or array.size == 0 or rng.random() >= EDGE_SHARE:
        return array, None
    kind = rng.choice(list(kinds))
    out = array.copy()
    flat = out.reshape(-1)
    count = rng.randint(1, flat.size)
    for i in rng.sample(range(flat.size), count):
        flat[i] = edge_value(kind, out.dtype)
    return out, kind
