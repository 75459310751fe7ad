"""Helpers shared by the motif families of several targets (:mod:`generators.motifs.onnxruntime`,
``onnxsim``, ``onnxslim``, ``onnxscript``, ``version_converter``): the sealed emitter that keeps a
pattern's inner tensors away from later random ops, float type views, pattern constants that
live in an initializer, a Constant node or (rarely) an overridable graph input, values just
off a pattern's constant, taps that give an intermediate a second consumer or make it a graph
output, and op builders in the opset's form (Clip, Slice, MatMul, activations).

Not a motif family: it exports no ``MOTIFS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import TensorProto

from generators.builder import GraphBuilder
from generators.motifs.spec import Motif
from generators.ops.shape_ops import slice_dim, unsqueeze
from generators.schema.levels import integer_type
from generators.values import BOOL, FLOAT, FLOAT16, FLOATS, NP_DTYPE, Value, broadcast

DOUBLE = TensorProto.DOUBLE
#: Element types drawn for a pattern whose ops all have float, float16 and double kernels.
ANY_FLOAT = (FLOAT, FLOAT, FLOAT, FLOAT16, DOUBLE)
#: Element types for patterns with an op (Erf, Conv, Gelu ...) without a double kernel.
NO_DOUBLE = (FLOAT, FLOAT, FLOAT, FLOAT16)
#: ``Motif.dtypes`` of motifs that start from a float32 or float16 value.
FLOAT_INPUT = frozenset(FLOATS)

#: A motif emitter (see :class:`~generators.motifs.spec.Motif`).
Emit = Callable[[GraphBuilder, Value], "Value | None"]


def sealed(emit: Emit) -> Emit:
    """Wrap a motif emitter so that the pattern's intermediate values leave the pool: later
    random ops consume the pattern's result (or what :func:`tap` exposed), not its inner
    tensors, so the single-consumer preconditions of the fusions hold unless a motif breaks
    them on purpose."""

    def wrapped(b: GraphBuilder, x: Value) -> Value | None:
        start = len(b.pool)
        out = emit(b, x)
        if out is not None:
            b.pool[start:] = [v for v in b.pool[start:]
                              if v.name == out.name or v.name not in b.consumed]
        return out

    return wrapped


def ort_motif(name: str, passes: tuple[str, ...], emit: Emit, **kw: Any) -> Motif:
    """A :class:`Motif` for onnxruntime transformers ``passes`` with a :func:`sealed` emitter."""
    return Motif(name, passes, emit=sealed(emit), **kw)


def float_view(b: GraphBuilder, x: Value, choices: tuple[int, ...] = ANY_FLOAT) -> Value:
    """``x``, or ``x`` cast to another float type drawn from ``choices``."""
    dtype = b.rng.choice(choices)
    if dtype == x.dtype:
        return x
    return b.op("Cast", [x], dtype, x.shape, x.props, to=dtype)


def placement(b: GraphBuilder) -> str:
    """Where a pattern constant lives: an initializer mostly, a Constant node sometimes,
    rarely an initializer that is also a graph input (overridable, so not a constant to
    onnxruntime: the fusion must then leave the pattern alone)."""
    r = b.rng.random()
    return "input" if r < 0.05 else ("constant" if r < 0.3 else "initializer")


def const(b: GraphBuilder, value: float, dtype: int, shape: tuple[int, ...] | None = None,
          op: str = "Const") -> Value:
    """A constant filled with ``value``: a scalar or a one-element 1-D tensor unless
    ``shape`` is given."""
    if shape is None:
        shape = () if b.rng.random() < 0.75 else (1,)
    return b.const(np.full(shape, value, NP_DTYPE[dtype]), op, placement(b))


def near(b: GraphBuilder, value: float, p: float = 0.1) -> float:
    """``value``, or with probability ``p`` a value just off it (a pattern that must not
    match)."""
    if b.rng.random() >= p:
        return value
    return value * b.rng.choice([0.98, 1.02, 1.0005]) if value else 1e-3


def tap(b: GraphBuilder, v: Value, p: float = 0.1) -> Value:
    """With probability ``p``, make ``v`` a graph output or give it a second consumer (a
    Neg, or Not for bool, left in the pool); fusions that remove ``v``'s producer must then
    keep it."""
    r = b.rng.random()
    if r < p / 2:
        b.graph_output(v)
    elif r < p:
        b.op("Not" if v.dtype == BOOL else "Neg", [v], v.dtype, v.shape)
    return v


def near_exponent(b: GraphBuilder, value: float, p: float = 0.1) -> float:
    """A Pow exponent: ``value``, or with probability ``p`` the even integer 4 (a power the
    pattern does not have, without the NaN a fractional power gives negative bases)."""
    return 4.0 if b.rng.random() < p else value


def swap(b: GraphBuilder, a: Value, c: Value, p: float = 0.3) -> list[Value]:
    """``[a, c]``, or ``[c, a]`` with probability ``p`` (operand order of a commutative op)."""
    return [c, a] if b.rng.random() < p else [a, c]


def binary(b: GraphBuilder, op: str, x: Value, c: Value, commute: bool = True) -> Value:
    """``op(x, c)`` (operands in random order when ``commute``), shaped by broadcasting."""
    args = swap(b, x, c) if commute else [x, c]
    return b.op(op, args, x.dtype, broadcast(x.shape, c.shape))


def weight(b: GraphBuilder, shape: tuple[int, ...], dtype: int, op: str = "Const",
           positive: bool = False) -> Value:
    """A random weight of ``dtype``, placed like :func:`placement`."""
    return b.random_weight(shape, dtype, op, placement=placement(b), positive=positive)


def clip(b: GraphBuilder, x: Value, lo: float | None, hi: float | None) -> Value:
    """Clip in the opset's form (attributes before 11, optional inputs from 11)."""
    if b.opset < 11:
        return b.op("Clip", [x], x.dtype, x.shape, min=lo, max=hi)
    inputs = [x.name, const(b, lo, x.dtype, ()).name if lo is not None else ""]
    if hi is not None:
        inputs.append(const(b, hi, x.dtype, ()).name)
    while inputs[-1] == "":
        inputs.pop()
    return b.op("Clip", inputs, x.dtype, x.shape)


