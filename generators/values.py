"""Typed values flowing through a graph under construction.

A :class:`Value` is a tensor name with its element type, its static shape (known to the
generator even where the declared graph input uses a symbolic dim, which is then 1) and the
value-range facts the generator can prove about it (:data:`PROPS`). Range facts keep generated
graphs finite on the worker's inputs (standard normal floats, integers in [0, 3]): an op with a
restricted domain (Log, Sqrt, Div, Pow ...) gets an input with the fact it needs, or the
generator inserts ops that establish it (e.g. ``Abs`` then ``Add 1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto

FLOAT = TensorProto.FLOAT
FLOAT16 = TensorProto.FLOAT16
INT64 = TensorProto.INT64
INT32 = TensorProto.INT32
BOOL = TensorProto.BOOL

#: ONNX element type -> numpy dtype, for the element types generators emit.
NP_DTYPE: dict[int, np.dtype] = {
    FLOAT: np.dtype(np.float32),
    FLOAT16: np.dtype(np.float16),
    INT64: np.dtype(np.int64),
    INT32: np.dtype(np.int32),
    BOOL: np.dtype(np.bool_),
    TensorProto.DOUBLE: np.dtype(np.float64),
}

FLOATS = frozenset({FLOAT, FLOAT16})
INTS = frozenset({INT64, INT32})
NUMERIC = FLOATS | INTS
ALL = NUMERIC | {BOOL}

#: Value-range facts: ``bounded`` |x| <= 1; ``nonneg`` x >= 0; ``ge1`` x >= 1 (implies nonneg).
PROPS = ("bounded", "nonneg", "ge1")


@dataclass(slots=True)
class Value:
    """One tensor of the graph under construction.

    Attributes:
        name: tensor name in the graph.
        dtype: ONNX element type (``TensorProto.FLOAT`` ...).
        shape: static shape (tuple of non-negative ints); ``()`` is a scalar.
        props: proven value-range facts, a subset of :data:`PROPS`.
        const: the value when it is a compile-time constant (initializer / Constant node), else
            ``None``; motifs use it to build shape-dependent rewrites.
    """

    name: str
    dtype: int
    shape: tuple[int, ...]
    props: frozenset[str] = field(default_factory=frozenset)
    const: np.ndarray | None = None

    @property
    def rank(self) -> int:
        """Number of dims."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy-style multidirectional broadcast of two shapes.

    Raises:
        ValueError: the shapes do not broadcast.
    """
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {a} and {b} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)
