"""Make one motif draw take one row of its pairwise plan.

The motif emits its pattern as usual; :func:`vary` then edits the nodes it appended (the
*window*, from a :class:`Mark` to the end of the builder's node list) toward the row:

1. **element type** (``dtype:T``): the tensors of the anchor bound to ``T`` and everything
   the window's nodes tie to them through their own type constraints (a union-find over the
   schemas' type parameters) take type ``D``: the window's own weights are converted, values
   from outside come in through a Cast, the motif's result goes out through a Cast back to
   its type, graph outputs the window declared are declared in ``D`` (or, where
   onnxruntime returns no tensor of ``D``, such as bfloat16, go out through a Cast back
   too); an If, Loop or Scan among them reads and produces them through Casts at its
   bodies' edges (:mod:`generators.schema.bodies`). Refused, with the reason, where a tied
   tensor is pinned to one type by some schema, or onnxruntime has no kernel of some tied
   node for ``D`` (:mod:`generators.schema.kernels`);
2. **attributes** (``attr:a``): removed, set to the schema's default, or set to the first
   candidate of :func:`generators.schema.levels.candidates` with which the node keeps the
   output types and shapes it had (``onnx.shape_inference.infer_node_outputs``), so that
   nothing downstream changes shape; where no candidate keeps them, the first with which
   the rest of the window takes the new shapes (:mod:`generators.schema.reshape`: the
   builder's records of the changed tensors follow, strict inference and onnxruntime
   check the draw);
3. **optional inputs** (``in:x``): dropped, named ``""``, or given a weight from
   :data:`PROVIDERS` (or a scalar / one-element weight of the tied type), under the same
   checks;
4. **optional outputs** (``out:y``): named and left unused, read by an Identity whose result
   joins the pool, or made a graph output.

A level the draw cannot take is left as the motif made it and noted (``"Conv|attr:group=edge:
no candidate keeps the output shape"``; ``"ReduceSum|in:axes=absent: the output shape
changes from (2,) to (), and a Reshape's target (1, 2) cannot take ()"``); the notes are how
``coverage --schema`` explains a pair no case exercised. After the edits the partial model
must pass strict shape inference, or every edit of the draw is undone (noted too).
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, NodeProto, TensorProto, TypeProto, defs, helper, numpy_helper

from generators.builder import GraphBuilder, value_info
from generators.schema.bodies import BODIES, cast_outer_reads, retype_bodies
from generators.schema.inference import elem_of as _elem
from generators.schema.inference import infer_types
from generators.schema.inference import shape_of as _shape
from generators.schema.kernels import cast_reason, kernel_reason
from generators.schema.levels import (
    ABSENT,
    CONSUMED,
    DEFAULT,
    EDGE,
    EMPTY,
    FLAG_ATTRS,
    HUGE_INT,
    NA,
    NONDEFAULT,
    OUTPUT,
    PRESENT,
    UNUSED,
    as_attribute,
    attr_value,
    candidates,
    classify,
    has_axis,
    integer_type,
    schema_default,
)
from generators.schema.reshape import NoFit, Reshaping, follow, record
from generators.schema.rows import SEP, MotifPlan, Row
from generators.schema.rules import CONSTANT_VALUES
from generators.schema.space import OPSET, type_reason
from generators.values import NP_DTYPE, Value
from generators.versions import ir_version_for

#: element type name -> ONNX enum (``"float16"`` -> ``TensorProto.FLOAT16``).
DTYPES: dict[str, int] = {name.lower(): value
                          for name, value in TensorProto.DataType.items() if value}
#: ONNX enum -> element type name.
DTYPE_NAMES: dict[int, str] = {v: k for k, v in DTYPES.items()}


@dataclass(frozen=True)
class Mark:
    """Lengths of a builder's lists before a motif's emission (its window starts there)."""

    nodes: int
    initializers: int
    inputs: int
    outputs: int
    pool: int

    @classmethod
    def of(cls, b: GraphBuilder) -> Mark:
        """The mark of ``b`` now."""
        return cls(len(b.nodes), len(b.initializers), len(b.inputs), len(b.outputs),
                   len(b.pool))


class Refused(Exception):
    """One level a draw cannot take; its message is the reason."""


#: how the reason of a :class:`ShapeChanged` begins.
SHAPE_CHANGES = "the output shape changes"


class ShapeChanged(Refused):
    """An output of the edited node changes its static shape (the message begins with
    :data:`SHAPE_CHANGES`); the draw may still take the edit where the rest of its window
    takes the new shape (:mod:`generators.schema.reshape`)."""


class ShapeUnknown(Refused):
    """The node's own inference no longer gives an output's shape (an input it needs is
    computed, not constant: a Reshape by a Concat of Shape dims); the model-level inference
    with data propagation may still give it (:func:`model_keeps_outputs`)."""


def _consts(b: GraphBuilder) -> dict[str, TensorProto]:
    """Initializers and Constant-node values by tensor name."""
    out = {t.name: t for t in b.initializers}
    for n in b.nodes:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            out[n.output[0]] = n.attribute[0].t
    return out


# -- formal parameters -----------------------------------------------------------------------

def bindings(schema: defs.OpSchema, node: NodeProto) -> list[tuple[str, str, str]]:
    """``(tensor name, "in" | "out", type string)`` for every non-empty input and output of
    ``node`` under ``schema`` (a variadic parameter's type applies to the rest)."""
    out: list[tuple[str, str, str]] = []
    for names, params, side in ((node.input, schema.inputs, "in"),
                                (node.output, schema.outputs, "out")):
        for i, name in enumerate(names):
            if not name or not params:
                continue
            p = params[min(i, len(params) - 1)]
            if i >= len(params) and p.option != defs.OpSchema.FormalParameterOption.Variadic:
                continue
            out.append((name, side, p.type_str))
    return out


def bound_to(schema: defs.OpSchema, node: NodeProto, param: str) -> list[str]:
    """The tensors of ``node`` that ``schema`` binds to type parameter ``param``
    (:func:`bindings`), in the node's order."""
    return [name for name, _, ts in bindings(schema, node) if ts == param]


def _schema(node: NodeProto, opset: int) -> defs.OpSchema | None:
    try:
        return defs.get_schema(node.op_type, opset, node.domain)
    except defs.SchemaError:
        return None


def _type_params(schema: defs.OpSchema) -> set[str]:
    return {tc.type_param_str for tc in schema.type_constraints}


# -- the node-level check --------------------------------------------------------------------

def node_keeps_outputs(b: GraphBuilder, schema: defs.OpSchema, old: NodeProto,
                       new: NodeProto, types: dict[str, TypeProto],
                       consts: dict[str, TensorProto]) -> dict[str, TypeProto]:
    """Infer ``new``'s outputs (``new`` replacing ``old``) and check that every output
    ``old`` had keeps its element type and, where known, its shape.

    Returns:
        ``new``'s inferred output types by name.

    Raises:
        ShapeChanged: an output's shape changes.
        Refused: inference fails or an output changes otherwise.
    """
    in_types = {n: types[n] for n in new.input if n and n in types}
    if any(n and n not in in_types for n in new.input):
        raise Refused("an input's type is unknown")
    data = {n: consts[n] for n in new.input if n in consts}
    try:
        got = onnx.shape_inference.infer_node_outputs(
            schema, new, in_types, data, opset_imports=[helper.make_opsetid("", b.opset)],
            ir_version=ir_version_for(b.opset))
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        raise Refused(f"inference fails: {str(exc).splitlines()[0][:120]}") from None
    for name in old.output:
        if not name or name not in new.output:  # an output the edit leaves out
            continue
        if name not in got:
            raise Refused(f"output {name} is no longer inferred")
        if _elem(types, name) and _elem(got, name) != _elem(types, name):
            raise Refused("the output's element type changes")
        before, after = _shape(types, name), _shape(got, name)
        if before is not None and after is None:
            raise ShapeUnknown(f"the output shape changes from {before} to None")
        if before is not None and after != before:
            raise ShapeChanged(f"{SHAPE_CHANGES} from {before} to {after}")
    return got


def model_keeps_outputs(b: GraphBuilder, old: NodeProto, new: NodeProto,
                        weights: list[TensorProto],
                        types: dict[str, TypeProto]) -> dict[str, TypeProto]:
    """Like :func:`node_keeps_outputs`, but by the whole graph's inference (data propagated
    through Shape, Concat, Gather, ... as :func:`infer_types` does) with ``new`` in ``old``'s
    place and ``weights`` added; the builder is left as it was.

    Returns:
        The graph's inferred types.

    Raises:
        ShapeChanged: an output's shape changes or is no longer inferred.
        Refused: inference fails, or an output's element type changes.
    """
    i = next(k for k, n in enumerate(b.nodes) if n is old)
    b.nodes[i] = new
    b.initializers.extend(weights)
    try:
        got = infer_types(b)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        raise Refused(f"inference fails: {str(exc).splitlines()[0][:120]}") from None
    finally:
        b.nodes[i] = old
        del b.initializers[len(b.initializers) - len(weights):]
    for name in old.output:
        if not name or name not in new.output:  # an output the edit leaves out
            continue
        before, after = _shape(types, name), _shape(got, name)
        if _elem(types, name) and _elem(got, name) != _elem(types, name):
            raise Refused("the output's element type changes")
        if before is not None and after != before:
            raise ShapeChanged(f"{SHAPE_CHANGES} from {before} to {after}")
    return got


# -- optional input providers ----------------------------------------------------------------

@dataclass
class InputContext:
    """What a provider may read: the node, its schema, the graph's types, the constant
    values, and the random source."""

    node: NodeProto
    schema: defs.OpSchema
    types: dict[str, TypeProto]
    consts: dict[str, TensorProto]
    rng: Any

    def shape(self, i: int) -> tuple[int, ...] | None:
        """Static shape of the node's input ``i`` (None: absent or unknown)."""
        if not _listed(self.node, i):
            return None
        return _shape(self.types, self.node.input[i])

    def out_shape(self, i: int = 0) -> tuple[int, ...] | None:
        """Static shape of the node's output ``i``."""
        return _shape(self.types, self.node.output[i]) if i < len(self.node.output) else None

    def const(self, i: int) -> np.ndarray | None:
        """Value of the node's input ``i`` where it is a constant."""
        if i >= len(self.node.input) or self.node.input[i] not in self.consts:
            return None
        return numpy_helper.to_array(self.consts[self.node.input[i]])

    def elem(self, i: int) -> int:
        """Element type of input ``i``."""
        return _elem(self.types, self.node.input[i]) if i < len(self.node.input) else 0


def _listed(node: NodeProto, i: int) -> bool:
    """Whether ``node`` reads input ``i`` (listed, with a non-empty name)."""
    return i < len(node.input) and bool(node.input[i])


def _np(elem: int) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem))


def _conv_bias(c: InputContext) -> np.ndarray | None:
    """One bias value per output channel: Conv's weight is ``(M, C / group, k...)``,
    ConvTranspose's ``(C, M / group, k...)`` (ONNX operator docs)."""
    w = c.shape(1)
    if w is None:
        return None
    m = w[0] if c.node.op_type == "Conv" else w[1] * (_attr(c.node, "group") or 1)
    return (c.rng.gauss(0, 0.5) * np.ones(m)).astype(_np(c.elem(0)))


def _gemm_c(c: InputContext) -> np.ndarray | None:
    out = c.out_shape()
    return None if out is None else np.full(out[-1:], 0.25).astype(_np(c.elem(0)))


def _clip_bound(value: float) -> Callable[[InputContext], np.ndarray | None]:
    def provide(c: InputContext) -> np.ndarray | None:
        return np.asarray(value).astype(_np(c.elem(0)))
    return provide


def _pad_value(c: InputContext) -> np.ndarray | None:
    return np.asarray(c.rng.choice([0.0, 1.0, -1.0])).astype(_np(c.elem(0)))


def _pad_axes(c: InputContext) -> np.ndarray | None:
    x, pads = c.shape(0), c.const(1)
    if x is None or pads is None or pads.size != 2 * len(x):
        return None
    return np.arange(len(x), dtype=np.int64)


def _squeeze_axes(c: InputContext) -> np.ndarray | None:
    x = c.shape(0)
    ones = [i for i, d in enumerate(x or ()) if d == 1]
    return np.asarray(ones, np.int64) if ones else None


def _slice_axes(c: InputContext) -> np.ndarray | None:
    """Slice's axes over the leading axes, of the type of its starts (Tind binds both)."""
    starts = c.const(1)
    return None if starts is None else np.arange(starts.size).astype(starts.dtype)


def _slice_steps(c: InputContext) -> np.ndarray | None:
    """Slice's unit steps, of the type of its starts (Tind binds both)."""
    starts = c.const(1)
    return None if starts is None else np.ones(starts.size, starts.dtype)


def _all_axes(c: InputContext) -> np.ndarray | None:
    x = c.shape(0)
    return None if not x else np.arange(len(x), dtype=np.int64)


def _split_sizes(c: InputContext) -> np.ndarray | None:
    axis = next((a.i for a in c.node.attribute if a.name == "axis"), 0)
    sizes = []
    for i in range(len(c.node.output)):
        s = c.out_shape(i)
        if s is None:
            return None
        sizes.append(s[axis])
    return np.asarray(sizes, np.int64)


def _dropout_ratio(c: InputContext) -> np.ndarray | None:
    return np.asarray(c.rng.choice([0.0, 0.5])).astype(np.float32)


def _false(c: InputContext) -> np.ndarray | None:
    return np.asarray(False)