#: activation -> (attribute sampler, has a double kernel)
_ACTS = {
    "Relu": (lambda b: {}, True),
    "Sigmoid": (lambda b: {}, True),
    "Tanh": (lambda b: {}, True),
    "LeakyRelu": (lambda b: {"alpha": b.rng.choice([0.01, 0.2, None])}, False),
    "HardSigmoid": (lambda b: {"alpha": b.rng.choice([0.2, 1 / 6]), "beta": 0.5}, False),
    "Elu": (lambda b: {"alpha": b.rng.choice([1.0, 0.5])}, False),
    "Softplus": (lambda b: {}, False),
}


def activation(b: GraphBuilder, x: Value, extra: tuple[str, ...] = ()) -> Value:
    """An activation of ``x``: one of :data:`_ACTS` (with a double kernel if ``x`` is
    double), Clip with constant bounds, or one of ``extra``."""
    names = [n for n, (_, dbl) in _ACTS.items() if dbl or x.dtype != DOUBLE]
    clips = ["Clip"] if x.dtype != DOUBLE or b.opset >= 12 else []
    op = b.rng.choice([*names, *clips, *extra])
    if op == "Clip":
        lo, hi = b.rng.choice([(0.0, 6.0), (-1.0, 1.0), (None, 6.0), (0.0, None)])
        return clip(b, x, lo, hi)
    attrs = _ACTS[op][0](b) if op in _ACTS else {}
    return b.op(op, [x], x.dtype, x.shape, **attrs)


def matmul(b: GraphBuilder, x: Value, n: int | None = None) -> Value:
    """MatMul of ``x`` by a constant (K, n) weight of x's dtype (n random when None)."""
    n = n or b.rng.randint(1, 4)
    w = weight(b, (x.shape[-1], n), x.dtype, "MatMul")
    return b.op("MatMul", [x, w], x.dtype, (*x.shape[:-1], n))


def ints(b: GraphBuilder, values: list[int], op: str = "Const", dtype: type = np.int64) -> Value:
    """A 1-D integer constant placed like :func:`placement`."""
    return b.const(np.asarray(values, dtype=dtype), op, placement(b))


def slice_op(b: GraphBuilder, x: Value, starts: list[int], ends: list[int], axes: list[int],
             steps: list[int] | None = None) -> Value:
    """Slice in the opset's form (attributes before 10, where ``steps`` must be None); the
    output shape is computed."""
    out = list(x.shape)
    for s, e, a, st in zip(starts, ends, axes, steps or [1] * len(axes), strict=True):
        out[a % x.rank] = slice_dim(x.shape[a % x.rank], s, e, st)
    if b.opset < 10:
        return b.op("Slice", [x], x.dtype, tuple(out), x.props, starts=starts, ends=ends,
                    axes=axes)
    inputs = [x, ints(b, starts, "Slice"), ints(b, ends, "Slice")]
    if steps is not None or axes != list(range(len(axes))) or b.rng.random() < 0.5:
        inputs.append(ints(b, axes, "Slice"))
    if steps is not None:
        inputs.append(ints(b, steps, "Slice"))
    return b.op("Slice", inputs, x.dtype, tuple(out), x.props)


