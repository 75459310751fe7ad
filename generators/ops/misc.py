"""Type, selection and source ops: Cast, Clip, Where, ConstantOfShape, Range, Constant."""

from __future__ import annotations

import numpy as np

from generators.builder import GraphBuilder, tensor_proto
from generators.ops.spec import OpSpec, peer
from generators.values import ALL, BOOL, FLOAT, FLOAT16, FLOATS, INT32, INT64, NP_DTYPE, Value

#: Cast targets per source kind (float -> bool/int keeps values finite and in range).
CAST_TO = (FLOAT, FLOAT16, INT64, INT32, BOOL)


def cast(b: GraphBuilder, x: Value, to: int) -> Value:
    """Cast ``x`` to element type ``to``."""
    keep = x.props if to in FLOATS and x.dtype in FLOATS else (
        frozenset({"nonneg"}) if to == BOOL else frozenset())
    return b.op("Cast", [x], to, x.shape, keep, to=to)


def _cast(b: GraphBuilder, x: Value) -> Value:
    return cast(b, x, b.rng.choice(CAST_TO))


def _clip(b: GraphBuilder, x: Value) -> Value:
    lo, hi = sorted(round(b.rng.uniform(-2, 2), 2) for _ in range(2))
    if b.rng.random() < 0.4:
        lo, hi = -1.0, 1.0
    props = ("bounded",) if lo >= -1 and hi <= 1 else ()
    if b.opset < 11:
        return b.op("Clip", [x], x.dtype, x.shape, props, min=lo, max=hi)
    inputs = [x.name, b.scalar(lo, x.dtype, "Clip").name]
    if b.rng.random() < 0.8:
        inputs.append(b.scalar(hi, x.dtype, "Clip").name)
        return b.op("Clip", inputs, x.dtype, x.shape, props)
    return b.op("Clip", inputs, x.dtype, x.shape)


def _where(b: GraphBuilder, x: Value) -> Value:
    zero = b.scalar(0, x.dtype, "Greater")
    cond = b.op("Greater", [x, zero], BOOL, x.shape)
    y = peer(b, x)
    return b.op("Where", [cond, x, y], x.dtype, x.shape)


def _where_bool(b: GraphBuilder, cond: Value) -> Value:
    x = b.random_weight(cond.shape, FLOAT, "Where")
    y = b.random_weight(cond.shape[cond.rank - 1:], FLOAT, "Where")
    return b.op("Where", [cond, x, y], FLOAT, cond.shape)


def _constant_of_shape(b: GraphBuilder, x: Value) -> Value:
    shape = list(x.shape) if b.rng.random() < 0.7 else [b.rng.randint(1, 3)]
    dtype = b.rng.choice((FLOAT, INT64))
    fill = np.asarray([b.rng.choice([0, 1, 2])], NP_DTYPE[dtype])
    attrs = {"value": tensor_proto(fill, "value")} if b.rng.random() < 0.8 else {}
    out_dtype = dtype if attrs else FLOAT
    c = b.op("ConstantOfShape", [b.ints(shape, "ConstantOfShape")], out_dtype, tuple(shape),
             ("nonneg",), **attrs)
    if c.dtype == x.dtype and c.shape == x.shape:
        return b.op("Add", [x, c], x.dtype, x.shape)
    return c


def _range(b: GraphBuilder, x: Value) -> Value:
    if x.dtype == INT64:
        start, delta = b.rng.randint(-2, 2), b.rng.choice([1, 2, -1])
        limit = start + delta * b.rng.randint(1, 4)
        args = [np.asarray(v, np.int64) for v in (start, limit, delta)]
        n = len(range(start, limit, delta))
    else:
        start, delta = b.rng.choice([0.0, 0.5]), b.rng.choice([0.5, 1.0])
        limit = start + delta * b.rng.randint(1, 4)
        args = [np.asarray(v, np.float32) for v in (start, limit, delta)]
        n = int(np.ceil((limit - start) / delta))
    r = b.op("Range", [b.const(a, "Range") for a in args], x.dtype, (n,))
    return r


def _constant(b: GraphBuilder, x: Value) -> Value:
    arr = b.nprng.standard_normal(x.shape).astype(NP_DTYPE[x.dtype]) if x.dtype in FLOATS \
        else b.nprng.integers(0, 4, x.shape).astype(NP_DTYPE[x.dtype])
    c = b.op("Constant", [], x.dtype, x.shape, value=tensor_proto(arr, "value"))
    return b.op("Add", [x, c], x.dtype, x.shape)


def specs() -> list[OpSpec]:
    """The misc catalogue."""
    return [
        OpSpec("Cast", _cast, frozenset({FLOAT, INT64, INT32, BOOL}), (0, 4), since=6,
               weight=1.0, v1=True),
        OpSpec("Clip", _clip, frozenset({FLOAT}), (1, 4), since=6, v1=True),
        OpSpec("Where", _where, frozenset({FLOAT, INT64}), (1, 4), since=9, v1=True),
        OpSpec("Where", _where_bool, frozenset({BOOL}), (1, 4), since=9),
        OpSpec("ConstantOfShape", _constant_of_shape, frozenset(ALL), (1, 4), since=9,
               weight=0.4),
        OpSpec("Range", _range, frozenset({FLOAT, INT64}), (1, 4), since=11, weight=0.3),
        OpSpec("Constant", _constant, frozenset({FLOAT, INT64}), (1, 4), since=9, weight=0.4,
               v1=True),
    ]
