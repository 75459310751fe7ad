"""The operator spec (one small declarative record per op type) and helpers its emitters share.

In the spirit of NNSmith's abstract operators (Liu et al., "NNSmith: Generating Diverse and
Valid Test Cases for Deep Learning Compilers", ASPLOS 2023): a spec states the input element
types and ranks it accepts and the opset range it exists in; its emitter samples attributes for
the declared opset, appends the ONNX node(s) and returns the output Value with its computed
shape and dtype (the type-transfer function). Unlike NNSmith there is no SMT solving: emitters
sample attributes that are valid by construction for the concrete input shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from generators.builder import GraphBuilder
from generators.values import FLOATS, NP_DTYPE, Value, broadcast

#: emit(builder, x) -> output Value, or None (without side effects) when x does not fit.
Emitter = Callable[[GraphBuilder, Value], "Value | None"]


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One op type.

    Attributes:
        op_type: ONNX op type (default domain).
        emit: the emitter (see :data:`Emitter`).
        dtypes: element types the first input may have.
        ranks: inclusive (min, max) rank of the first input.
        since: first opset in which this form is emitted.
        until: last opset (inclusive).
        weight: relative sampling weight.
        v1: part of the first generator's catalogue.
    """

    op_type: str
    emit: Emitter
    dtypes: frozenset[int]
    ranks: tuple[int, int] = (1, 4)
    since: int = 7
    until: int = 99
    weight: float = 1.0
    v1: bool = False

    def fits(self, opset: int, dtype: int, rank: int) -> bool:
        """Whether this spec may consume a first input of ``dtype``/``rank`` at ``opset``."""
        return (self.since <= opset <= self.until and dtype in self.dtypes
                and self.ranks[0] <= rank <= self.ranks[1])


def ensure(b: GraphBuilder, x: Value, prop: str) -> Value:
    """Return ``x`` or a value derived from it that has range fact ``prop``.

    ``nonneg``: Abs; ``ge1``: Abs then Add 1; ``bounded``: Tanh (floats) — each appended only
    where ``x`` lacks the fact. Integer tensors are only given ``nonneg``/``ge1``.
    """
    if prop in x.props or (prop == "nonneg" and "ge1" in x.props):
        return x
    if prop == "bounded":
        return b.op("Tanh", [x], x.dtype, x.shape, ("bounded",))
    ax = x if "nonneg" in x.props else b.op("Abs", [x], x.dtype, x.shape, ("nonneg",))
    if prop == "nonneg":
        return ax
    one = b.scalar(1, x.dtype, "Add")
    return b.op("Add", [ax, one], x.dtype, x.shape, ("nonneg", "ge1"))


def peer(b: GraphBuilder, x: Value, *, allow_pool: bool = True) -> Value:
    """A second operand of ``x``'s dtype that broadcasts with it to ``x.shape``: a pooled value
    of the same dtype and shape (shared), or a weight of the full shape, a suffix of it, or a
    scalar."""
    if allow_pool and b.rng.random() < 0.4:
        same = [v for v in b.pool if v.dtype == x.dtype and v.shape == x.shape
                and v.name != x.name]
        if same:
            return b.rng.choice(same)
    k = b.rng.randrange(x.rank + 1)
    shape = x.shape[k:]
    if shape and b.rng.random() < 0.3:
        shape = tuple(1 if b.rng.random() < 0.5 else d for d in shape)
    return b.random_weight(shape, x.dtype, "Mul")


def axis(b: GraphBuilder, rank: int, *, extra: int = 0) -> int:
    """An axis in ``[0, rank + extra)``, negative (same meaning) half of the time where the
    opset allows negative axes (>= 11)."""
    a = b.rng.randrange(rank + extra)
    if b.opset >= 11 and b.rng.random() < 0.5:
        a -= rank + extra
    return a


def out_shape_broadcast(x: Value, y: Value) -> tuple[int, ...]:
    """Broadcast shape of two operands."""
    return broadcast(x.shape, y.shape)


def is_float(x: Value) -> bool:
    """Whether ``x`` is float32 or float16."""
    return x.dtype in FLOATS


def np_dtype(x: Value) -> np.dtype:
    """numpy dtype of ``x``."""
    return NP_DTYPE[x.dtype]