@dataclass(frozen=True)
class Form:
    """One form of a motif that chains several (:func:`chain_forms`): the first opset it
    exists at and what it appends to a value (its result, or None where it does not fit
    the value, which then stays as it was)."""

    since: int
    emit: Callable[[GraphBuilder, Value], Value | None]


def chain_forms(b: GraphBuilder, x: Value, forms: dict[str, Form], least: int, most: int,
                each: Callable[[GraphBuilder, Value], Value] | None = None) -> Value:
    """``least`` to ``most`` of ``forms`` (a random sample, in random order, drawn over every
    name whatever the opset) appended one after the other on ``x``, each form that exists
    at the builder's opset and fits the value at hand; ``each`` is applied to the value
    before every form drawn. Returns the last value.

    ``most`` bounds a model's size: a Python rewriter's cost grows faster than its node
    count (onnxslim's symbolic shape inference and toposort run on the whole graph in every
    round), and the first form that breaks masks every form after it, so a few forms per
    model reach more of them per second of a campaign than all of them at once."""
    y = x
    for name in b.rng.sample(list(forms), b.rng.randint(least, min(most, len(forms)))):
        if each is not None:
            y = each(b, y)
        form = forms[name]
        if b.opset >= form.since and (out := form.emit(b, y)) is not None:
            y = out
    return y


#: element types Neg takes (onnx's schema and onnxruntime's kernels agree on these).
NEGATABLE = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
                       TensorProto.INT8, TensorProto.INT16, TensorProto.INT32,
                       TensorProto.INT64})


def negated(b: GraphBuilder, x: Value) -> Value:
    """Neg of ``x``, or a copy of it (Identity) where Neg does not take its element type."""
    return b.op("Neg" if x.dtype in NEGATABLE else "Identity", [x], x.dtype, x.shape, x.props)


def held_as_planned(b: GraphBuilder, x: Value, *keys: tuple[str, str]) -> Value:
    """``x`` cast to the element type that the schema row the draw takes gives the first of
    ``keys`` (``("SequenceAt", "dtype:T")``) it gives one to, or ``x`` itself: for a motif
    whose anchors hold ``x`` in a sequence or an optional, which the row's retype cannot
    pass through (:meth:`generators.builder.GraphBuilder.planned`)."""
    level = next((lv for op, f in keys if (lv := b.planned(op, f)) not in (None, "n/a")), None)
    if level is None:
        return x
    inner = TensorProto.DataType.Value(level.upper())
    return x if inner == x.dtype else b.op("Cast", [x], inner, x.shape, to=inner)


def planned_axis(b: GraphBuilder, op: str, axis: int, rank: int) -> int:
    """The axis (``0 <= axis < rank``) a motif builds ``op`` on, fitted to the level that
    the schema row the draw takes gives ``op``'s ``axis`` attribute, so that its edit keeps
    the node's meaning (the window after it indexes that axis' dim): 0 where the row leaves
    the attribute out or at its default 0, another than 0 where it gives a non-default
    (positive) axis and ``rank > 1``, else ``axis`` as drawn. Draws nothing from the random
    stream."""
    level = b.planned(op, "attr:axis")
    if level in ("absent", "default"):
        return 0
    if level == "nondefault" and axis == 0 and rank > 1:
        return rank - 1
    return axis


def room_for_axis(b: GraphBuilder, x: Value, *ops: str) -> Value:
    """``x``, or ``x`` with unit dims put in front until it has an axis of the level that
    the schema row the draw takes gives the ``axis`` attribute of one of ``ops`` (a
    QuantizeLinear or a Softmax-11, whose default axis is 1, has a non-default one only
    from rank 3: :func:`generators.schema.levels.has_axis`). Draws nothing from the random
    stream."""
    from onnx import defs

    from generators.schema.levels import has_axis

    for op in ops:
        level = b.planned(op, "attr:axis")
        try:
            spec = defs.get_schema(op, b.opset).attributes.get("axis")
        except defs.SchemaError:
            continue
        if level not in ("nondefault", "edge") or spec is None:
            continue
        rank = x.rank
        while rank < 6 and not has_axis(op, level, spec, rank):
            rank += 1
        if rank > x.rank:
            x = unsqueeze(b, x, list(range(rank - x.rank)))
    return x


def planned_integer(b: GraphBuilder, *ops: str) -> bool:
    """Whether the schema row the draw takes gives one of ``ops`` an integer element type
    (``dtype:T``): a division the motif builds may then divide by 0."""
    return any(integer_type(b.planned(op, "dtype:T")) for op in ops)


def cast_back(b: GraphBuilder, y: Value, dtype: int) -> Value:
    """``y`` cast to ``dtype`` where it is of another element type."""
    return y if y.dtype == dtype else b.op("Cast", [y], dtype, y.shape, y.props, to=dtype)