def _resized_axes(c: InputContext) -> tuple[list[int], tuple[int, ...], tuple[int, ...]] | None:
    """Resize's axes (its ``axes`` attribute, else every axis), input and output shapes;
    None where a shape is unknown or the axes do not fit them."""
    x, y = c.shape(0), c.out_shape()
    if x is None or y is None or len(x) != len(y):
        return None
    axes = _attr(c.node, "axes")
    at = [a % len(x) for a in axes] if axes else list(range(len(x)))
    return (at, x, y) if all(0 <= a < len(x) for a in at) else None


def _resize_scales(c: InputContext) -> np.ndarray | None:
    """Resize's scales that give the output shape the node has (output / input dim, per
    resized axis), float."""
    got = _resized_axes(c)
    return None if got is None else np.asarray([got[2][a] / got[1][a] for a in got[0]],
                                              np.float32)


def _resize_sizes(c: InputContext) -> np.ndarray | None:
    """Resize's sizes: the output dims the node has, per resized axis."""
    got = _resized_axes(c)
    return None if got is None else np.asarray([got[2][a] for a in got[0]], np.int64)


def _empty_float(c: InputContext) -> np.ndarray | None:
    return np.zeros((0,), np.float32)


#: ``(op, optional input) -> provider`` of a weight for a plan row's ``present`` level,
#: written where a valid value needs the op's meaning (a bias of the output channels, the
#: axes of the size-1 dims); None from a provider: nothing fits this node. Other inputs get
#: :func:`_generic_input`.
PROVIDERS: dict[tuple[str, str], Callable[[InputContext], np.ndarray | None]] = {
    ("Conv", "B"): _conv_bias,
    ("ConvTranspose", "B"): _conv_bias,
    ("Gemm", "C"): _gemm_c,
    ("Clip", "min"): _clip_bound(-1.0),
    ("Clip", "max"): _clip_bound(1.0),
    ("Pad", "constant_value"): _pad_value,
    ("Pad", "axes"): _pad_axes,
    ("Squeeze", "axes"): _squeeze_axes,
    ("Slice", "axes"): _slice_axes,
    ("Slice", "steps"): _slice_steps,
    ("Split", "split"): _split_sizes,
    ("Dropout", "ratio"): _dropout_ratio,
    ("Dropout", "training_mode"): _false,
    ("Resize", "roi"): _empty_float,
    ("Resize", "scales"): _resize_scales,
    ("Resize", "sizes"): _resize_sizes,
    **{(op, "axes"): _all_axes for op in (
        "ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")},
}


def _generic_input(c: InputContext, index: int) -> list[np.ndarray]:
    """Scalar and one-element weights of the input's type (tied through its type parameter
    to another tensor of the node, an input first, else an output: QuantizeLinear's
    y_zero_point has the type of its output; or the concrete type of the schema) to try."""
    p = c.schema.inputs[index]
    elem = 0
    if p.type_str.startswith("tensor("):
        elem = DTYPES.get(p.type_str[len("tensor("):-1], 0)
    else:
        tied = sorted((side != "in", name) for name, side, ts in bindings(c.schema, c.node)
                      if ts == p.type_str and _elem(c.types, name))
        elem = _elem(c.types, tied[0][1]) if tied else 0
    if not elem:
        return []
    dt = _np(elem)
    return [np.zeros((), dt), np.ones((1,), dt)]


# -- the variant a row-taking draw emits -----------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """Shallow copies of a builder's lists and sets (what an emission appends to), to put
    the builder back as it was: emissions append new nodes and values and leave the ones
    before them as they are."""

    state: tuple[Any, ...]

    #: the builder attributes a snapshot keeps.
    FIELDS = ("nodes", "initializers", "inputs", "input_names", "outputs", "output_names",
              "value_infos", "pool", "consumed", "functions")

    @classmethod
    def of(cls, b: GraphBuilder) -> Snapshot:
        """The snapshot of ``b`` now."""
        return cls(tuple(copy.copy(getattr(b, f)) for f in cls.FIELDS))

    def restore(self, b: GraphBuilder) -> None:
        """Put ``b``'s lists and sets back (copies, so the snapshot can be restored again)."""
        for f, v in zip(self.FIELDS, self.state, strict=True):
            setattr(b, f, copy.copy(v))


#: emissions a row-taking draw tries for one that makes every anchor op its row has
#: levels for.
VARIANT_TRIES = 4
#: emissions a draw aimed at one anchor op tries for one that makes it (a motif of many
#: variants that does not read the aim makes each of them now and then).
AIMED_TRIES = 16


def row_anchors(plan: MotifPlan, row: Row) -> set[str]:
    """The anchor ops ``row`` gives levels to (those that exist at the row's opsets)."""
    return {op for op in plan.spaces if plan.op_row(row, op)}


def emit_for_row(b: GraphBuilder, emit: Callable[[GraphBuilder, Value], Value | None],
                 x: Value, need: set[str], aim: str | None = None,
                 misfits: Callable[[GraphBuilder, int], int] | None = None,
                 repick: Callable[[], Value | None] | None = None,
                 levels: dict[str, dict[str, str]] | None = None) -> Value | None:
    """Emit a motif (``emit(b, x)``) whose draw takes a plan row that gives levels to the
    anchor ops ``need``: a motif of variants (one draw makes a Softmax, another a
    Transpose) is emitted again, up to :data:`VARIANT_TRIES` times, and the emission that
    makes the most of ``need`` is kept (the first of them on a tie). With ``aim`` (the
    anchor op of a walk step: :mod:`generators.schema.walk`) the builder's
    :attr:`~generators.builder.GraphBuilder.aim` is ``aim`` while the motif emits (a motif
    that reads it makes that op), an emission that makes ``aim`` comes before one that
    does not, and up to :data:`AIMED_TRIES` emissions are tried until one makes it. With
    ``misfits`` (the builder and the emission's first node index -> how many of the row's
    levels the emitted nodes cannot take: :func:`row_misfits`), an emission with fewer
    comes before one with more, the anchors being equal, and up to :data:`AIMED_TRIES`
    emissions are tried while some level cannot be taken; with ``repick`` (another input
    value the motif fits, or None), every second of those emissions reads a new input (a
    Conv group needs an input of more than one channel). ``levels`` (the row's levels by
    anchor op) are the builder's :attr:`~generators.builder.GraphBuilder.levels` while the
    motif emits, for a motif whose window depends on one
    (:meth:`~generators.builder.GraphBuilder.planned`). A draw that takes no row never
    comes here, so it is the draw it was.

    Returns:
        ``emit``'s result for the kept emission; None where the first emission failed.
    """
    before = Snapshot.of(b)

    def made(mark: int) -> tuple[bool, int, int]:
        ops = {n.op_type for n in b.nodes[mark:] if n.domain in ("", "ai.onnx")}
        return aim is None or aim in ops, len(need & ops), \
            -misfits(b, mark) if misfits is not None else 0

    start = len(b.nodes)
    b.aim = aim
    b.levels = levels or {}
    try:
        result = emit(b, x)
        if result is None:
            return None
        best = (made(start), Snapshot.of(b), result)
        for k in range(1, VARIANT_TRIES if aim is None and misfits is None else AIMED_TRIES):
            if best[0] == (True, len(need), 0) or (best[0][0] and not best[0][2]
                                                    and k >= VARIANT_TRIES):
                break
            before.restore(b)
            if repick is not None and best[0][2] < 0 and k % 2 == 0:
                x = repick() or x
            again = emit(b, x)
            score = made(start) if again is not None else None
            if score is not None and score > best[0]:
                best = (score, Snapshot.of(b), again)
    finally:
        b.aim = None
        b.levels = {}
    best[1].restore(b)
    return best[2]


def row_misfits(b: GraphBuilder, start: int, plan: MotifPlan, row: Row) -> int:
    """How many levels of ``row`` with a preview (:data:`PREVIEWS`) the first node of their
    anchor op among ``b.nodes[start:]`` cannot take (0 where the row has no such level, or
    no such node was emitted: :func:`emit_for_row` counts the anchors apart)."""
    checks = [(op, f, lv) for op in plan.spaces for f, lv in plan.op_row(row, op).items()
              if _preview(op, f) is not None]
    if not checks:
        return 0
    try:
        types = infer_types(b)
    except Exception:  # the emission does not infer: it can take none of them
        return len(checks)
    consts, bad = _consts(b), 0
    for op, factor, level in checks:
        node = next((n for n in b.nodes[start:] if n.op_type == op
                     and n.domain in ("", "ai.onnx")), None)
        schema = _schema(node, b.opset) if node is not None else None
        if schema is not None and not _preview(op, factor)(  # type: ignore[misc]
                InputContext(node, schema, types, consts, b.rng), level):
            bad += 1
    return bad


# -- the variation ---------------------------------------------------------------------------

class _Draw:
    """Edits of one motif draw, with the state to undo them."""

    def __init__(self, b: GraphBuilder, mark: Mark, result: Value | None,
                 anchor_ops: Iterable[str] = ()) -> None:
        self.b = b
        self.mark = mark
        self.result = result
        self.notes: list[str] = []
        #: the motif's anchor ops: nodes a retype never leaves out (:func:`_tied_part`)
        self.anchor_ops = frozenset(anchor_ops)
        #: outputs of the Casts the edits inserted (no anchor nodes of the motif's pattern)
        self.inserted: set[str] = set()
        #: anchor op -> the element types (type parameter -> type) the row is still to give
        #: it: a kernel check of one retype reads them for the node's other parameters
        #: (QLinearConv runs int8 data only with an int8 output)
        self.planned: dict[str, dict[str, str]] = {}
        self._saved = (copy.deepcopy(b.nodes[mark.nodes:]), list(b.nodes[:mark.nodes]),
                       list(b.initializers), copy.deepcopy(b.inputs), set(b.input_names),
                       copy.deepcopy(b.outputs), set(b.output_names), list(b.pool),
                       set(b.consumed), copy.deepcopy(b.value_infos))

    def undo(self) -> None:
        b = self.b
        (window, head, b.initializers, b.inputs, b.input_names, b.outputs, b.output_names,
         b.pool, b.consumed, b.value_infos) = self._saved
        b.nodes = head + window

    @property
    def window(self) -> list[NodeProto]:
        return self.b.nodes[self.mark.nodes:]

    def anchors(self, op: str) -> list[NodeProto]:
        """The window's ``op`` nodes of the default domain the motif made (not the Casts
        an element type edit inserted)."""
        return [n for n in self.window if n.op_type == op and n.domain in ("", "ai.onnx")
                and not (n.output and n.output[0] in self.inserted)]


def vary(b: GraphBuilder, mark: Mark, plan: MotifPlan, row: Row,
         result: Value | None, aim: str | None = None) -> list[str]:
    """Edit the nodes appended since ``mark`` toward plan row ``row`` (see the module
    docstring).

    Args:
        b: the builder, just after the motif's ``emit`` returned ``result``.
        mark: the builder's :class:`Mark` before the emission.
        plan: the motif's plan.
        row: one of ``plan.rows``.
        result: the Value ``emit`` returned (kept in the pool, in its element type).
        aim: the anchor op the draw was aimed at (:func:`emit_for_row`): its levels are
            taken last, so where the row gives a tied op another type, the aim's wins.

    Returns:
        Notes, one per level the draw could not take (``"Op|factor=level: reason"``); an
        empty list when it took the whole row.
    """
    draw = _Draw(b, mark, result, plan.spaces)
    try:
        notes = _vary(draw, plan, row, aim)
    except Exception as exc:  # a variation never breaks the draw: undone, noted
        draw.undo()
        return [*draw.notes, f"*: variation failed, draw undone ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:100] if str(exc) else ''})"]
    if _undone(notes):
        return notes
    why = ort_refusal(b, mark)
    if not why:
        return notes
    draw.undo()
    # onnxruntime refuses the draw as a whole: the row's element types alone, else its
    # other levels alone, where onnxruntime runs that (the levels left out are noted)
    for dtypes in (True, False):
        part = {k: lv for k, lv in row.items()
                if k == OPSET or k.split(SEP, 1)[1].startswith("dtype:") == dtypes}
        again = _Draw(b, mark, result, plan.spaces)
        try:
            kept = _vary(again, plan, part, aim)
        except Exception:  # as above: a variation never breaks the draw
            again.undo()
            continue
        if _undone(kept):
            continue
        if ort_refusal(b, mark) is None:
            return [*kept, *(f"{k}={lv}: onnxruntime refuses the draw with it ({why})"
                             for k, lv in row.items() if k not in part and lv != NA)]
        again.undo()
    return [*notes, f"*: onnxruntime refuses the varied draw, draw undone ({why})"]


def _undone(notes: list[str]) -> bool:
    """Whether :func:`_vary` undid the draw because its graph did not infer."""
    return bool(notes) and notes[-1].startswith(_UNDONE)


#: the start of :func:`_vary`'s last note where it undid the draw.
_UNDONE = "*: the varied graph does not infer, draw undone"


def _vary(draw: _Draw, plan: MotifPlan, row: Row, aim: str | None = None) -> list[str]:
    b = draw.b
    try:
        types = infer_types(b)
    except Exception as exc:  # the motif's own graph: leave it as it is
        return [f"*: the motif's graph does not infer ({str(exc).splitlines()[0][:100]})"]
    draw.planned = {op: {f[len("dtype:"):]: lv for f, lv in plan.op_row(row, op).items()
                         if f.startswith("dtype:")} for op in plan.spaces}
    for op in sorted(plan.spaces, key=lambda o: o == aim):
        levels = plan.op_row(row, op)
        if not levels:  # the op does not exist at the row's opsets
            continue
        anchors = draw.anchors(op)
        if not anchors:
            draw.notes.append(f"{op}|*: the draw made no {op} node")
            continue
        types, deferred = _retype_levels(draw, op, {f: lv for f, lv in levels.items()
                                                     if f.startswith("dtype:")}, types, True)
        anchors = draw.anchors(op)
        consts = _consts(b)
        for node in anchors:
            schema = _schema(node, b.opset)
            if schema is None:
                continue
            _vary_node(draw, node, schema, levels, types, consts)
            types = infer_types(b)
            consts = _consts(b)
        if deferred:  # bound now that the node has the optional input the row asks for
            types, _ = _retype_levels(draw, op, deferred, types, False)
    error = _strict_error(b)
    if error is not None:
        notes = draw.notes
        draw.undo()
        return [*notes, f"{_UNDONE} ({error})"]
    _note_lost_types(draw, plan, row, infer_types(b))
    return draw.notes


