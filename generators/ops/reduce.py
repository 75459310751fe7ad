"""Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceSumSquare,
ReduceL2, ArgMax, ArgMin, CumSum, TopK.

Reduce* take ``axes`` as an attribute before their input form (ReduceSum at 13, the others at
18); emitters choose the form of the declared opset.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from generators.builder import GraphBuilder
from generators.ops.spec import OpSpec, axis
from generators.values import FLOAT, INT32, INT64, Value

#: op -> (opset where axes became an input, facts of the output given facts of the input)
REDUCE_AXES_INPUT = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18,
                     "ReduceProd": 18, "ReduceSumSquare": 18, "ReduceL2": 18}
_KEEPS_FACTS = {"ReduceMean", "ReduceMax", "ReduceMin"}


def reduce(b: GraphBuilder, op: str, x: Value, axes: list[int] | None = None,
           keepdims: int | None = None) -> Value:
    """``op`` over ``axes`` (random if ``None``) in the opset's form; ``keepdims`` default
    random."""
    if axes is None:
        axes = sorted(b.rng.sample(range(x.rank), b.rng.randint(1, x.rank)))
        if b.opset >= 11 and b.rng.random() < 0.4:
            axes = [a - x.rank for a in axes]
    keep = b.rng.randrange(2) if keepdims is None else keepdims
    norm = {a % x.rank for a in axes}
    out = tuple(1 if i in norm else d for i, d in enumerate(x.shape) if keep or i not in norm)
    attrs: dict = {"keepdims": keep}
    inputs = [x.name]
    if b.opset >= REDUCE_AXES_INPUT[op]:
        inputs.append(b.ints(axes, op).name)
    else:
        attrs["axes"] = axes
    props = x.props if op in _KEEPS_FACTS else (("nonneg",) if op in ("ReduceSumSquare",
                                                                     "ReduceL2") else ())
    return b.op(op, inputs, x.dtype, out, props, **attrs)


def _reduce(op: str, b: GraphBuilder, x: Value) -> Value:
    return reduce(b, op, x)


def arg(b: GraphBuilder, op: str, x: Value, a: int | None = None,
        keepdims: int | None = None) -> Value:
    """ArgMax / ArgMin along ``a`` (random if ``None``); output int64."""
    a = axis(b, x.rank) if a is None else a
    keep = b.rng.randrange(2) if keepdims is None else keepdims
    k = a % x.rank
    out = tuple(1 if i == k else d for i, d in enumerate(x.shape) if keep or i != k)
    attrs: dict = {"axis": a, "keepdims": keep}
    if b.opset >= 12 and b.rng.random() < 0.3:
        attrs["select_last_index"] = 1
    return b.op(op, [x], INT64, out, ("nonneg",), **attrs)


def _arg(op: str, b: GraphBuilder, x: Value) -> Value:
    return arg(b, op, x)


def _cumsum(b: GraphBuilder, x: Value) -> Value:
    a = b.const(np.asarray(axis(b, x.rank), np.int64), "CumSum")
    attrs = {"exclusive": b.rng.randrange(2) or None, "reverse": b.rng.randrange(2) or None}
    return b.op("CumSum", [x, a], x.dtype, x.shape, **attrs)


def _topk(b: GraphBuilder, x: Value) -> Value:
    a = axis(b, x.rank)
    k = b.rng.randint(1, x.shape[a % x.rank])
    out = tuple(k if i == a % x.rank else d for i, d in enumerate(x.shape))
    attrs: dict = {"axis": a}
    if b.opset >= 11:
        attrs["largest"] = b.rng.randrange(2)
    names = b.node("TopK", [x.name, b.ints([k], "TopK").name], n_out=2, **attrs)
    b.add(Value(names[1], INT64, out, frozenset({"nonneg"})))
    return b.add(Value(names[0], x.dtype, out, x.props))


_F = frozenset({FLOAT})
_FI = frozenset({FLOAT, INT64, INT32})


def specs() -> list[OpSpec]:
    """The reduction catalogue."""
    out = [OpSpec(op, partial(_reduce, op), _F if op not in ("ReduceSum", "ReduceMax",
                                                               "ReduceMin") else _FI,
                  (1, 4), since=7, v1=op in ("ReduceSum", "ReduceMean", "ReduceMax"))
           for op in REDUCE_AXES_INPUT]
    out += [
        OpSpec("ArgMax", partial(_arg, "ArgMax"), _F, (1, 4), v1=True),
        OpSpec("ArgMin", partial(_arg, "ArgMin"), _F, (1, 4)),
        OpSpec("CumSum", _cumsum, _F, (1, 4), since=11, weight=0.5),
        OpSpec("TopK", _topk, _F, (1, 4), since=10, weight=0.5),
    ]
    return out
