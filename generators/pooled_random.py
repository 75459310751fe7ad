"""Cheap, deterministic random arrays for weights: slices of pools drawn once at import.

Creating a ``numpy.random.Generator`` per model costs ~25 µs, a tenth of generating a small
model; :class:`PooledRandom` instead takes a slice of fixed pools (standard normal and
uniform [0, 1), 2**16 values each) at an offset chosen by the model's ``random.Random``. Values
within one weight are independent draws; weights of different models overlap in the pool,
which is harmless for fuzzing.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

_POOL_SIZE = 1 << 16
_rng = np.random.default_rng(20261121)
_NORMAL = _rng.standard_normal(_POOL_SIZE)
_UNIFORM = _rng.random(_POOL_SIZE)


def _shape(size: int | Sequence[int] | None) -> tuple[int, ...]:
    if size is None:
        return ()
    return (int(size),) if isinstance(size, int | np.integer) else tuple(int(s) for s in size)


class PooledRandom:
    """The subset of ``numpy.random.Generator`` the generators use, over fixed pools.

    Args:
        rng: the model's random source (chooses the pool offsets).
    """

    __slots__ = ("_rng",)

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def _take(self, pool: np.ndarray, size: int | Sequence[int] | None) -> np.ndarray:
        shape = _shape(size)
        n = math.prod(shape)
        if n > _POOL_SIZE:
            return np.resize(pool[self._rng.randrange(_POOL_SIZE):], n).reshape(shape)
        off = self._rng.randrange(_POOL_SIZE - n + 1)
        return pool[off:off + n].reshape(shape)

    def standard_normal(self, size: int | Sequence[int] | None = None) -> np.ndarray:
        """float64 array of ``size`` with standard normal values."""
        return self._take(_NORMAL, size)

    def uniform(self, low: float = 0.0, high: float = 1.0,
                size: int | Sequence[int] | None = None) -> np.ndarray:
        """float64 array of ``size`` uniform in [low, high)."""
        return low + (high - low) * self._take(_UNIFORM, size)

    def integers(self, low: int, high: int,
                 size: int | Sequence[int] | None = None) -> np.ndarray:
        """int64 array of ``size`` uniform in [low, high)."""
        return low + np.floor(self._take(_UNIFORM, size) * (high - low)).astype(np.int64)