def _note_lost_types(draw: _Draw, plan: MotifPlan, row: Row,
                     types: dict[str, TypeProto]) -> None:
    """Note each ``dtype:T`` level of ``row`` that the first ``op`` node of the window does
    not hold after all the edits and that no note explains yet: a later edit that failed
    undid it with the rest of the draw's edits, or a later retype of a tied op gave it
    another type (a row can give tied parameters of different variants different types);
    the notes name it, so no level is lost silently."""
    noted = {n.split(": ", 1)[0] for n in draw.notes}  # "Op|dtype:T=int8: why"
    for op in plan.spaces:
        for factor, level in plan.op_row(row, op).items():
            if not factor.startswith("dtype:") or f"{op}|{factor}={level}" in noted:
                continue
            got = DTYPE_NAMES.get(_held_type(draw, op, factor[len("dtype:"):], types), "")
            if got and got != level:
                draw.notes.append(f"{op}|{factor}={level}: the node is {got} after the "
                                  f"draw's edits (a later edit undid the retype or retyped "
                                  f"a tied op)")


def _held_type(draw: _Draw, op: str, param: str, types: dict[str, TypeProto]) -> int:
    """The element type the first ``op`` node of the draw's window has for its type
    parameter ``param`` (0 where there is no such node, no tensor of it is bound to
    ``param`` or inference gives it no type)."""
    anchors = draw.anchors(op)
    schema = _schema(anchors[0], draw.b.opset) if anchors else None
    seeds = bound_to(schema, anchors[0], param) if schema is not None else []
    return _elem(types, seeds[0]) if seeds else 0


class Unbound(Refused):
    """No tensor of the node is bound to the type parameter (yet: the only ones are
    optional inputs or outputs the node does not list)."""


def _retype_levels(draw: _Draw, op: str, levels: dict[str, str],
                   types: dict[str, TypeProto],
                   defer: bool) -> tuple[dict[str, TypeProto], dict[str, str]]:
    """Give the first ``op`` node of the draw's window each ``dtype:T`` level of ``levels``
    (:func:`_retype`), noting what it cannot take; with ``defer``, a parameter no tensor of
    the node is bound to yet is not noted but handed back, to be retyped after the node's
    optional inputs are edited (Pad's ``Tind`` is bound only by its ``axes`` input).

    Returns:
        The graph's types after the edits, and the deferred ``factor -> level``.
    """
    b, deferred = draw.b, {}
    for factor, level in levels.items():
        draw.planned.get(op, {}).pop(factor[len("dtype:"):], None)
        anchors = draw.anchors(op)
        if not anchors:
            draw.notes.append(f"{op}|{factor}={level}: the draw has no {op} node left")
            continue
        before = _Draw(b, draw.mark, draw.result)  # the draw before this retype
        try:
            if _retype(draw, anchors[0], factor[len("dtype:"):], level, types):
                types = infer_types(b, strict=True)
                held = _held_type(draw, op, factor[len("dtype:"):], types)
                if held and held != DTYPES.get(level):
                    # the node's type comes from an optional input it does not list yet
                    # (a QuantizeLinear without y_zero_point makes uint8): after its edits
                    before.undo()
                    types = infer_types(b)
                    raise Unbound(f"the node keeps its type without the optional input "
                                  f"that carries {factor[len('dtype:'):]}")
        except Unbound as exc:
            if defer:
                deferred[factor] = level
            else:
                draw.notes.append(f"{op}|{factor}={level}: {exc}")
        except Refused as exc:
            draw.notes.append(f"{op}|{factor}={level}: {exc}")
        except Exception as exc:  # this retype alone is undone
            before.undo()
            draw.notes.append(f"{op}|{factor}={level}: the retyped graph does not infer "
                              f"({str(exc).splitlines()[0][:100]})")
            types = infer_types(b)
    return types, deferred


#: a node a type cannot go through: the node, the reason, and the one type it takes where
#: its schema binds the tied tensor to a concrete type (None: it takes none).
Stop = tuple[NodeProto, str, str | None]


def type_component(window: list[NodeProto], opset: int,
                   seeds: list[str]) -> tuple[set[str], dict[int, set[str]], list[Stop]]:
    """The tensors tied to ``seeds`` through the type parameters of the ``window``'s nodes
    (a union-find over tensor names: two tensors a node binds to one type parameter are
    tied).

    Returns:
        ``(tensors, {id(node): its tied type parameters}, stops)``: ``stops`` lists the
        nodes a tied tensor reaches that cannot follow a type: one whose schema binds the
        tensor to a concrete type (``"Reshape pins a tied tensor to tensor(int64)"``, with
        that type), one without a schema, one whose subgraph would see the type.
    """
    schemas = {id(n): _schema(n, opset) for n in window}
    comp = set(seeds)
    touched: dict[int, set[str]] = {}
    stops: list[Stop] = []
    changed = True
    while changed:
        changed = False
        for n in window:
            s = schemas[id(n)]
            if s is None:
                if comp & {*n.input, *n.output} and all(st[0] is not n for st in stops):
                    stops.append((n, f"{n.op_type} has no schema to follow the type "
                                     "through", None))
                continue
            groups: dict[str, set[str]] = {}
            for name, _, ts in bindings(s, n):
                groups.setdefault(ts, set()).add(name)
            for ts, names in groups.items():
                if not names & comp:
                    continue
                if ts not in _type_params(s):
                    if all(st[0] is not n or st[2] != ts for st in stops):
                        stops.append((n, f"{n.op_type} pins a tied tensor to {ts}",
                                      ts[len("tensor("):-1]))
                    continue
                if n.op_type not in ("If", "Loop", "Scan") and any(
                        a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)
                        for a in n.attribute):
                    if all(st[0] is not n for st in stops):
                        stops.append((n, f"the type reaches the subgraph of {n.op_type}",
                                      None))
                    continue
                touched.setdefault(id(n), set()).add(ts)
                if not names <= comp:
                    comp |= names
                    changed = True
    return comp, touched, stops


#: element types onnxruntime's Python API can hand back as numpy arrays.
FETCHABLE = frozenset({
    TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BOOL,
    TensorProto.STRING, TensorProto.INT8, TensorProto.INT16, TensorProto.INT32,
    TensorProto.INT64, TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32,
    TensorProto.UINT64})


def _ort_message(text: str) -> str:
    """onnxruntime's error without its source paths, C++ signatures and node names (the
    part that says what is wrong), on one line of at most 160 characters."""
    line = " ".join(text.split())
    line = re.sub(r"\[ONNXRuntimeError\] : \d+ : \w+ : ", "", line)
    line = re.sub(r"/onnxruntime_src/\S+:\d+ ", "", line)
    line = re.sub(r"(onnxruntime|std)::[\w:<>,~ ]*\([^)]*\)( const)? ", "", line)
    line = re.sub(r"Name:'[^']*' ", "", line)
    return line[:160]


