"""The operator catalogue: every :class:`~generators.ops.spec.OpSpec`, and fast lookup of the
specs that fit a value.

A new op type is one new entry in one of the family modules (:mod:`.elementwise`,
:mod:`.shape_ops`, :mod:`.nn`, :mod:`.reduce`, :mod:`.misc`, :mod:`.control`).
"""

from __future__ import annotations

import bisect
import itertools
import random
from functools import lru_cache

from generators.ops import control, elementwise, misc, nn, reduce, shape_ops
from generators.ops.spec import OpSpec

#: The whole catalogue, built once at import.
CATALOGUE: tuple[OpSpec, ...] = tuple(
    itertools.chain(elementwise.specs(), shape_ops.specs(), nn.specs(), reduce.specs(),
                    misc.specs(), control.specs()))

#: Distinct op types in the catalogue (a spec may exist in several forms).
OP_TYPES: frozenset[str] = frozenset(s.op_type for s in CATALOGUE)
#: Op types of the first generator.
V1_OP_TYPES: frozenset[str] = frozenset(s.op_type for s in CATALOGUE if s.v1)


@lru_cache(maxsize=4096)
def fitting(opset: int, dtype: int, rank: int, v1: bool) -> tuple[tuple[OpSpec, ...],
                                                                    tuple[float, ...]]:
    """Specs that accept a first input of ``dtype``/``rank`` at ``opset`` (only v1 specs when
    ``v1``), with cumulative weights for :func:`choose`."""
    specs = tuple(s for s in CATALOGUE if s.fits(opset, dtype, rank) and (s.v1 or not v1))
    return specs, tuple(itertools.accumulate(s.weight for s in specs))


def choose(rng: random.Random, specs: tuple[OpSpec, ...], cum: tuple[float, ...]) -> OpSpec:
    """Weighted choice among ``specs``.

    Raises:
        IndexError: ``specs`` is empty.
    """
    return specs[bisect.bisect(cum, rng.random() * cum[-1])]
