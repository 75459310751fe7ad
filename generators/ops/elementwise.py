"""Elementwise ops as table rows: unary math, binary arithmetic, comparison and logic.

Unary row: (op, since, required fact of the input, facts of the output, attribute sampler,
extra float16/int support, v1). Domain rules keep outputs finite: Log and Reciprocal get an
input >= 1, Sqrt a non-negative one, Exp/Sinh/Cosh/Asin/Acos a bounded one, Atanh a bounded one
scaled by 0.5, Acosh an input >= 1.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from generators.builder import GraphBuilder
from generators.ops.spec import OpSpec, ensure, out_shape_broadcast, peer
from generators.values import BOOL, FLOAT, FLOAT16, FLOATS, INT32, INT64, INTS, Value, broadcast

Attrs = Callable[[GraphBuilder], dict[str, Any]]


def _none(b: GraphBuilder) -> dict[str, Any]:
    return {}


def _alpha(lo: float, hi: float) -> Attrs:
    return lambda b: {"alpha": round(b.rng.uniform(lo, hi), 3)}


#: (op, since, requires, gives, attrs, dtypes, v1)
UNARY: tuple[tuple[str, int, str | None, tuple[str, ...], Attrs, frozenset[int], bool], ...] = (
    ("Relu", 6, None, ("nonneg",), _none, frozenset({FLOAT}), True),
    ("LeakyRelu", 6, None, (), _alpha(0.01, 0.3), frozenset({FLOAT}), True),
    ("Elu", 6, None, (), _alpha(0.5, 1.5), frozenset({FLOAT}), False),
    ("Selu", 6, None, (), _none, frozenset({FLOAT}), False),
    ("Sigmoid", 6, None, ("bounded", "nonneg"), _none, frozenset({FLOAT}), True),
    ("HardSigmoid", 6, None, ("bounded", "nonneg"), _none, frozenset({FLOAT}), False),
    ("Tanh", 6, None, ("bounded",), _none, frozenset({FLOAT}), True),
    ("Softplus", 1, None, ("nonneg",), _none, frozenset({FLOAT}), False),
    ("Softsign", 1, None, ("bounded",), _none, frozenset({FLOAT}), False),
    ("Abs", 6, None, ("nonneg",), _none, frozenset({FLOAT, INT64, INT32}), True),
    ("Neg", 6, None, (), _none, frozenset({FLOAT, INT64, INT32}), True),
    ("Exp", 6, "bounded", ("nonneg",), _none, frozenset({FLOAT}), True),
    ("Log", 6, "ge1", ("nonneg",), _none, frozenset({FLOAT}), True),
    ("Sqrt", 6, "nonneg", ("nonneg",), _none, frozenset({FLOAT}), True),
    ("Reciprocal", 6, "ge1", ("nonneg", "bounded"), _none, frozenset({FLOAT}), False),
    ("Floor", 6, None, (), _none, frozenset({FLOAT}), True),
    ("Ceil", 6, None, (), _none, frozenset({FLOAT}), False),
    ("Round", 11, None, (), _none, frozenset({FLOAT}), False),
    ("Sin", 7, None, ("bounded",), _none, frozenset({FLOAT}), False),
    ("Cos", 7, None, ("bounded",), _none, frozenset({FLOAT}), False),
    ("Atan", 7, None, (), _none, frozenset({FLOAT}), False),
    ("Asin", 7, "bounded", (), _none, frozenset({FLOAT}), False),
    ("Acos", 7, "bounded", ("nonneg",), _none, frozenset({FLOAT}), False),
    ("Sinh", 9, "bounded", (), _none, frozenset({FLOAT}), False),
    ("Cosh", 9, "bounded", ("nonneg", "ge1"), _none, frozenset({FLOAT}), False),
    ("Asinh", 9, None, (), _none, frozenset({FLOAT}), False),
    ("Acosh", 9, "ge1", ("nonneg",), _none, frozenset({FLOAT}), False),
    ("Erf", 9, None, ("bounded",), _none, frozenset({FLOAT}), False),
    ("Sign", 9, None, ("bounded",), _none, frozenset({FLOAT, INT64, INT32}), False),
    ("HardSwish", 14, None, (), _none, frozenset({FLOAT}), False),
    ("Mish", 18, None, (), _none, frozenset({FLOAT}), False),
    ("Gelu", 20, None, (), _none, frozenset({FLOAT}), False),
    ("Celu", 12, None, (), _alpha(0.5, 1.5), frozenset({FLOAT}), False),
    ("ThresholdedRelu", 10, None, ("nonneg",), _alpha(0.1, 1.0), frozenset({FLOAT}), False),
    ("Identity", 1, None, ("*",), _none, frozenset({FLOAT, FLOAT16, INT64, INT32, BOOL}), True),
)


def _unary(op: str, requires: str | None, gives: tuple[str, ...], attrs: Attrs,
           b: GraphBuilder, x: Value) -> Value:
    if requires:
        x = ensure(b, x, requires)
    props = x.props if gives == ("*",) else frozenset(gives)
    return b.op(op, [x], x.dtype, x.shape, props, **attrs(b))


def _atanh(b: GraphBuilder, x: Value) -> Value:
    x = ensure(b, x, "bounded")
    half = b.scalar(0.5, x.dtype, "Mul")
    x = b.op("Mul", [x, half], x.dtype, x.shape, ("bounded",))
    return b.op("Atanh", [x], x.dtype, x.shape)


def _is_check(op: str, b: GraphBuilder, x: Value) -> Value:
    return b.op(op, [x], BOOL, x.shape)


def _not(b: GraphBuilder, x: Value) -> Value:
    return b.op("Not", [x], BOOL, x.shape)


# -- binary ----------------------------------------------------------------------------------
def _arith(op: str, b: GraphBuilder, x: Value) -> Value:
    y = peer(b, x)
    if b.rng.random() < 0.3:
        x, y = y, x
    props: tuple[str, ...] = ()
    if op == "Add" and "nonneg" in x.props and "nonneg" in y.props:
        props = ("nonneg",)
    return b.op(op, [x, y], x.dtype, out_shape_broadcast(x, y), props)


def _div(b: GraphBuilder, x: Value) -> Value:
    if x.dtype in INTS:
        y = b.random_weight(x.shape[b.rng.randrange(x.rank + 1):], x.dtype, "Div",
                            positive=True)
    else:
        y = ensure(b, peer(b, x), "ge1")
    return b.op("Div", [x, y], x.dtype, out_shape_broadcast(x, y))


def _mod(b: GraphBuilder, x: Value) -> Value:
    y = b.random_weight(x.shape[b.rng.randrange(x.rank + 1):], x.dtype, "Mod", positive=True)
    fmod = 1 if x.dtype in FLOATS else b.rng.randrange(2)
    return b.op("Mod", [x, y], x.dtype, out_shape_broadcast(x, y), fmod=fmod)


def _pow(b: GraphBuilder, x: Value) -> Value:
    x = ensure(b, x, "ge1")
    e = b.const((b.nprng.uniform(0.5, 2.0, size=x.shape[x.rank - 1:])).astype("float32"),
                "Pow")
    return b.op("Pow", [x, e], x.dtype, x.shape, ("nonneg", "ge1"))


def _variadic(op: str, b: GraphBuilder, x: Value) -> Value:
    ys = [peer(b, x) for _ in range(b.rng.randint(1, 2))]
    shape = x.shape
    for y in ys:
        shape = broadcast(shape, y.shape)
    props = x.props if op in ("Max", "Min") and all(x.props <= y.props for y in ys) else ()
    return b.op(op, [x, *ys], x.dtype, shape, props)


def _compare(op: str, b: GraphBuilder, x: Value) -> Value:
    y = peer(b, x)
    return b.op(op, [x, y], BOOL, out_shape_broadcast(x, y))


def _logic(op: str, b: GraphBuilder, x: Value) -> Value:
    y = peer(b, x)
    return b.op(op, [x, y], BOOL, out_shape_broadcast(x, y))


def _prelu(b: GraphBuilder, x: Value) -> Value:
    k = b.rng.randrange(1, x.rank + 1) if x.rank else 0
    slope = b.random_weight(x.shape[k:], x.dtype, "PRelu", scale=0.2)
    return b.op("PRelu", [x, slope], x.dtype, x.shape)


_F = frozenset({FLOAT})
_FI = frozenset({FLOAT, INT64, INT32})


def specs() -> list[OpSpec]:
    """The elementwise catalogue."""
    out = [OpSpec(op, partial(_unary, op, req, gives, attrs), dtypes, since=since, v1=v1)
           for op, since, req, gives, attrs, dtypes, v1 in UNARY]
    out += [
        OpSpec("Atanh", _atanh, _F, since=9),
        OpSpec("IsNaN", partial(_is_check, "IsNaN"), _F, since=9, weight=0.3),
        OpSpec("IsInf", partial(_is_check, "IsInf"), _F, since=10, weight=0.3),
        OpSpec("Not", _not, frozenset({BOOL}), since=1),
        OpSpec("Add", partial(_arith, "Add"), _FI, weight=2.0, v1=True),
        OpSpec("Sub", partial(_arith, "Sub"), _FI, weight=1.5, v1=True),
        OpSpec("Mul", partial(_arith, "Mul"), _FI, weight=2.0, v1=True),
        OpSpec("Div", _div, _FI, weight=1.0, v1=True),
        OpSpec("Mod", _mod, frozenset({INT64, INT32}), since=10, weight=0.5),
        OpSpec("Pow", _pow, _F, since=7, weight=0.7),
        OpSpec("Max", partial(_variadic, "Max"), _F, since=8, v1=True),
        OpSpec("Min", partial(_variadic, "Min"), _F, since=8),
        OpSpec("Mean", partial(_variadic, "Mean"), _F, since=8),
        OpSpec("Sum", partial(_variadic, "Sum"), _F, since=8),
        OpSpec("Equal", partial(_compare, "Equal"), frozenset({INT64, INT32}), since=11),
        OpSpec("Less", partial(_compare, "Less"), _F, since=9),
        OpSpec("Greater", partial(_compare, "Greater"), _F, since=9, v1=True),
        OpSpec("LessOrEqual", partial(_compare, "LessOrEqual"), _F, since=12),
        OpSpec("GreaterOrEqual", partial(_compare, "GreaterOrEqual"), _F, since=12),
        OpSpec("And", partial(_logic, "And"), frozenset({BOOL}), since=7),
        OpSpec("Or", partial(_logic, "Or"), frozenset({BOOL}), since=7),
        OpSpec("Xor", partial(_logic, "Xor"), frozenset({BOOL}), since=7),
        OpSpec("PRelu", _prelu, _F, since=9),
    ]
    return out