def ort_refusal(b: GraphBuilder, mark: Mark, shapes: bool = False) -> str | None:
    """Run the nodes appended since ``mark`` alone in onnxruntime (CPU, no graph
    optimization), their outside inputs fed as :mod:`generators.inputs` feeds a model:
    None when it runs, else onnxruntime's first line. (What the schema, the rules and the
    kernel registry let through but a kernel still refuses: an axis out of range, a Pad
    mode a short axis cannot take, an empty-named input a kernel reads.) With ``shapes``,
    also the first output whose shape differs from the one inference gives (an op version
    whose inference onnxruntime does not follow: Unsqueeze-1 with negative axes)."""
    import onnxruntime as ort

    from generators.inputs import synthesize_inputs

    window = b.nodes[mark.nodes:]
    if not window:
        return None
    try:
        types = infer_types(b)
    except Exception as exc:
        return str(exc).splitlines()[0][:120]
    produced = {o for n in window for o in n.output if o}
    inits = {t.name: t for t in b.initializers}
    consumed: list[str] = []
    for n in window:
        for x in n.input:
            if x and x not in produced and x not in consumed:
                consumed.append(x)
        for a in n.attribute:  # outer-scope reads of subgraph bodies
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                inner = {o for m in g.node for o in m.output} | {i.name for i in g.input} | \
                    {t.name for t in g.initializer}
                for m in g.node:
                    for x in m.input:
                        if x and x not in inner and x not in produced and x not in consumed:
                            consumed.append(x)
    g = onnx.GraphProto()
    g.name = "probe"
    g.node.extend(window)
    for x in consumed:
        if x in inits:
            g.initializer.append(inits[x])
        elif x in types and _shape(types, x) is not None:
            g.input.append(value_info(x, _elem(types, x), _shape(types, x)))
        else:
            return None  # an input of unknown shape: nothing to feed it
    # onnxruntime returns no bfloat16, float 8 or 4-bit tensor, and refuses a session that
    # fetches a sparse Constant's output ("Missing Input", or "do not support dims higher
    # than 2" for its indices), which a model reads only through its consumers
    sparse = {n.output[0] for n in window if n.op_type == "Constant" and n.output
              and any(a.name == "sparse_value" for a in n.attribute)}
    for o in sorted(produced - sparse):
        if o in types and _elem(types, o) in FETCHABLE:
            g.output.append(onnx.helper.make_value_info(o, types[o]))
    if not g.output:
        return None
    imports = [helper.make_opsetid("", b.opset)] + [
        helper.make_opsetid(d, 1) for d in sorted({n.domain for n in window} - {"", "ai.onnx"})]
    m = helper.make_model(g, opset_imports=imports, ir_version=max(ir_version_for(b.opset), 4))
    m.functions.extend(b.functions)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    try:
        feeds = synthesize_inputs(m, 0)
        sess = ort.InferenceSession(m.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        got = sess.run(None, feeds)
    except Exception as exc:
        return _ort_message(str(exc))
    for vi, arr in zip(g.output, got, strict=True) if shapes else ():
        want = _shape(types, vi.name)
        if want is not None and tuple(np.shape(arr)) != want:
            return f"it gives {vi.name} the shape {tuple(np.shape(arr))}, inference {want}"
    return None


def _retype(draw: _Draw, anchor: NodeProto, param: str, level: str,
            types: dict[str, TypeProto]) -> bool:
    """Give the tensors tied to ``anchor``'s type parameter ``param`` the element type
    named ``level``; False when they have it already.

    Raises:
        Refused: why the window cannot take the type.
    """
    b = draw.b
    target = DTYPES.get(level)
    if not target:
        raise Refused(f"unknown element type {level}")
    schema = _schema(anchor, b.opset)
    if schema is None:
        raise Refused("no schema")
    seeds = bound_to(schema, anchor, param)
    if not seeds:
        raise Unbound(f"no tensor of the node is bound to {param}")
    current = _elem(types, seeds[0])
    if not current:
        raise Refused("the tensor's element type is unknown")
    if current == target:
        return False
    comp, touched, cut = _tied_part(draw, anchor, seeds, level, types)
    window = [n for n in draw.window if id(n) not in cut]
    cur_name = DTYPE_NAMES[current]
    produced = {o for n in window for o in n.output if o}
    window_inits = {t.name: i for i, t in enumerate(b.initializers)
                    if i >= draw.mark.initializers}
    if anchor.op_type == "Constant":  # the anchor itself is retyped as a `value` tensor
        _as_value_tensor(anchor)
    constants = {n.output[0]: n for n in window if n.op_type == "Constant"
                 and n.attribute and n.attribute[0].name == "value"}
    # a Constant in another attribute form (value_float, value_ints, ...) stays as it is and
    # comes in through a Cast after it, like a value from outside the window; so does what
    # a node left out of the tied part produces
    other_forms = {n.output[0]: n for n in window if n.op_type == "Constant"
                   and n.output[0] not in constants}
    other_forms |= {o: n for n in draw.window if id(n) in cut for o in n.output if o in comp}
    external = sorted(comp - (produced - set(other_forms)) - set(window_inits))
    for name in external:
        if _elem(types, name) != current:
            raise Refused(f"a tied input is of another element type than {cur_name}")
    if external:
        why = cast_reason(cur_name, level, b.opset)
        if why:
            raise Refused(why)
    # (a result a node left out of the tied part makes keeps its type: no Cast back)
    escaping = draw.result is not None and draw.result.name in comp and \
        draw.result.name not in external
    # tensors that go out through a Cast back: the result, and the graph outputs the window
    # declared where onnxruntime returns no tensor of the new type
    back = [draw.result.name] if escaping else []  # type: ignore[union-attr]
    if target not in FETCHABLE:
        declared = {vi.name for vi in b.outputs[draw.mark.outputs:]}
        back += sorted((comp & produced & declared) - set(external) - set(back))
    cut_reads = any(x in comp and x not in external for n in draw.window if id(n) in cut
                    for x in n.input)
    if back or cut_reads:
        why = cast_reason(level, cur_name, b.opset)
        if why:
            raise Refused(why)
    # weights of the window
    feedable = target in NP_DTYPE
    divisors = {n.input[1] for n in window if n.op_type in DIVIDING and len(n.input) > 1}
    for name, i in window_inits.items():
        if name in comp:
            b.initializers[i] = _converted(b.initializers[i], target, name in divisors)
            for vi in list(b.inputs[draw.mark.inputs:]):
                if vi.name == name and feedable:
                    vi.type.tensor_type.elem_type = target
                elif vi.name == name:  # no feed of this type: a plain initializer
                    b.inputs.remove(vi)
                    b.input_names.discard(name)
    for name, node in constants.items():
        if name in comp:
            node.attribute[0].t.CopyFrom(_converted(node.attribute[0].t, target,
                                                    name in divisors))
    for n in window:
        if any(o in comp for o in n.output):
            for a in n.attribute:
                if n.op_type == "Cast" and a.name == "to":
                    a.i = target
                elif n.op_type == "ConstantOfShape" and a.name == "value":
                    a.t.CopyFrom(_converted(a.t, target))
    # a control-flow node's bodies produce and read its tied values through Casts
    for n in window:
        if touched.get(id(n)) and n.op_type in BODIES:
            s = _schema(n, b.opset)
            assert s is not None
            retype_bodies(n, s.since_version, comp, target, current,
                          lambda: b.namer.tensor("Cast"))
    # values from outside come in through a Cast
    renames: dict[str, str] = {}
    head: list[NodeProto] = []
    after: dict[str, NodeProto] = {}
    for name in external:
        new = b.namer.tensor("Cast")
        renames[name] = new
        cast = helper.make_node("Cast", [name], [new], to=target)
        if name in other_forms:
            after[name] = cast
        else:
            head.append(cast)
    # the result (and unfetchable graph outputs) go out through a Cast back
    tail: list[NodeProto] = []
    for old in back:
        inner = b.namer.tensor(anchor.op_type)
        renames[old] = inner
        tail.append(helper.make_node("Cast", [inner], [old], to=current))
    # a node left out of the tied part reads the retyped values through a Cast back
    before: list[tuple[NodeProto, NodeProto]] = []
    for n in draw.window:
        if id(n) in cut:
            for i, x in enumerate(n.input):
                if x in comp and x not in external:
                    n.input[i] = b.namer.tensor("Cast")
                    before.append((n, helper.make_node("Cast", [renames.get(x, x)],
                                                       [n.input[i]], to=current)))
    # a body that reads a retyped value from outside reads it through a Cast back
    inside = {x: renames.get(x, x) for x in comp - set(external)}
    for n in draw.window:
        cast_outer_reads(n, inside, current, lambda: b.namer.tensor("Cast"))
    draw.inserted.update(n.output[0] for n in [*head, *after.values(), *tail,
                                               *(c for _, c in before)])
    for n in window:
        for i, x in enumerate(n.input):
            if x in renames:
                n.input[i] = renames[x]
        for i, x in enumerate(n.output):
            if x in renames and x not in external:
                n.output[i] = renames[x]
    for name, cast in after.items():
        b.nodes.insert(b.nodes.index(other_forms[name]) + 1, cast)
    for n, cast in before:
        b.nodes.insert(b.nodes.index(n), cast)
    b.nodes[draw.mark.nodes:draw.mark.nodes] = head
    b.nodes.extend(tail)
    b.consumed.update(renames.values())
    b.consumed.update(external)
    if escaping:
        b.consumed.discard(draw.result.name)  # type: ignore[union-attr]
    # graph outputs the window declared, and the value_info of its tensors (a motif that
    # annotates its intermediates), now carry the new type; other tied pooled values leave
    # the pool (a later op would read them in the old type). Values from outside keep their
    # type (the window reads them through a Cast) and their records: a graph input the
    # window declared with a symbolic dim keeps the size it is fed, which the checks of
    # the later edits read (inference alone gives it no static shape).
    for vi in [*b.outputs[draw.mark.outputs:], *b.value_infos]:
        if vi.name in comp and vi.name not in renames:
            vi.type.tensor_type.elem_type = target
    keep = {draw.result.name} if escaping else set()  # type: ignore[union-attr]
    b.pool[draw.mark.pool:] = [v for v in b.pool[draw.mark.pool:]
                               if v.name not in comp or v.name in keep
                               or v.name in external]
    return True


def _tied_part(draw: _Draw, anchor: NodeProto, seeds: list[str], level: str,
               types: dict[str, TypeProto]) -> tuple[set[str], dict[int, set[str]], set[int]]:
    """The tensors of the draw's window tied to ``seeds`` that take type ``level``
    (:func:`type_component`), with each window node's tied type parameters, once the
    nodes that cannot take ``level`` are left out: a node of an op that is not one of the
    motif's anchors (a Tanh the motif puts before a ReduceL1 to bound its input, a Constant
    of an opset whose Constant has no such type) keeps its type and is left out, its
    values going through Casts, so the anchors still take the level.

    Returns:
        ``(tensors, {id(node): its tied type parameters}, ids of the nodes left out)``.

    Raises:
        Refused: an anchor node cannot take the level, or a tied tensor reaches it where
            it cannot follow a type (:func:`type_component`'s stops).
    """
    b, cut = draw.b, set()
    constant = {t.name for t in b.initializers} | {
        o for n in b.nodes if n.op_type == "Constant" for o in n.output}
    while True:
        window = [n for n in draw.window if id(n) not in cut]
        comp, touched, stops = type_component(window, b.opset, seeds)
        bad = next(((n, why) for n, why, takes in stops if takes != level), None) or next(
            ((n, why) for n in window if touched.get(id(n)) and
             (why := (n.op_type not in draw.anchor_ops and
                      _divides_by_computed(n, level, constant)) or
              _tied_refusal(n, touched[id(n)], level, types, b.opset,
                            draw.planned.get(n.op_type)))), None)
        if bad is None:
            return comp, touched, cut
        node, why = bad
        if node is anchor or node.op_type in draw.anchor_ops:
            raise Refused(why)
        cut.add(id(node))


def _divides_by_computed(node: NodeProto, level: str, constant: set[str]) -> str | None:
    """Why a Div or Mod that is none of the motif's anchors cannot take integer type
    ``level``: its divisor is computed (no name of ``constant``), and may be 0 in an
    integer type where it runs (a variance plus epsilon), which onnxruntime refuses; None
    otherwise (a constant divisor's zeros become 1: :func:`_converted`). An anchor Div
    takes the type: onnxruntime runs the draw."""
    if node.op_type in DIVIDING and integer_type(level) and \
            len(node.input) > 1 and node.input[1] not in constant:
        return f"an integer {node.op_type} by a computed divisor may divide by zero"
    return None


def _tied_refusal(node: NodeProto, params: set[str], level: str,
                  types: dict[str, TypeProto], opset: int,
                  planned: dict[str, str] | None = None) -> str | None:
    """Why ``node`` cannot take type ``level`` for its type parameters ``params`` (its
    schema, or onnxruntime's kernels given the types of its other parameters: those the
    row is still to give it, ``planned`` (type parameter -> type), else their types now),
    or None."""
    s = _schema(node, opset)
    assert s is not None
    why = type_reason(s, {ts: level for ts in params})
    if why or node.op_type == "Constant":  # onnxruntime folds a Constant: no kernel needed
        return why
    binds = {**(planned or {}), **{ts: level for ts in params}}
    for name, _, ts in bindings(s, node):
        if ts not in binds and ts in _type_params(s) and _elem(types, name):
            binds[ts] = DTYPE_NAMES.get(_elem(types, name), "?")
    return kernel_reason(node.op_type, node.domain, s.since_version, binds)


#: ops whose input 1 divides: a constant there that a retype to an integer type rounds to 0
#: becomes 1 (onnxruntime refuses an integer division by zero, at initialization where the
#: divisor is constant).
DIVIDING = frozenset({"Div", "Mod"})


def _converted(t: TensorProto, target: int, divisor: bool = False) -> TensorProto:
    """``t``'s values in element type ``target`` (same name; clipped to an integer type's
    range, rounded toward zero; non-zero is True); a ``divisor``'s zeros in an integer type
    become 1."""
    with np.errstate(over="ignore", invalid="ignore"):
        new = _convert(t, target)
    if divisor and _np(target).kind in "iu":
        arr = numpy_helper.to_array(new)
        if not arr.all():
            new = numpy_helper.from_array(np.where(arr == 0, 1, arr).astype(arr.dtype), t.name)
    return new


def _convert(t: TensorProto, target: int) -> TensorProto:
    arr = numpy_helper.to_array(t)
    dt = _np(target)
    if target == TensorProto.STRING:  # as onnxruntime's Cast writes them: a bool as 0 or 1
        out = np.array([str(int(v) if arr.dtype == bool else v).encode()
                        for v in arr.reshape(-1)], dtype=object).reshape(arr.shape)
    elif dt.kind in "iu" and arr.dtype.kind in "fiu":  # clipped, not wrapped: a Slice end
        # of INT64_MAX stays "to the end" in int32, 1e20 the largest. The bounds are compared
        # in the source type and written as integers; only values strictly inside them are
        # cast (a float64 INT64_MAX is 2**63, past int64, so it must not be cast)
        info = np.iinfo(dt)
        src = np.nan_to_num(arr)
        high, low = src >= info.max, src <= info.min
        out = np.where(high | low, 0, src).astype(dt)
        out[high], out[low] = info.max, info.min
    elif dt.kind == "V" or str(dt) in ("int4", "uint4"):
        out = arr.astype(np.float32).astype(dt)
    else:
        out = arr.astype(dt)
    new = numpy_helper.from_array(out, t.name)
    return new


#: an edit of a copy of an anchor node: changes the copy in place and returns the weights
#: it needs, and the nodes to put before it that compute an input it now reads (a
#: :data:`FEEDERS` entry's), and what to do once the copy replaced the node (given the
#: inferred types).
Edit = Callable[[NodeProto], tuple[list[TensorProto | NodeProto],
                                   Callable[[dict[str, TypeProto]], None]]]
#: attributes a non-default value of which drops others (onnxruntime refuses both).
COMPANIONS: dict[str, tuple[str, ...]] = {"auto_pad": ("pads",)}


def _nothing(types: dict[str, TypeProto]) -> None:
    return None


def _vary_node(draw: _Draw, node: NodeProto, schema: defs.OpSchema, levels: dict[str, str],
               types: dict[str, TypeProto], consts: dict[str, TensorProto]) -> None:
    """Attributes, optional inputs (last first) and optional outputs of one anchor node:
    first every level at once with each one's first candidate (levels a rule couples, such
    as BatchNormalization's training mode and its outputs, only pass together), then, if
    that fails, one level at a time with every candidate."""
    b = draw.b
    op = node.op_type
    rank = len(_shape(types, node.input[0]) or ()) if node.input and node.input[0] else None
    formal_in = [p.name for p in schema.inputs]
    formal_out = [p.name for p in schema.outputs]
    steps: list[tuple[str, str, list[Edit]]] = []
    refused: list[str] = []  # why each level of TOGETHER was refused outright
    for factor, level in levels.items():
        try:
            if factor.startswith("attr:") and factor[5:] in schema.attributes:
                trials = _attr_edits(b, node, schema, factor[5:], level, rank,
                                     InputContext(node, schema, types, consts, b.rng))
            elif factor.startswith("out:") and factor[4:] in formal_out:
                trials = _output_edits(b, node, formal_out.index(factor[4:]), level)
            else:
                continue
        except Refused as exc:
            draw.notes.append(f"{op}|{factor}={level}: {exc}")
            if factor in TOGETHER.get(op, ()):
                refused.append(f"{exc} (held only together with {factor}={level})")
            continue
        if trials:
            steps.append((factor, level, trials))
    if refused:  # levels that hold only together with a refused one are not tried
        draw.notes += [f"{op}|{f}={lv}: {refused[0]}" for f, lv, _ in steps
                       if f in TOGETHER.get(op, ())]
        steps = [t for t in steps if t[0] not in TOGETHER.get(op, ())]
    wanted = sorted(((formal_in.index(f[3:]), f, lv) for f, lv in levels.items()
                     if f.startswith("in:") and f[3:] in formal_in), reverse=True)
    for index, factor, level in wanted:
        try:
            trials = _input_edits(b, node, schema, index, level, types, consts)
        except Refused as exc:
            draw.notes.append(f"{op}|{factor}={level}: {exc}")
            continue
        if trials:
            steps.append((factor, level, trials))
    if not steps:
        return
    if _commit_first(draw, node, schema, [[t[2][0] for t in steps]], types, consts) is None:
        return
    coupled = [t for t in steps if not t[0].startswith("attr:") or t[0][5:] in FLAG_ATTRS]
    if len(coupled) > 1 and _commit_first(draw, node, schema, [[t[2][0] for t in coupled]],
                                          types, consts) is None:
        steps = [t for t in steps if t not in coupled]
        types = infer_types(b)
        consts = _consts(b)
    together = [t for t in steps if t[0] in TOGETHER.get(op, ())]
    rounds = [([(f, lv)], [[edit] for edit in trials]) for f, lv, trials in steps
              if len(together) < 2 or (f, lv, trials) not in together]
    if len(together) > 1:  # their candidates at once, as one step (the first few mixes)
        mixes = itertools.islice(itertools.product(*(t[2] for t in together)), MIXES)
        rounds.append(([(f, lv) for f, lv, _ in together], [list(m) for m in mixes]))
    for levels_of, trials in rounds:
        why = _commit_first(draw, node, schema, trials, types, consts)
        if why is None:
            types = infer_types(b)
            consts = _consts(b)
        else:
            draw.notes += [f"{op}|{factor}={level}: {why}" for factor, level in levels_of]


#: op -> factors whose levels only hold together (Resize takes exactly one of scales and
#: sizes: an edit of one alone is refused whichever comes first); a draw edits them as one
#: step.
TOGETHER: dict[str, frozenset[str]] = {
    "Resize": frozenset({"in:scales", "in:sizes"}),
    # a Constant holds exactly one of its value attributes
    "Constant": frozenset(f"attr:{a}" for a in CONSTANT_VALUES),
}


#: why a draw for a target that loads no sparse tensor (onnxoptimizer, onnxscript's
#: onnx_ir, the version converter: ``Target.takes_sparse_constants``) sets no sparse
#: attribute: the target refuses the model before any rewrite.
NO_SPARSE = "the target loads no sparse tensor (the builder makes none for it)"


#: mixes of candidates a step of :data:`TOGETHER` levels tries.
MIXES = 16


def _commit_first(draw: _Draw, node: NodeProto, schema: defs.OpSchema,
                  trials: list[list[Edit]], types: dict[str, TypeProto],
                  consts: dict[str, TensorProto]) -> str | None:
    """Commit the first of ``trials`` (each a list of edits made at once) with which the
    node keeps its output shapes; where none does, the first of those that change them
    that the draw's window takes with the new shapes (:func:`_commit` with the draw's
    window). Where inference gives the node's outputs no shape (a Slice to a computed
    end), nothing tells that an edit keeps them: onnxruntime runs the window
    (:func:`ort_refusal`) before the edit stands. Returns None on success, else the last
    trial's reason (nothing changed)."""
    last = "no candidate keeps the node valid"
    reshaping = []
    unseen = any(o and _shape(types, o) is None for o in node.output)
    for edits in trials:
        before, old = (Snapshot.of(draw.b), copy.deepcopy(node)) if unseen else (None, None)
        why = _commit(draw.b, node, schema, edits, types, consts)
        if why is None and before is not None and \
                (refused := ort_refusal(draw.b, draw.mark, shapes=True)):
            before.restore(draw.b)  # no shape to check it by: onnxruntime runs it
            node.CopyFrom(old)
            why = f"onnxruntime refuses it (inference gives no shape to check: {refused})"
        if why is None:
            return None
        if why.startswith(SHAPE_CHANGES):
            reshaping.append(edits)
        last = why
    for edits in reshaping:
        why = _commit(draw.b, node, schema, edits, types, consts, draw.mark)
        if why is None:
            return None
        last = why
    return last


def _commit(b: GraphBuilder, node: NodeProto, schema: defs.OpSchema, edits: list[Edit],
            types: dict[str, TypeProto], consts: dict[str, TensorProto],
            window: Mark | None = None) -> str | None:
    """Apply ``edits`` to a copy of ``node``; if the copy keeps the node's output types and
    shapes and onnxruntime takes it, replace the node, add the weights and run the
    follow-ups. With ``window`` (the draw's :class:`Mark`), output shapes may change where
    the window takes them (:func:`generators.schema.reshape.follow`): the builder's records
    get the new shapes (:func:`generators.schema.reshape.record`), and the edit stands if
    the graph then passes strict inference and onnxruntime runs the window
    (:func:`ort_refusal`). Returns None on success, else the reason (nothing changed)."""
    new = NodeProto()
    new.CopyFrom(node)
    weights: list[TensorProto] = []
    feeders: list[NodeProto] = []
    posts = []
    try:
        for edit in edits:
            got_w, post = edit(new)
            weights += [w for w in got_w if isinstance(w, TensorProto)]
            feeders += [w for w in got_w if isinstance(w, NodeProto)]
            posts.append(post)
    except Refused as exc:
        return str(exc)
    if (settle := SETTLERS.get(new.op_type)) is not None:
        settle(new, types)
    t_types, t_consts = dict(types), dict(consts)
    for t in weights:
        t_types[t.name] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
        t_consts[t.name] = t
    for f in feeders:
        if (why := _feeder_types(b, f, t_types)) is not None:
            return why
    why = runtime_reason(new, t_types)
    if why:
        return why
    reshaped: tuple[Mark, Reshaping, str] | None = None
    try:
        try:
            got = node_keeps_outputs(b, schema, node, new, t_types, t_consts)
        except ShapeUnknown as unknown:
            if feeders:
                return str(unknown)
            got = model_keeps_outputs(b, node, new, weights, types)
    except ShapeChanged as exc:
        if window is None or feeders:
            return str(exc)
        try:
            reshaping = follow(b, window.nodes, window.pool, node, new, weights)
        except NoFit as fit:
            return f"{exc}, and {fit}"
        reshaped, got = (window, reshaping, str(exc)), dict(reshaping.types)
    except Refused as exc:
        return str(exc)
    # a new graph output needs its shape (the checker wants it); a reader of a new output
    # of unknown shape keeps its result out of the pool (the output edits' posts)
    declared = {getattr(p, "graph_output", None) for p in posts}
    for i, name in enumerate(new.output):
        if name and _shape(got, name) is None:
            like = _known_output_shape(new, schema, i, t_types, got) or \
                _sibling_shape(schema, new, i, got)
            if like is not None:
                got[name] = helper.make_tensor_type_proto(_elem(got, name), list(like))
            elif name not in node.output and name in declared:
                return "the new output's shape is not inferred"
    if reshaped is None:
        _place(b, node, new, weights)
        at = next(i for i, n in enumerate(b.nodes) if n is node)
        b.nodes[at:at] = feeders
    else:
        window, reshaping, changed = reshaped
        why = _place_reshaped(b, node, new, weights, window, reshaping)
        if why:
            return f"{changed}, and {why}"
    for post in posts:
        post(got)
    return None


def _feeder_types(b: GraphBuilder, feeder: NodeProto,
                  types: dict[str, TypeProto]) -> str | None:
    """Add the inferred types of ``feeder``'s outputs (a node an edit puts before the
    anchor node: :data:`FEEDERS`) to ``types``; the reason where inference fails."""
    schema = _schema(feeder, b.opset)
    if schema is None or any(n not in types for n in feeder.input if n):
        return f"the {feeder.op_type} the edit puts before the node does not infer"
    try:
        types.update(onnx.shape_inference.infer_node_outputs(
            schema, feeder, {n: types[n] for n in feeder.input if n},
            opset_imports=[helper.make_opsetid("", b.opset)],
            ir_version=ir_version_for(b.opset)))
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        return f"inference fails: {str(exc).splitlines()[0][:120]}"
    return None


def _place(b: GraphBuilder, node: NodeProto, new: NodeProto,
           weights: list[TensorProto]) -> None:
    """Make ``node`` the edited copy ``new`` and add the ``weights`` it reads."""
    node.CopyFrom(new)
    for t in weights:
        b.initializers.append(t)
        b.consumed.add(t.name)


def _place_reshaped(b: GraphBuilder, node: NodeProto, new: NodeProto,
                    weights: list[TensorProto], window: Mark,
                    reshaping: Reshaping) -> str | None:
    """:func:`_place` an edit that changes shapes and record them
    (:func:`generators.schema.reshape.record`); where the graph then fails strict
    inference or onnxruntime refuses the window, undo it all and return the reason."""
    before, old = Snapshot.of(b), copy.deepcopy(node)
    _place(b, node, new, weights)
    record(b, window.pool, reshaping)
    error = _strict_error(b)
    why = f"the graph does not infer with it ({error})" if error is not None else None
    if why is None and (refused := ort_refusal(b, window, shapes=True)):
        why = f"onnxruntime refuses it ({refused})"
    if why:
        before.restore(b)
        node.CopyFrom(old)
    return why


def _strict_error(b: GraphBuilder) -> str | None:
    """None when the builder's graph passes strict inference with its recorded shapes
    declared, else the first line of the error (at most 100 characters)."""
    try:
        infer_types(b, strict=True)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        return str(exc).splitlines()[0][:100]
    return None


#: ``(op, optional output) -> index of the input whose shape it has``, where shape inference
#: gives none (BatchNormalization's statistics have the per-channel mean's shape; Dropout's
#: mask has its input's shape).
OUTPUT_LIKE_INPUT: dict[tuple[str, str], int] = {
    **{("BatchNormalization", name): 3 for name in (
        "mean", "var", "saved_mean", "saved_var", "running_mean", "running_var")},
    ("Dropout", "mask"): 0,
}
#: ``(op, optional output) -> index of the output whose shape it has`` (MaxPool's Indices:
#: one index per element of Y).
OUTPUT_LIKE_OUTPUT: dict[tuple[str, str], int] = {("MaxPool", "Indices"): 0}


def _known_output_shape(node: NodeProto, schema: defs.OpSchema, index: int,
                        types: dict[str, TypeProto],
                        got: dict[str, TypeProto]) -> tuple[int, ...] | None:
    """The shape of ``node``'s output ``index`` from :data:`OUTPUT_LIKE_INPUT` (``types``:
    the inputs' types) or :data:`OUTPUT_LIKE_OUTPUT` (``got``: the inferred outputs)."""
    name = schema.outputs[min(index, len(schema.outputs) - 1)].name
    i = OUTPUT_LIKE_INPUT.get((node.op_type, name))
    if i is not None and i < len(node.input) and node.input[i]:
        return _shape(types, node.input[i])
    j = OUTPUT_LIKE_OUTPUT.get((node.op_type, name))
    if j is not None and j < len(node.output) and node.output[j]:
        return _shape(got, node.output[j])
    return None


def _sibling_shape(schema: defs.OpSchema, node: NodeProto, index: int,
                   got: dict[str, TypeProto]) -> tuple[int, ...] | None:
    """The shape of another optional output of ``node`` of the same type string whose shape
    inference gives (BatchNormalization-9 infers ``mean`` but not ``saved_mean``, both of the
    channels' size); None where there is none."""
    params = schema.outputs
    if index >= len(params):
        return None
    for j, name in enumerate(node.output):
        if j != index and j < len(params) and name and j > 0 and \
                params[j].type_str == params[index].type_str:
            shape = _shape(got, name)
            if shape is not None:
                return shape
    return None


#: the input index of the weight of each conv op whose ``group`` an edit re-cuts it for.
GROUPED_WEIGHT = {"Conv": 1, "ConvTranspose": 1, "ConvInteger": 1, "QLinearConv": 3}


def _grouped_channels(c: InputContext) -> tuple[np.ndarray, int, int] | None:
    """``(weight, input channels, output channels)`` of a conv op of
    :data:`GROUPED_WEIGHT` (None where the weight is no constant or the input's shape is
    unknown): Conv's, ConvInteger's and QLinearConv's weight is ``(M, C / group, k...)``,
    ConvTranspose's ``(C, M / group, k...)`` (ONNX operator docs)."""
    w, x = c.const(GROUPED_WEIGHT[c.node.op_type]), c.shape(0)
    if w is None or x is None or w.ndim < 2:
        return None
    old = _attr(c.node, "group") or 1
    out = w.shape[1] * old if c.node.op_type == "ConvTranspose" else w.shape[0]
    return w, x[1], out


def _group_weight(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """The weight a conv op of :data:`GROUPED_WEIGHT` needs for the ``group`` of ``new``
    (the edited copy of ``c.node``) with the input and output channels it had
    (:func:`_grouped_channels`): the weight's second dim is cut, or tiled, to the new
    size.

    Raises:
        Refused: the weight is no constant, or the group does not divide the channels.
    """
    got = _grouped_channels(c)
    if got is None:
        raise Refused("the weight is no constant of known shape to re-cut for the group")
    w, channels_in, channels_out = got
    group = _attr(new, "group")
    group = 1 if group is None else group
    if group <= 0 or channels_in % group or channels_out % group:
        raise Refused(f"group {group} does not divide the input channels ({channels_in}) "
                      f"and output channels ({channels_out})")
    size = (channels_out if c.node.op_type == "ConvTranspose" else channels_in) // group
    reps = [1] * w.ndim
    reps[1] = -(-size // w.shape[1])
    return {GROUPED_WEIGHT[c.node.op_type]: np.tile(w, reps)[:, :size].copy()}


def _gemm_transposed(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """Gemm's A or B weight transposed where the edit flips its ``transA`` or ``transB``
    (Y = op(A) op(B): the product, and so the output, stays as it was); nothing where the
    operand is no 2-D constant (the edit then changes the output's shape, if it can)."""
    out = {}
    for i, flag in ((0, "transA"), (1, "transB")):
        w = c.const(i)
        if w is not None and w.ndim == 2 and \
                bool(_attr(c.node, flag) or 0) != bool(_attr(new, flag) or 0):
            out[i] = np.ascontiguousarray(w.T)
    return out


def _transposed_operand(b: GraphBuilder, c: InputContext, new: NodeProto) -> list[NodeProto]:
    """A Transpose before Gemm's computed A (no constant for :func:`_gemm_transposed` to
    transpose) where the edit flips ``transA``: ``new`` reads its output, so op(A) and the
    output stay as they were; none where A is a constant or not 2-D."""
    a = c.shape(0)
    if c.const(0) is not None or a is None or len(a) != 2 or \
            bool(_attr(c.node, "transA") or 0) == bool(_attr(new, "transA") or 0):
        return []
    out = b.namer.tensor("Transpose")
    feeder = helper.make_node("Transpose", [new.input[0]], [out], perm=[1, 0])
    if name := b.namer.node("Transpose"):
        feeder.name = name
    new.input[0] = out
    return [feeder]


def _copied_dims_spelled(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """Reshape's constant shape with each 0 (copy the input's dim, allowzero=0) spelled as
    that dim where the edit sets ``allowzero`` (a 0 then means an empty dim): the output
    stays as it was; nothing where the shape has no 0 or is no constant, or the input's
    dims are unknown."""
    shape, x = c.const(1), c.shape(0)
    if shape is None or x is None or not _attr(new, "allowzero") or \
            not (shape == 0).any() or len(x) < shape.size:
        return {}
    return {1: np.where(shape == 0, np.asarray(x[:shape.size], np.int64), shape)
            .astype(np.int64)}


def _scales_emptied(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """Resize-11's scales (a required input) as an empty tensor once its sizes input is
    listed: onnxruntime takes only one of them ("Only one of scales or sizes must be
    provided"); nothing from Resize-13, whose scales is optional."""
    if c.schema.since_version >= 13 or len(new.input) < 4 or not new.input[3] or \
            len(new.input) < 3 or not new.input[2]:
        return {}
    return {2: np.zeros((0,), np.float32)}


#: ``(op, input) -> adapter``: other inputs an edit that lists ``input`` must replace
#: (by index), read from the context and the edited copy of the node.
LISTED_ADAPTERS: dict[tuple[str, str],
                      Callable[[InputContext, NodeProto], dict[int, np.ndarray]]] = {
    ("Resize", "sizes"): _scales_emptied,
}


def _indices_refit(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """Scatter's, ScatterElements' or GatherElements' constant indices taken modulo the
    dim of the axis the edit gives it (``axis`` 0 where absent): within bounds, as
    onnxruntime requires; nothing where they are no constant or fit already."""
    indices, x = c.const(1), c.shape(0)
    if indices is None or x is None or not x:
        return {}
    axis = _attr(new, "axis") or 0
    if not -len(x) <= axis < len(x):
        return {}
    dim = x[axis]
    if dim < 1 or ((indices >= -dim) & (indices < dim)).all():
        return {}
    return {1: (indices % dim).astype(indices.dtype)}


#: ``(op, attribute) -> feeder``: nodes an attribute edit puts before the node, that
#: compute an input in the form the new value reads (the node's input rewired to them),
#: read from the builder, the context and the edited copy of the node.
FEEDERS: dict[tuple[str, str],
              Callable[[GraphBuilder, InputContext, NodeProto], list[NodeProto]]] = {
    ("Gemm", "transA"): _transposed_operand,
}


def _blocked_scale(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """QuantizeLinear's or DequantizeLinear's scale (and zero point) in blocks where the edit
    sets a non-zero ``block_size``: the input's shape with the blocked axis cut to
    ``ceil(dim / block_size)`` (ONNX operator docs, opset 21), every block at the old
    scale's first value.

    Raises:
        Refused: the input's shape is unknown, or the scale or zero point no constant.
    """
    size = _attr(new, "block_size") or 0
    if size <= 0:
        return {}
    x, scale = c.shape(0), c.const(1)
    if not x or scale is None:
        raise Refused("no input shape and constant scale to cut in blocks")
    axis = _attr(new, "axis")
    axis = (1 if axis is None else axis) % len(x)
    shape = [*x[:axis], -(-x[axis] // size), *x[axis + 1:]]
    out = {1: np.full(shape, scale.reshape(-1)[0], scale.dtype)}
    if _listed(c.node, 2):
        zero = c.const(2)
        if zero is None:
            raise Refused("the zero point is no constant to cut in blocks")
        out[2] = np.full(shape, zero.reshape(-1)[0], zero.dtype)
    return out


#: ``(op, attribute) -> adapter``: inputs an attribute edit must replace to keep the node's
#: meaning and output shapes (the new value of input ``i`` by index), read from the context
#: and the edited copy of the node; raises :class:`Refused` where no input fits.
ATTR_ADAPTERS: dict[tuple[str, str],
                    Callable[[InputContext, NodeProto], dict[int, np.ndarray]]] = {
    **{(op, "group"): _group_weight for op in GROUPED_WEIGHT},
    ("Reshape", "allowzero"): _copied_dims_spelled,
    **{(op, "axis"): _indices_refit for op in ("Scatter", "ScatterElements",
                                                "GatherElements")},
    ("Gemm", "transA"): _gemm_transposed,
    ("Gemm", "transB"): _gemm_transposed,
    ("QuantizeLinear", "block_size"): _blocked_scale,
    ("DequantizeLinear", "block_size"): _blocked_scale,
}


def _laid_out(c: InputContext, axes_at: int) -> list[int] | None:
    """The node's constant axes (input ``axes_at``) made non-negative by its data's rank;
    None where they or the rank are unknown."""
    axes, x = c.const(axes_at), c.shape(0)
    if axes is None or x is None:
        return None
    return [int(a) % len(x) for a in axes.reshape(-1)] if len(x) else []


def _slice_without_axes(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """Slice's ``starts``, ``ends`` (and ``steps``, where the edited node still reads them)
    laid out over the axes ``0 .. max(axes)`` where the edit leaves ``axes`` out: each axis
    the old list names keeps its bounds, every other one takes all of it (start 0, the
    largest end, step 1). The sliced region, and so the output, stays as it was (ONNX
    operator docs, Slice-10: left-out axes are ``[0, ..., len(starts) - 1]``). Nothing where
    the axes, bounds or data rank are not known."""
    laid = _laid_out(c, 3)
    starts, ends = c.const(1), c.const(2)
    steps = c.const(4)
    if laid is None or laid == list(range(len(laid))) or starts is None or ends is None or \
            (_listed(c.node, 4) and steps is None):
        return {}  # unknown, or the axes Slice takes without them
    k, dt = max(laid) + 1, starts.dtype
    full = {1: np.zeros(k, dt), 2: np.full(k, np.iinfo(dt).max, dt), 4: np.ones(k, dt)}
    for j, axis in enumerate(laid):
        full[1][axis], full[2][axis] = starts.reshape(-1)[j], ends.reshape(-1)[j]
        if steps is not None:
            full[4][axis] = steps.reshape(-1)[j]
    if not _listed(new, 4):
        del full[4]
    return full


def _pad_without_axes(c: InputContext, new: NodeProto) -> dict[int, np.ndarray]:
    """Pad's ``pads`` over every axis where the edit leaves ``axes`` out: each axis the old
    list names keeps its begin and end pads, every other one takes 0 (ONNX operator docs,
    Pad-18: ``pads`` then lists ``2 * rank`` values). Nothing where the axes, pads or data
    rank are not known."""
    laid, pads = _laid_out(c, 3), c.const(1)
    rank = len(c.shape(0) or ())
    if laid is None or laid == list(range(rank)) or pads is None:
        return {}  # unknown, or every axis in order already
    flat = pads.reshape(-1)
    full = np.zeros(2 * rank, pads.dtype)
    for j, axis in enumerate(laid):
        full[axis], full[rank + axis] = flat[j], flat[len(laid) + j]
    return {1: full}


#: ``(op, optional input) -> adapter``: inputs that leaving the optional input out (absent
#: or an empty name) must replace to keep the node's meaning and output shapes, as
#: :data:`ATTR_ADAPTERS` for attributes.
DROP_ADAPTERS: dict[tuple[str, str],
                    Callable[[InputContext, NodeProto], dict[int, np.ndarray]]] = {
    ("Slice", "axes"): _slice_without_axes,
    ("Pad", "axes"): _pad_without_axes,
}


def _group_divisors(c: InputContext, level: str) -> list[Any]:
    """Groups above 1 that divide both the input and the output channels of a conv op of
    :data:`GROUPED_WEIGHT` (:func:`_group_weight` re-cuts the weight for them)."""
    got = _grouped_channels(c) if level == NONDEFAULT else None
    if got is None:
        return []
    _, channels_in, out = got
    common = math.gcd(channels_in, out)
    if common == 1:
        raise Refused(f"the input channels ({channels_in}) and output channels ({out}) have "
                      "no common divisor above 1")
    return [g for g in range(2, common + 1) if common % g == 0][:4]


def _group_fits(c: InputContext, level: str) -> bool:
    """Whether a conv op of :data:`GROUPED_WEIGHT` can take group level ``level``: a
    non-default group
    needs input and output channels with a common divisor above 1."""
    try:
        return level != NONDEFAULT or bool(_group_divisors(c, level))
    except Refused:
        return False


def _axis_fits(c: InputContext, level: str) -> bool:
    """Whether the node's input has an axis of level ``level`` for its ``axis`` attribute
    (:func:`generators.schema.levels.candidates` keeps the input's axes only): a
    QuantizeLinear whose default axis is 1 has no non-default one on a rank-2 input."""
    spec = c.schema.attributes.get("axis")
    if spec is None or spec.type != AttributeProto.INT:
        return True
    rank = len(c.shape(0) or ()) or None
    return level not in (NONDEFAULT, EDGE) or rank is None or \
        has_axis(c.node.op_type, level, spec, rank)


def _reachable_output_shape(node: NodeProto, types: dict[str, TypeProto]) -> None:
    """Hold a ConvTranspose's ``output_shape`` within what its other attributes reach, once
    a draw's edits are all made: an output dim is at most ``stride * (in - 1) +
    output_padding + (kernel - 1) * dilation + 1``, the size with no padding (ONNX operator
    docs, ConvTranspose: ``total_padding = stride * (in - 1) + output_padding + ((kernel -
    1) * dilation + 1) - output_shape``, which onnxruntime refuses below 0: "Explicit
    output_shape is inconsistent with input spatial dimensions"). An ``output_shape`` written
    as the node's own output dims passes that bound where another edit of the same draw
    lowered the stride, kernel or dilation; it is lowered to it (the output shape then
    changes, where the window can take it). Nothing where the input or weight shape is not
    known."""
    out = _attr(node, "output_shape")
    x, w = _shape(types, node.input[0]), _shape(types, node.input[1])
    if not out or x is None or w is None or len(x) - 2 != len(out):
        return
    rank = len(out)
    strides = _attr(node, "strides") or [1] * rank
    dilations = _attr(node, "dilations") or [1] * rank
    padding = _attr(node, "output_padding") or [0] * rank
    kernel = _attr(node, "kernel_shape") or list(w[2:])
    reach = [s * (i - 1) + p + (k - 1) * d + 1
             for s, i, p, k, d in zip(strides, x[2:], padding, kernel, dilations, strict=True)]
    held = [max(1, min(o, r)) for o, r in zip(out, reach, strict=True)]
    written = next(a for a in node.attribute if a.name == "output_shape")
    del written.ints[:]
    written.ints.extend(held)


def _cubic_for_exclude_outside(node: NodeProto, types: dict[str, TypeProto]) -> None:
    """A Resize of float data with ``exclude_outside`` set in mode linear without
    antialias (which onnxruntime refuses: :func:`_resize_window_refused`) resizes in mode
    cubic instead: the same level of ``mode`` (non-default), one that takes it."""
    mode = _attr(node, "mode")
    if _attr(node, "exclude_outside") and not _attr(node, "antialias") and \
            mode in (b"linear", "linear") and _float_data(node, types) is not False:
        kept = [a for a in node.attribute if a.name != "mode"]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute("mode", "cubic")])


#: op -> ``(edited node, graph types)``: what an edited node's attributes must agree on
#: once all of a draw's edits are made, set in place before the node is checked.
SETTLERS: dict[str, Callable[[NodeProto, dict[str, TypeProto]], None]] = {
    "ConvTranspose": _reachable_output_shape,
    "Resize": _cubic_for_exclude_outside,
}


#: ``(op, factor) -> (context, level) -> bool``: whether an emitted node can take a level
#: that an edit takes only on some emissions, so that a row-taking draw keeps an emission
#: that can (:func:`row_misfits`, :func:`emit_for_row`).
PREVIEWS: dict[tuple[str, str], Callable[[InputContext, str], bool]] = {
    **{(op, "attr:group"): _group_fits for op in GROUPED_WEIGHT},
}
#: ``factor -> preview`` for every op with that factor (an ``axis`` attribute names an axis
#: of the node's input, which a rank-2 input may not have at the row's level).
FACTOR_PREVIEWS: dict[str, Callable[[InputContext, str], bool]] = {"attr:axis": _axis_fits}


def _preview(op: str, factor: str) -> Callable[[InputContext, str], bool] | None:
    """The preview of ``factor`` of ``op`` (:data:`PREVIEWS`, else
    :data:`FACTOR_PREVIEWS`), or None."""
    return PREVIEWS.get((op, factor)) or FACTOR_PREVIEWS.get(factor)


def _output_shape(c: InputContext, level: str) -> list[Any]:
    """ConvTranspose's ``output_shape`` as the spatial dims it has already."""
    out = c.out_shape()
    return [list(out[2:])] if level == NONDEFAULT and out is not None and len(out) > 2 \
        else []


def _weight_kernel(c: InputContext, level: str) -> list[Any]:
    """A Conv's or ConvTranspose's ``kernel_shape`` written as the spatial dims of its
    weight (no default in the schema, so ``nondefault``): the only value onnxruntime takes
    ("kernel_shape is not compatible with W shape" for any other)."""
    w = c.shape(1)
    return [list(w[2:])] if level == NONDEFAULT and w is not None and len(w) > 2 else []


def _zero_output_padding(c: InputContext, level: str) -> list[Any]:
    """ConvTranspose's ``output_padding`` written as zeros (no default in the schema, so
    ``nondefault``; the output keeps its shape)."""
    x = c.shape(0)
    return [[0] * (len(x) - 2)] if level == NONDEFAULT and x is not None and len(x) > 2 \
        else []


def _shifted_pads(c: InputContext, level: str) -> list[Any]:
    """Pad's ``pads`` (its attribute form, Pad-2) moved by one along an axis of at least two
    elements: one negative pad (an edge value: the axis is cropped at one end) and one more
    at the other end, so the output keeps its shape."""
    x, cur = c.shape(0), _attr(c.node, "pads")
    if level != EDGE or x is None or cur is None or len(cur) != 2 * len(x):
        return []
    out = []
    for i, d in enumerate(x):
        if d >= 2 and cur[i] == 0:
            pads = list(cur)
            pads[i] -= 1
            pads[i + len(x)] += 1
            out.append(pads)
    return out[:2]


def _output_count(c: InputContext, level: str) -> list[Any]:
    """Split's ``num_outputs`` as the number of outputs the node has."""
    return [len(c.node.output)] if level == NONDEFAULT else []


def _shape_keeping_perms(c: InputContext, level: str) -> list[Any]:
    """Transpose's ``perm`` values other than its own that give the output shape it has
    (axes of equal size swapped)."""
    x, out, cur = c.shape(0), c.out_shape(), _attr(c.node, "perm")
    if level != NONDEFAULT or x is None or out is None or len(x) > 6:
        return []
    return [list(p) for p in itertools.permutations(range(len(x)))
            if tuple(x[i] for i in p) == tuple(out) and list(p) != list(cur or ())][:6]


def _axes_sets(c: InputContext, level: str) -> list[Any]:
    """``axes`` values of the size the node's has (Unsqueeze: positions of the output,
    others: axes of the input), other than its own, non-negative for ``nondefault`` and in
    the negative form for ``edge``, where the node's own axes spelled negative come first
    (the same output, whatever the shapes); the node check keeps those that leave the
    output shape as it is (a size-1 axis reduced or squeezed instead of another, a 1
    inserted next to another 1). A Squeeze without axes gets the unit axes it drops,
    listed."""
    cur = _attr(c.node, "axes")
    ref = c.out_shape() if c.node.op_type == "Unsqueeze" else c.shape(0)
    if c.node.op_type == "Squeeze" and _squeezes_all(c.node) and ref is not None and \
            level in (NONDEFAULT, EDGE):
        unit = [i for i, d in enumerate(ref) if d == 1]  # what a Squeeze without axes drops
        return [[i - len(ref) if level == EDGE else i for i in unit]] if unit else []
    if cur is None or ref is None or level not in (NONDEFAULT, EDGE) or not 0 < len(cur) <= 3:
        return []
    rank = len(ref)
    own = sorted(a % rank for a in cur)
    sets = [list(a) for a in itertools.combinations(range(rank), len(cur)) if list(a) != own]
    return [[a - rank for a in s] for s in [own, *sets]] if level == EDGE else sets


def _shape_starts(c: InputContext, level: str) -> list[Any]:
    """Shape-15's ``start``: at ``edge``, negative values that clamp to the first axis (the
    output keeps its shape); otherwise the axes before which every dim is 1 (the output
    loses only unit dims, so a Reshape to it keeps its element count)."""
    dims = c.shape(0)
    if dims is None:
        return []
    if level == EDGE:
        return [-len(dims), -len(dims) - 2]
    return [k for k in range(1, len(dims)) if math.prod(dims[:k]) == 1]


def _shape_ends(c: InputContext, level: str) -> list[Any]:
    """Shape-15's ``end``: at ``edge``, a huge value that clamps to the rank (the output
    keeps its shape); otherwise the rank itself, then the axes after which every dim is 1."""
    dims = c.shape(0)
    if dims is None:
        return []
    if level == EDGE:
        return [HUGE_INT]
    return [len(dims)] + [k for k in range(len(dims) - 1, 0, -1)
                          if math.prod(dims[k:]) == 1]


def _slice_window(c: InputContext) -> tuple[list[int], list[int], list[int]] | None:
    """Slice-1's window as non-negative positions: ``(starts, ends, axes)``, each bound
    clamped to its axis; None where the node's bounds, axes or input dims are unknown."""
    dims, axes = c.shape(0), _attr(c.node, "axes")
    starts, ends = _attr(c.node, "starts"), _attr(c.node, "ends")
    if dims is None or starts is None or ends is None or len(starts) != len(ends):
        return None
    at = list(axes) if axes is not None else list(range(len(starts)))
    if len(at) != len(starts) or any(not 0 <= a < len(dims) for a in at):
        return None

    def pos(v: int, a: int) -> int:
        return min(max(v + dims[a] if v < 0 else v, 0), dims[a])

    return ([pos(v, a) for v, a in zip(starts, at, strict=True)],
            [pos(v, a) for v, a in zip(ends, at, strict=True)], at)


def _slice_starts(c: InputContext, level: str) -> list[Any]:
    """Slice-1's ``starts`` (an attribute) for the same window: at ``edge`` each counted
    from the end of its axis (negative), otherwise each as its non-negative position."""
    window, dims = _slice_window(c), c.shape(0)
    if window is None or dims is None:
        return []
    starts, _, at = window
    return [[s - dims[a] for s, a in zip(starts, at, strict=True)] if level == EDGE
            else starts]


def _slice_ends(c: InputContext, level: str) -> list[Any]:
    """Slice-1's ``ends`` for the same window: at ``edge`` each counted from the end of its
    axis where it ends before it, else :data:`HUGE_INT` (clamped to the dim); otherwise
    each as its non-negative position."""
    window, dims = _slice_window(c), c.shape(0)
    if window is None or dims is None:
        return []
    _, ends, at = window
    return [[e - dims[a] if e < dims[a] else HUGE_INT for e, a in zip(ends, at, strict=True)]
            if level == EDGE else ends]


def _constant_now(node: NodeProto) -> np.ndarray | None:
    """The value a Constant node holds, whichever of its value attributes holds it (None
    for a sparse value or none)."""
    for a in node.attribute:
        if a.name == "value":
            return numpy_helper.to_array(a.t)
        if a.name in ("value_float", "value_floats"):
            return np.asarray(a.f if a.name == "value_float" else list(a.floats), np.float32)
        if a.name in ("value_int", "value_ints"):
            return np.asarray(a.i if a.name == "value_int" else list(a.ints), np.int64)
        if a.name in ("value_string", "value_strings"):
            return np.asarray(a.s if a.name == "value_string" else list(a.strings),
                              dtype=object)
    return None


def _as_value_tensor(node: NodeProto) -> None:
    """Hold a Constant's numeric value given in a ``value_*`` form (``value_float``,
    ``value_ints``, ...) as the same tensor in ``value``, which a retype can convert (the
    ``value_*`` forms hold float and int64 only); a string, sparse or ``value`` Constant
    stays as it is."""
    arr = _constant_now(node)
    if arr is None or arr.dtype.kind not in "fi" or node.attribute[0].name == "value":
        return
    del node.attribute[:]
    node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(arr)))


def _optional_type(c: InputContext, level: str) -> list[Any]:
    """Optional's ``type`` (the optional's element type, needed where it has no input) as
    the type of the input it has: the attribute said aloud."""
    if level != NONDEFAULT or not _listed(c.node, 0) or c.node.input[0] not in c.types:
        return []
    got = TypeProto()
    got.CopyFrom(c.types[c.node.input[0]])
    if got.HasField("tensor_type"):
        got.tensor_type.ClearField("shape")
    return [got]


def _constant_held_as(name: str) -> Callable[[InputContext, str], list[Any]]:
    """Candidates for a Constant's value attribute ``name`` that hold the value it has now
    in that attribute's form (a ``value_ints`` for a 1-D int64 tensor, a tensor for a
    ``value_float``, a sparse tensor of it), so that the output keeps its type and shape;
    at ``edge`` the same of zeros. Empty where the form cannot hold it."""
    def candidates_of(c: InputContext, level: str) -> list[Any]:
        arr = _constant_now(c.node)
        if arr is None or level not in (NONDEFAULT, EDGE):
            return []
        if level == EDGE:
            if arr.dtype.kind == "O":  # (strings have no zero)
                return []
            arr = np.zeros_like(arr)
        kind = {"f": "float", "i": "int", "O": "string"}.get(arr.dtype.kind)
        if name == "value":  # (a string value is an object array of bytes already)
            return [numpy_helper.from_array(arr)]
        if name == "sparse_value":
            flat = arr.reshape(-1)
            if kind is None or kind == "string" or not flat.size:
                return []
            return [helper.make_sparse_tensor(
                numpy_helper.from_array(flat, "values"),
                numpy_helper.from_array(np.arange(flat.size, dtype=np.int64), "indices"),
                list(arr.shape))]
        want = name[len("value_"):]
        if want.rstrip("s") != kind or (want.endswith("s") and arr.ndim != 1) or \
                (not want.endswith("s") and arr.ndim != 0) or \
                (kind == "float" and arr.dtype != np.float32) or \
                (kind == "int" and arr.dtype != np.int64):
            return []
        return [arr.tolist()]
    return candidates_of


def _stash_types(c: InputContext, level: str) -> list[Any]:
    """LayerNormalization's ``stash_type`` (the element type of its Mean and InvStdDev
    outputs, type constraint U: float, the default, or bfloat16; the flag rule's
    ``1 - default`` would name no type) as bfloat16."""
    return [TensorProto.BFLOAT16] if level == NONDEFAULT else []


#: ``(op, attribute) -> values`` tried first for a ``nondefault`` or ``edge`` level, read
#: from the node (where :func:`generators.schema.levels.candidates`, which sees only the
#: rank, has none that keeps the output shapes); a function raises :class:`Refused` where
#: no value of the level fits the node.
NODE_CANDIDATES: dict[tuple[str, str], Callable[[InputContext, str], list[Any]]] = {
    **{(op, "group"): _group_divisors for op in GROUPED_WEIGHT},
    ("ConvTranspose", "output_shape"): _output_shape,
    ("Conv", "kernel_shape"): _weight_kernel,
    ("ConvTranspose", "kernel_shape"): _weight_kernel,
    ("ConvTranspose", "output_padding"): _zero_output_padding,
    ("Pad", "pads"): _shifted_pads,
    ("Split", "num_outputs"): _output_count,
    ("Transpose", "perm"): _shape_keeping_perms,
    ("LayerNormalization", "stash_type"): _stash_types,
    ("Shape", "start"): _shape_starts,
    **{("Constant", a): _constant_held_as(a) for a in CONSTANT_VALUES},
    ("Optional", "type"): _optional_type,
    ("Slice", "starts"): _slice_starts,
    ("Slice", "ends"): _slice_ends,
    ("Shape", "end"): _shape_ends,
    **{(op, "axes"): _axes_sets for op in (
        "Unsqueeze", "Squeeze", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum",
        "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
        "ReduceSumSquare")},
}


def _attr_edits(b: GraphBuilder, node: NodeProto, schema: defs.OpSchema, name: str,
                level: str, rank: int | None, ctx: InputContext) -> list[Edit]:
    spec = schema.attributes[name]
    cur = next((a for a in node.attribute if a.name == name), None)
    default = schema_default(spec)
    if classify(node.op_type, cur, default) == level:
        return []
    if int(spec.type) == AttributeProto.SPARSE_TENSOR and level != ABSENT and not b.sparse:
        raise Refused(NO_SPARSE)
    values: list[AttributeProto | None] = []
    if level == ABSENT:
        values = [None]
    elif level == DEFAULT:
        if default is None:
            raise Refused("the schema gives no default")
        d = AttributeProto()
        d.CopyFrom(default)
        d.name = name
        values = [d]
    else:
        first = NODE_CANDIDATES.get((node.op_type, name))
        for v in [*(first(ctx, level) if first else []),
                  *candidates(node.op_type, name, int(spec.type), level,
                              attr_value(cur) if cur is not None else None,
                              attr_value(default) if default is not None else None, rank,
                              b.rng)]:
            try:
                a = as_attribute(name, v, int(spec.type))
            except (TypeError, ValueError):
                continue
            if classify(node.op_type, a, default) == level:
                values.append(a)
        if not values:
            raise Refused("no candidate value of this level")

    def edit_for(a: AttributeProto | None) -> Edit:
        def edit(n: NodeProto) -> tuple[list[TensorProto], Callable[..., None]]:
            drop = {name}
            if a is not None and level != DEFAULT:
                drop |= set(COMPANIONS.get(name, ()))
            kept = [x for x in n.attribute if x.name not in drop]
            del n.attribute[:]
            n.attribute.extend(kept)
            if a is not None:
                n.attribute.append(a)
            feed = FEEDERS.get((n.op_type, name))
            return [*_adapted(b, ctx, n, ATTR_ADAPTERS.get((n.op_type, name))),
                    *(feed(b, ctx, n) if feed else [])], _nothing
        return edit

    return [edit_for(a) for a in values]


def _adapted(b: GraphBuilder, ctx: InputContext, n: NodeProto,
             adapt: Callable[[InputContext, NodeProto], dict[int, np.ndarray]] | None
             ) -> list[TensorProto]:
    """The weights ``adapt`` (an :data:`ATTR_ADAPTERS` or :data:`DROP_ADAPTERS` entry, or
    None) gives the edited node ``n``, each made an initializer that ``n`` reads in its
    input's place."""
    weights = []
    for i, arr in (adapt(ctx, n) if adapt else {}).items():
        weights.append(numpy_helper.from_array(arr, b.namer.weight(n.op_type)))
        n.input[i] = weights[-1].name
    return weights


def _with_slot(names: list[str], index: int, name: str, trim: bool) -> list[str]:
    """``names`` (a node's input or output list) with slot ``index`` set to ``name``.

    The list is padded with empty names up to ``index``; with ``trim``, trailing empty names
    are dropped, as the format does for optional slots left out at the end.
    """
    out = names + [""] * (index + 1 - len(names))
    out[index] = name
    while trim and out and not out[-1]:
        out.pop()
    return out


def _input_edits(b: GraphBuilder, node: NodeProto, schema: defs.OpSchema, index: int,
                 level: str, types: dict[str, TypeProto],
                 consts: dict[str, TensorProto]) -> list[Edit]:
    inputs = list(node.input)
    cur = ABSENT if index >= len(inputs) else (EMPTY if inputs[index] == "" else PRESENT)
    if cur == level:
        return []

    ctx = InputContext(node, schema, types, consts, b.rng)

    def set_to(name: str, tensor: TensorProto | None) -> Edit:
        def edit(n: NodeProto) -> tuple[list[TensorProto], Callable[..., None]]:
            ins = list(n.input)
            if level == ABSENT and any(ins[index + 1:]):
                raise Refused("a later input is listed")
            del n.input[:]
            n.input.extend(_with_slot(ins, index, name, trim=level == ABSENT))
            if tensor is not None:
                return [tensor, *_adapted(b, ctx, n, LISTED_ADAPTERS.get(
                    (n.op_type, schema.inputs[index].name)))], _nothing
            return _adapted(b, ctx, n, DROP_ADAPTERS.get((n.op_type,
                                                          schema.inputs[index].name))), _nothing
        return edit

    if level in (ABSENT, EMPTY):
        return [set_to("", None)]
    provider = PROVIDERS.get((node.op_type, schema.inputs[index].name))
    arrays = [provider(ctx)] if provider else _generic_input(ctx, index)
    edits = []
    for arr in arrays:
        if arr is None:
            continue
        name = b.namer.weight(node.op_type)
        edits.append(set_to(name, numpy_helper.from_array(np.asarray(arr), name)))
    if not edits:
        raise Refused("no weight fits this node")
    return edits


def _output_edits(b: GraphBuilder, node: NodeProto, index: int, level: str) -> list[Edit]:
    outputs = list(node.output)
    named = index < len(outputs) and outputs[index] != ""
    name = outputs[index] if named else ""
    readers = named and any(name in n.input for n in b.nodes)
    is_out = named and name in b.output_names
    cur = ABSENT if not named else OUTPUT if is_out else CONSUMED if readers else UNUSED
    if cur == level:
        return []
    if level == ABSENT and (readers or is_out):
        raise Refused("the motif's pattern reads the output")
    also_output = level == OUTPUT and readers and not is_out  # read and a graph output too
    if cur != ABSENT and level != ABSENT and (readers or is_out) and not also_output:
        raise Refused("the motif's pattern reads the output")
    fresh = name or b.namer.tensor(node.op_type)

    def edit(n: NodeProto) -> tuple[list[TensorProto], Callable[..., None]]:
        outs = list(n.output)
        absent = level == ABSENT
        del n.output[:]
        n.output.extend(_with_slot(outs, index, "" if absent else fresh, trim=absent))

        def post(got: dict[str, TypeProto]) -> None:
            if level in (ABSENT, UNUSED):
                return
            elem, shape = _elem(got, fresh), _shape(got, fresh)
            # an output whose shape no inference gives is no graph output (the checker
            # wants the output's shape: _commit refuses the edit), and its reader's result
            # stays out of the pool (later ops would take it for a scalar)
            if level == OUTPUT:
                if shape is not None:
                    b.graph_output(Value(fresh, elem, shape))
            else:
                out = b.namer.tensor("Identity")
                b.nodes.append(helper.make_node("Identity", [fresh], [out]))
                b.consumed.add(fresh)
                if shape is not None:
                    b.add(Value(out, elem, shape))
        post.graph_output = fresh if level == OUTPUT else None  # type: ignore[attr-defined]
        return [], post

    return [edit]


# -- what onnxruntime refuses that the schema allows ------------------------------------------

def _attr(node: NodeProto, name: str) -> Any:
    a = next((x for x in node.attribute if x.name == name), None)
    return attr_value(a) if a is not None else None


def _output_padding_past_stride(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """ConvTranspose: an ``output_padding`` at least its stride along some axis (onnxruntime
    then computes the input size back from the output and refuses the mismatch)."""
    padding = _attr(node, "output_padding") or []
    strides = _attr(node, "strides") or [1] * len(padding)
    return any(p >= s for p, s in zip(padding, strides, strict=False))


def _conv_group_mismatch(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """Conv, ConvInteger and QLinearConv: input channels = weight dim 1 x group, output
    channels (weight dim 0) a multiple of group; ConvTranspose: input channels = weight
    dim 0, a multiple of group (its weight is ``(C, M / group, k...)``)."""
    group = _attr(node, "group")
    group = 1 if group is None else group
    at = GROUPED_WEIGHT[node.op_type]
    x = _shape(types, node.input[0])
    w = _shape(types, node.input[at]) if len(node.input) > at else None
    if x is None or w is None:
        return False
    if node.op_type == "ConvTranspose":
        return group <= 0 or x[1] != w[0] or w[0] % group != 0
    return group <= 0 or x[1] != w[1] * group or w[0] % group != 0


#: ``(op, predicate on the node and the graph's types, reason)``: nodes that pass the ONNX
#: checker and shape inference but that onnxruntime's CPU kernels refuse to build or run.
#: Found by running varied draws (``tests/test_schema_variation.py``); each is a plan level
#: a draw cannot take, reported with the reason.
def _window_too_large(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    x = _shape(types, node.input[0])
    w = _shape(types, node.input[1]) if len(node.input) > 1 and node.op_type == "Conv" \
        else None
    if x is None:
        return False
    kernel = _attr(node, "kernel_shape") or (list(w[2:]) if w else None)
    pad = _attr(node, "auto_pad")
    if kernel is None or (pad not in (None, b"NOTSET", "NOTSET")):
        return False
    spatial = x[2:]
    pads = _attr(node, "pads") or [0] * (2 * len(spatial))
    dil = _attr(node, "dilations") or [1] * len(spatial)
    if (len(pads), len(dil), len(kernel)) != (2 * len(spatial), len(spatial), len(spatial)):
        return False  # lists of the wrong length: shape inference refuses the node
    return any(d + pads[i] + pads[i + len(spatial)] < (k - 1) * dil[i] + 1
               for i, (d, k) in enumerate(zip(spatial, kernel, strict=False)))


def _same_pad_dilated(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    pad = _attr(node, "auto_pad")
    pad = pad.decode() if isinstance(pad, bytes) else pad
    return pad in ("SAME_UPPER", "SAME_LOWER") and any(d != 1 for d in
                                                       (_attr(node, "dilations") or ()))


def _axis_out_of_range(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    axis = _attr(node, "axis")
    x = _shape(types, node.input[0]) if node.input and node.input[0] else None
    if axis is None or x is None or not isinstance(axis, int):
        return False
    rank = len(x) + (1 if node.op_type == "Flatten" else 0)
    return not -rank <= axis < max(rank, 1)


def _perm_size(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    perm = _attr(node, "perm")
    x = _shape(types, node.input[0])
    return perm is not None and x is not None and sorted(perm) != list(range(len(x)))


def _empty_axes(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    return len(node.input) > 1 and node.input[1] == ""


def _squeezes_all(node: NodeProto) -> bool:
    """Whether ``node`` (a Squeeze) has no axes, as attribute or input: it removes every
    dim that is 1."""
    return _attr(node, "axes") is None and not (len(node.input) > 1 and node.input[1])


def _squeezes_unknown_dims(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """A Squeeze without axes (:func:`_squeezes_all`) whose input has a dim inference does
    not know (a symbolic batch dim): it removes every dim that is 1 when it runs."""
    if not _squeezes_all(node):
        return False
    t = types.get(node.input[0]) if node.input else None
    return t is not None and t.HasField("tensor_type") and any(
        not d.HasField("dim_value") for d in t.tensor_type.shape.dim)


def _saturate(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """Cast's or CastLike's ``saturate`` set for a cast to a type other than float 8 (the
    target: Cast's ``to``, CastLike's second input's element type)."""
    to = _attr(node, "to") if node.op_type == "Cast" else \
        (_elem(types, node.input[1]) if len(node.input) > 1 else None)
    return _attr(node, "saturate") is not None and DTYPE_NAMES.get(to or 0, "")[:6] != \
        "float8"


def _bounds_crossed(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """Clip-1/6's bounds as onnxruntime reads them (absent: the float range's ends), not in
    order (a NaN bound is in no order)."""
    top = float(np.finfo(np.float32).max)
    lo, hi = _attr(node, "min"), _attr(node, "max")
    return not (-top if lo is None else lo) <= (top if hi is None else hi)


def _resize_window_refused(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """A Resize onnxruntime refuses when the session starts (upsamplebase.h): antialias
    outside modes linear and cubic, or exclude_outside outside mode cubic unless the mode
    is linear with antialias."""
    mode = _attr(node, "mode") or b"nearest"
    mode = mode.decode() if isinstance(mode, bytes) else mode
    anti, exclude = bool(_attr(node, "antialias")), bool(_attr(node, "exclude_outside"))
    return (anti and mode not in ("linear", "cubic")) or \
        (exclude and mode != "cubic" and not (anti and mode == "linear"))


def _cubic_not_float(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """A Resize in mode cubic whose data is not float or float16 (onnxruntime's kernel
    reads it as float)."""
    return _attr(node, "mode") in (b"cubic", "cubic") and _float_data(node, types) is False


def _float_data(node: NodeProto, types: dict[str, TypeProto]) -> bool | None:
    """Whether a node's first input is float or float16 (None: its type is unknown)."""
    elem = _elem(types, node.input[0]) if node.input and node.input[0] else 0
    return elem in (TensorProto.FLOAT, TensorProto.FLOAT16) if elem else None


def _cropped_roi_not_float(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    """A Resize in mode tf_crop_and_resize whose roi is not float: onnxruntime reads the
    roi as float when the session starts ("Tensor type mismatch"); other modes ignore it."""
    mode = _attr(node, "coordinate_transformation_mode")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    roi = node.input[1] if len(node.input) > 1 else ""
    return mode == "tf_crop_and_resize" and bool(roi) and \
        _elem(types, roi) not in (0, TensorProto.FLOAT)


def _block_size_per_tensor(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    size = _attr(node, "block_size")
    x = _shape(types, node.input[0])
    scale = _shape(types, node.input[1]) if len(node.input) > 1 else None
    return bool(size) and x is not None and scale is not None and len(scale) != len(x)


def _no_trip_count(node: NodeProto, types: dict[str, TypeProto]) -> bool:
    return not node.input or not node.input[0]


#: ops whose ``axis`` must name an axis of the first input (Flatten: or its end).
_AXIS_OPS = ("Softmax", "LogSoftmax", "Hardmax", "Concat", "Gather", "Flatten", "Split",
             "ArgMax", "ArgMin", "CumSum", "GatherElements", "ScatterElements", "Scatter",
             "TopK")

RUNTIME_REFUSALS: list[tuple[str, Callable[[NodeProto, dict[str, TypeProto]], bool], str]] = [
    *((op, _axis_out_of_range, f"onnxruntime's {op} requires axis within the input's rank")
      for op in _AXIS_OPS),
    ("Transpose", _perm_size, "onnxruntime's Transpose requires perm to permute every axis"),
    ("Squeeze", _empty_axes, "onnxruntime's Squeeze reads an empty-named axes input and "
                             "fails (axes_tensor != nullptr)"),
    ("Unsqueeze", _empty_axes, "onnxruntime's Unsqueeze reads an empty-named axes input"),
    ("Squeeze", _squeezes_unknown_dims,
     "a Squeeze without axes removes every dim that is 1 when it runs, and inference does "
     "not know each dim of this input (a symbolic dim fed as 1 goes too)"),
    ("Cast", _saturate, "onnxruntime's Cast takes saturate only for a cast to float 8"),
    ("CastLike", _saturate, "onnxruntime's CastLike takes saturate only for a cast to float "
                            "8"),
    ("Resize", _resize_window_refused,
     "onnxruntime's Resize takes antialias only in mode linear or cubic, and exclude_outside "
     "only in mode cubic or in mode linear with antialias"),
    ("Resize", _cubic_not_float,
     "onnxruntime's Resize runs mode cubic on float and float16 data only (\"Tensor type "
     "mismatch\" for integers)"),
    ("Resize", _cropped_roi_not_float,
     "onnxruntime reads the roi of a Resize in mode tf_crop_and_resize as float only "
     "(\"Tensor type mismatch\")"),
    ("Clip", _bounds_crossed, "onnxruntime's Clip requires its min attribute at most its max "
                              "(min_ <= max_)"),
    ("Conv", _window_too_large,
     "onnxruntime refuses a window larger than the padded input (ONNX's shape inference "
     "rounds such an output dim up to 1)"),
    ("MaxPool", _window_too_large,
     "onnxruntime refuses a window larger than the padded input"),
    ("AveragePool", _window_too_large,
     "onnxruntime refuses a window larger than the padded input"),
    ("Conv", _same_pad_dilated,
     "onnxruntime's Conv takes no dilation with auto_pad SAME_UPPER or SAME_LOWER"),
    ("Dropout", lambda n, t: (_attr(n, "ratio") is not None
                              and not 0.0 <= float(_attr(n, "ratio")) < 1.0),
     "onnxruntime's Dropout requires ratio in [0, 1)"),
    *((op, _block_size_per_tensor,
       f"onnxruntime's {op} takes a non-zero block_size only for blocked quantization (a "
       "scale of the input's rank); the node's scale is per tensor or per axis")
      for op in ("QuantizeLinear", "DequantizeLinear")),
    ("Loop", _no_trip_count,
     "a Loop without its trip count M runs until its body's condition turns false, which "
     "no check of the draw can tell will happen (a run of it may never end)"),
    *((op, _conv_group_mismatch,
       f"onnxruntime's {op} requires input channels = weight channels x group")
      for op in ("Conv", "ConvInteger", "QLinearConv")),
    ("ConvTranspose", _conv_group_mismatch,
     "onnxruntime's ConvTranspose requires input channels = weight dim 0, a multiple of "
     "group"),
    ("ConvTranspose", _output_padding_past_stride,
     "onnxruntime's ConvTranspose requires output_padding below the stride (\"output_padding "
     "may be too large for stride\"; the spec allows it below the dilation too)"),
]


def runtime_reason(node: NodeProto, types: dict[str, TypeProto]) -> str | None:
    """The reason of the first :data:`RUNTIME_REFUSALS` entry ``node`` matches (None: no
    known refusal)."""
    for op, pred, why in RUNTIME_REFUSALS:
        if node.op_type == op and pred(node, types):
            return why
    return None
