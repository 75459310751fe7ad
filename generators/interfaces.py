"""Interface forms: how a generated model's graph inputs and outputs are declared (registry
:data:`INTERFACES`; a new form is one new entry).

The composition loop (:mod:`generators.generate`) builds a graph whose inputs declare static
shapes (some batch dims symbolic) and whose inputs and outputs are tensors. The forms here
rewrite that interface after the loop, drawing from their own random stream (the seed
salted with :data:`INTERFACE_SALT`), so a model that draws no form is the model the loop
built, and every model stays a pure function of the seed and the hints:

- ``exporter-<name>``: the model shaped as one exporter of :data:`generators.exporters.
  EXPORTERS` writes it (producer fields, graph name, dim names, constants where it puts
  them: :data:`CONSTANT_PLACEMENTS`, doc string, metadata); at most one per model, among
  those whose names fit the name style;
- ``seq-input`` / ``seq-input-unranked``: a graph input of type ``seq(tensor(float))``
  (element shape declared, or without shape) read by SequenceAt, ConcatFromSequence or
  SequenceLength (opset 11 and later);
- ``seq-output``: a graph output of type ``seq(tensor(float))`` (SplitToSequence and its
  ConcatFromSequence round trip, or SequenceConstruct);
- ``optional-input`` / ``optional-input-absent`` / ``optional-output``:
  ``optional(tensor(float))`` graph inputs read by OptionalHasElement and OptionalGetElement
  (fed present, or fed None through an If on OptionalHasElement), graph outputs made by
  Optional, present or empty (opset 15 and later);
- ``overridable-initializers``: some initializers also listed as graph inputs (IR 4 and
  later, where they are overridable inputs that keep their value when not fed);
- ``ir3-initializer-inputs``: every initializer listed as a graph input, as IR 3 requires
  (made by the opset draw: opsets 7 and 8 give IR 3, :meth:`GraphBuilder.model`);
- ``dim-param-shared``, ``dim-param-distinct``, ``dim-unknown``, ``dim-param-expression``:
  graph input dims declared as one symbol shared by two dims of the same size, distinct
  symbols, a dim with neither ``dim_value`` nor ``dim_param``, or a derived-dim expression
  (``2*s0``, ``s0 + 1``) consistent with the sizes fed.

Declarations change, sizes do not: every dim keeps the size the graph was built for, which
:attr:`Site.shapes` records per input (``GeneratedModel.input_shapes``) so that the feeds
(:func:`generators.inputs.synthesize_inputs`) take it; a sequence input's entry is
``[length, *element dims]``. A symbol names one size throughout the model.

A graph input without any shape (rank unknown) is no form: ``onnx.checker`` requires the
``shape`` field of a main graph input's tensor type; only a sequence's element may lack one
(``seq-input-unranked``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, TypeProto, ValueInfoProto, helper

from fuzzer.registry import Registry
from generators.builder import GraphBuilder, value_info
from generators.exporters import EXPORTERS, GENERIC_DIMS, Exporter
from generators.inputs import ABSENT
from generators.values import FLOAT, INT64, NP_DTYPE, Value

#: salt of the seed that draws the interface forms (the model's own stream stays as it is).
INTERFACE_SALT = 0x1F0C
#: largest pooled value (elements) a type form reads.
MAX_ELEMENTS = 1024

#: derived-dim templates -> the size of the symbol inside for a dim of size n (None: the
#: template cannot give n).
EXPRESSIONS: dict[str, Callable[[int], int | None]] = {
    "2*{}": lambda n: n // 2 if n >= 2 and n % 2 == 0 else None,
    "{} + 1": lambda n: n - 1 if n >= 2 else None,
    "{}//2": lambda n: 2 * n,
    "floor({}/2)": lambda n: 2 * n,
    "{}*{}": lambda n: 1 if n == 1 else None,
}
#: the templates each exporter writes (others: all of them).
EXPORTER_EXPRESSIONS: dict[str, tuple[str, ...]] = {
    "torch_dynamo": ("2*{}", "{} + 1", "{}//2"),
}


@dataclass
class Site:
    """What the forms of one model read and edit.

    Attributes:
        b: the builder of the main graph, its loop done and outputs declared.
        rng: the forms' random stream.
        shapes: concrete shapes of graph inputs whose declaration is not static
            (``{name: dims}``; a sequence's is ``[length, *element dims]``), edited in place.
        style: the model's name style.
        exporter: the exporter profile drawn, or None.
        symbols: dim name -> the size it stands for (``""`` never appears).
        removed: indices (in the loop's node list) of nodes a form took out.
        prepended: nodes a form put at the head of the node list (after any removal).
        held: indices of nodes no form takes out.
    """

    b: GraphBuilder
    rng: random.Random
    shapes: dict[str, list[int]]
    style: str
    exporter: Exporter | None = None
    symbols: dict[str, int] = field(default_factory=dict)
    removed: list[int] = field(default_factory=list)
    prepended: int = 0
    held: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Interface:
    """One interface form.

    Attributes:
        name: registry name.
        kind: ``"exporter"``, ``"types"``, ``"initializers"`` or ``"dims"``.
        rate: probability that a model draws it (scaled by ``Recipe.interfaces``); forms of
            one ``group`` draw once, with the first member's rate.
        present: whether a ModelProto has the form (read from the proto alone).
        graph: edits the builder; returns False where the model has no place for it.
            None: no generator step makes it (it comes from elsewhere, see ``made_by``).
        model: edits the built ModelProto after ``graph`` applied (optional).
        since, until: opsets at which it exists.
        group: forms of one group are exclusive (at most one per model).
        fits: whether it may be drawn for a site (beyond the opsets).
        made_by: where a form without ``graph`` comes from.
    """

    name: str
    kind: str
    rate: float
    present: Callable[[ModelProto], bool]
    graph: Callable[[Site], bool] | None = None
    model: Callable[[Site, ModelProto], None] | None = None
    since: int = 7
    until: int = 21
    group: str = ""
    fits: Callable[[Site], bool] = lambda site: True
    made_by: str = ""


# -- helpers ---------------------------------------------------------------------------------
def _typed(name: str, type_proto: TypeProto) -> ValueInfoProto:
    vi = ValueInfoProto()
    vi.name = name
    vi.type.CopyFrom(type_proto)
    return vi


def _float_value(site: Site, min_rank: int = 1) -> Value | None:
    """A pooled float32 value of rank >= ``min_rank`` and at most :data:`MAX_ELEMENTS`."""
    cands = [v for v in site.b.pool
             if v.dtype == FLOAT and v.rank >= min_rank and v.size <= MAX_ELEMENTS]
    return site.rng.choice(cands) if cands else None


def _output(site: Site, name: str, type_proto: TypeProto) -> None:
    site.b.outputs.append(_typed(name, type_proto))
    site.b.output_names.add(name)


def _new_input(site: Site, type_proto: TypeProto, shape: list[int]) -> str:
    name = site.b.namer.graph_input()
    site.b.inputs.append(_typed(name, type_proto))
    site.b.input_names.add(name)
    site.shapes[name] = shape
    return name


def _tensor_type(shape: tuple[int, ...] | None) -> TypeProto:
    return helper.make_tensor_type_proto(FLOAT, None if shape is None else list(shape))


def _initializer_names(b: GraphBuilder) -> set[str]:
    return {t.name for t in b.initializers}


def _fed_tensor_inputs(b: GraphBuilder) -> list[tuple[ValueInfoProto, tuple[int, ...]]]:
    """Graph inputs that take a feed and are tensors, with the size of each dim."""
    built = {v.name: v.shape for v in b.pool if v.name in b.input_names}
    inits = _initializer_names(b)
    return [(vi, built[vi.name]) for vi in b.inputs
            if vi.name not in inits and vi.type.HasField("tensor_type")
            and vi.name in built]


# -- dims ------------------------------------------------------------------------------------
def _bind_existing(site: Site) -> None:
    """Record the sizes the loop's symbolic dims stand for."""
    for vi, sizes in _fed_tensor_inputs(site.b):
        for dim, size in zip(vi.type.tensor_type.shape.dim, sizes, strict=True):
            if dim.dim_param:
                site.symbols.setdefault(dim.dim_param, size)


def _vocabulary(site: Site) -> tuple[str, ...]:
    named = tuple(d for d in (site.exporter.dims if site.exporter else ()) if d)
    return named or GENERIC_DIMS


def _fresh(site: Site, size: int) -> str:
    """A dim name not yet used, bound to ``size``."""
    vocab = _vocabulary(site)
    free = [d for d in vocab if d not in site.symbols]
    name = site.rng.choice(free) if free else f"{site.rng.choice(vocab)}_{len(site.symbols)}"
    while name in site.symbols:
        name += "_"
    site.symbols[name] = size
    return name


def _static_slots(site: Site) -> list[tuple[ValueInfoProto, int, int]]:
    """``(input, axis, size)`` of every statically declared dim of a fed tensor input."""
    return [(vi, axis, size) for vi, sizes in _fed_tensor_inputs(site.b)
            for axis, (dim, size) in enumerate(zip(vi.type.tensor_type.shape.dim, sizes,
                                                   strict=True))
            if dim.HasField("dim_value")]


def _declare(site: Site, vi: ValueInfoProto, axis: int, dim_param: str | None) -> None:
    """Declare dim ``axis`` of ``vi`` as ``dim_param`` (None: neither field set) and record
    the input's concrete shape."""
    built = next(v.shape for v in site.b.pool if v.name == vi.name)
    site.shapes[vi.name] = list(built)
    dim = vi.type.tensor_type.shape.dim[axis]
    dim.Clear()
    if dim_param is not None:
        dim.dim_param = dim_param


def _shared(site: Site) -> bool:
    """One new symbol on two static dims of the same size (of two inputs where possible)."""
    by_size: dict[int, list[tuple[ValueInfoProto, int, int]]] = {}
    for slot in _static_slots(site):
        by_size.setdefault(slot[2], []).append(slot)
    pairs = [s for s in by_size.values() if len(s) >= 2]
    if not pairs:
        return False
    across = [s for s in pairs if len({vi.name for vi, _, _ in s}) >= 2]
    slots = site.rng.choice(across or pairs)
    if across:
        first = site.rng.choice(slots)
        second = site.rng.choice([s for s in slots if s[0].name != first[0].name])
    else:
        first, second = site.rng.sample(slots, 2)
    name = _fresh(site, first[2])
    for vi, axis, _ in (first, second):
        _declare(site, vi, axis, name)
    return True


def _distinct(site: Site) -> bool:
    """Two or three static dims, each under a symbol of its own."""
    slots = _static_slots(site)
    if len(slots) < 2:
        return False
    for vi, axis, size in site.rng.sample(slots, min(len(slots), site.rng.randint(2, 3))):
        _declare(site, vi, axis, _fresh(site, size))
    return True


def _unknown(site: Site) -> bool:
    """One or two static dims declared with neither a value nor a name."""
    slots = _static_slots(site)
    if not slots:
        return False
    for vi, axis, _ in site.rng.sample(slots, min(len(slots), site.rng.randint(1, 2))):
        _declare(site, vi, axis, None)
    return True


def _expression(site: Site) -> bool:
    """One static dim declared as a derived-dim expression whose symbols are bound so that
    it evaluates to the dim's size (``2*s0`` on a dim of 6 binds ``s0`` to 3)."""
    slots = _static_slots(site)
    site.rng.shuffle(slots)
    names = EXPORTER_EXPRESSIONS.get(site.exporter.name if site.exporter else "",
                                     tuple(EXPRESSIONS))
    for vi, axis, size in slots:
        usable = [t for t in names if EXPRESSIONS[t](size) is not None]
        if not usable:
            continue
        template = site.rng.choice(usable)
        inner = EXPRESSIONS[template](size)
        assert inner is not None
        symbols = [_fresh(site, inner) for _ in range(template.count("{}"))]
        _declare(site, vi, axis, template.format(*symbols))
        return True
    return False


def _has_dim(model: ModelProto, test: Callable[[Any, dict[str, int]], bool]) -> bool:
    counts: dict[str, int] = {}
    dims = [d for vi in model.graph.input if vi.type.HasField("tensor_type")
            for d in vi.type.tensor_type.shape.dim]
    for d in dims:
        if d.dim_param:
            counts[d.dim_param] = counts.get(d.dim_param, 0) + 1
    return any(test(d, counts) for d in dims)


# -- types -----------------------------------------------------------------------------------
def _seq_input(site: Site, ranked: bool = True) -> bool:
    """A ``seq(tensor(float))`` input whose elements have the shape of a pooled value x:
    ``x + SequenceAt(s, i)`` becomes a graph output, with ConcatFromSequence(s) or
    SequenceLength(s) as a second one."""
    b, x = site.b, _float_value(site)
    if x is None:
        return False
    length = site.rng.randint(2, 3)
    seq = helper.make_sequence_type_proto(_tensor_type(x.shape if ranked else None))
    s = _new_input(site, seq, [length, *x.shape])
    index = b.const(np.array(site.rng.choice((0, 1, -1)), np.int64), "SequenceAt")
    at = b.node("SequenceAt", [s, index.name])[0]
    b.graph_output(b.op("Add", [x, at], FLOAT, x.shape))
    if site.rng.random() < 0.5:
        c = b.node("ConcatFromSequence", [s], axis=0)[0]
        b.outputs.append(value_info(c, FLOAT, [length * x.shape[0], *x.shape[1:]]))
        b.output_names.add(c)
    else:
        n = b.node("SequenceLength", [s])[0]
        b.outputs.append(value_info(n, INT64, []))
        b.output_names.add(n)
    return True


def _seq_output(site: Site) -> bool:
    """A ``seq(tensor(float))`` graph output: SplitToSequence(x) (with its
    ConcatFromSequence round trip as a second output half the time) or
    SequenceConstruct(x, y)."""
    b, x = site.b, _float_value(site)
    if x is None:
        return False
    if site.rng.random() < 0.6:
        s = b.node("SplitToSequence", [x.name], axis=0)[0]
        _output(site, s, helper.make_sequence_type_proto(_tensor_type((1, *x.shape[1:]))))
        if site.rng.random() < 0.5:
            b.graph_output(b.op("ConcatFromSequence", [s], FLOAT, x.shape, axis=0))
        return True
    y = _float_value(site) or x
    s = b.node("SequenceConstruct", [x.name, y.name])[0]
    elem = _tensor_type(x.shape if y.shape == x.shape else None)
    _output(site, s, helper.make_sequence_type_proto(elem))
    return True


def _optional_input(site: Site, absent: bool = False) -> bool:
    """An ``optional(tensor(float))`` input o of a pooled value x's shape, read as
    ``Where(OptionalHasElement(o), OptionalGetElement(o), x)`` and fed present; with
    ``absent``, read through an If on OptionalHasElement(o) whose then branch reads
    OptionalGetElement(o) and whose else branch passes x on, and fed None (``shapes``
    entry ``[ABSENT]``, :data:`generators.inputs.ABSENT`). The result becomes a graph
    output."""
    b, x = site.b, _float_value(site)
    if x is None:
        return False
    o = _new_input(site, helper.make_optional_type_proto(_tensor_type(x.shape)),
                   [ABSENT] if absent else list(x.shape))
    has = b.node("OptionalHasElement", [o])[0]
    if not absent:
        got = b.node("OptionalGetElement", [o])[0]
        b.graph_output(b.op("Where", [has, got, x], FLOAT, x.shape))
        return True
    branches = {}
    for branch, op, source in (("then_branch", "OptionalGetElement", o),
                               ("else_branch", "Identity", x.name)):
        out = b.namer.tensor(op)
        node = helper.make_node(op, [source], [out], name=b.namer.node(op) or None)
        branches[branch] = helper.make_graph([node], branch, [], [
            value_info(out, FLOAT, x.shape)])
    b.graph_output(b.op("If", [has], FLOAT, x.shape, **branches))
    return True


def _optional_output(site: Site) -> bool:
    """An ``optional(tensor(float))`` graph output: Optional(x), or an empty Optional."""
    b, x = site.b, _float_value(site)
    if x is None:
        return False
    kind = helper.make_optional_type_proto(_tensor_type(x.shape))
    if site.rng.random() < 0.7:
        o = b.node("Optional", [x.name])[0]
    else:
        o = b.node("Optional", [], type=helper.make_attribute("type", _tensor_type(x.shape)))[0]
    _output(site, o, kind)
    return True


def _guarded_optional(model: ModelProto) -> bool:
    """Whether an If node of the main graph reads OptionalGetElement in a branch (the form
    that an absent optional input runs through)."""
    return any(n.op_type == "If" and any(
        m.op_type == "OptionalGetElement" for a in n.attribute if a.HasField("g")
        for m in a.g.node) for n in model.graph.node)


def _io_types(model: ModelProto, where: str, kind: str,
              test: Callable[[TypeProto], bool] = lambda t: True) -> bool:
    values = model.graph.input if where == "input" else model.graph.output
    return any(vi.type.HasField(kind) and test(vi.type) for vi in values)


# -- initializers ----------------------------------------------------------------------------
def _overridable(site: Site) -> bool:
    """Some initializers (at least one, not all where there are several) also listed as
    graph inputs, at random places among the inputs. Only initializers of the element
    types of :data:`generators.values.NP_DTYPE` are listed: onnxruntime refuses a model
    with a graph input of another (complex128: "MLDataType ... not supported")."""
    b = site.b
    listed = b.input_names
    free = [t for t in b.initializers if t.name not in listed and t.data_type in NP_DTYPE]
    if not free:
        return False
    k = site.rng.randint(1, max(1, len(free) - 1))
    for t in site.rng.sample(free, k):
        b.inputs.insert(site.rng.randint(0, len(b.inputs)),
                        value_info(t.name, t.data_type, list(t.dims)))
        b.input_names.add(t.name)
    return True


def _initializer_inputs(model: ModelProto) -> tuple[int, int]:
    inputs = {vi.name for vi in model.graph.input}
    listed = sum(t.name in inputs for t in model.graph.initializer)
    return listed, len(model.graph.initializer)


# -- exporters -------------------------------------------------------------------------------
def _rename_dims(site: Site) -> None:
    """Give the loop's symbolic input dims the exporter's dim names (``""``: unnamed)."""
    renamed: dict[str, str | None] = {}
    for vi, _sizes in _fed_tensor_inputs(site.b):
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            if not dim.dim_param:
                continue
            if dim.dim_param not in renamed:
                choice = site.rng.choice(site.exporter.dims) if site.exporter else ""
                renamed[dim.dim_param] = _fresh(site, site.symbols[dim.dim_param]) \
                    if choice else None
            _declare(site, vi, axis, renamed[dim.dim_param])


def _constants_to_initializers(site: Site) -> None:
    """Main-graph Constant nodes holding a ``value`` tensor become initializers (those whose
    output is a graph output stay, and those ``site.held``); their indices go to
    ``site.removed``."""
    b = site.b
    kept = []
    for index, n in enumerate(b.nodes):
        if n.op_type == "Constant" and not n.domain and len(n.attribute) == 1 and \
                n.attribute[0].name == "value" and n.output[0] not in b.output_names and \
                index not in site.held:
            t = n.attribute[0].t
            t.name = n.output[0]
            b.initializers.append(t)
            site.removed.append(index)
        else:
            kept.append(n)
    b.nodes[:] = kept


#: most elements of an initializer that ``small-as-constant`` turns into a Constant node.
SMALL_CONSTANT = 8


def _small_initializers_to_constants(site: Site) -> None:
    """Small int64 initializers (shapes, axes, indices: at most :data:`SMALL_CONSTANT`
    elements) not listed as graph inputs become Constant nodes at the head of the graph, as
    the TorchScript exporter leaves them (opset 9 and later: Constant-1 holds floats only);
    ``site.prepended`` counts them."""
    b = site.b
    if b.opset < 9:
        return
    moved = [t for t in b.initializers if t.data_type == INT64 and t.name not in b.input_names
             and int(np.prod(t.dims)) <= SMALL_CONSTANT]
    if not moved:
        return
    names = {t.name for t in moved}
    b.initializers[:] = [t for t in b.initializers if t.name not in names]
    body = b.nodes[:]
    b.nodes.clear()
    for t in moved:
        b.node("Constant", [], outputs=[t.name], value=t)
    b.nodes.extend(body)
    site.prepended += len(moved)


#: where an exporter keeps its constants (:attr:`generators.exporters.Exporter.constants`).
CONSTANT_PLACEMENTS: dict[str, Callable[[Site], None]] = {
    "keep": lambda site: None,
    "initializer": _constants_to_initializers,
    "small-as-constant": _small_initializers_to_constants,
}


def _exporter_graph(exporter: Exporter) -> Callable[[Site], bool]:
    def apply(site: Site) -> bool:
        site.exporter = exporter
        _rename_dims(site)
        CONSTANT_PLACEMENTS[exporter.constants](site)
        return True
    return apply


def _exporter_model(site: Site, model: ModelProto) -> None:
    """Producer fields, graph name, doc string and metadata of the site's exporter."""
    e = site.exporter
    assert e is not None
    model.producer_name = e.producer
    model.producer_version = site.rng.choice(e.versions)
    if e.domain:
        model.domain = e.domain
    model.graph.name = e.graph_name(site.rng)
    if e.graph_doc:
        model.graph.doc_string = e.graph_doc
    for key, value in e.metadata:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    if model.ir_version >= 10:
        for n in model.graph.node:
            for key in e.node_metadata:
                entry = n.metadata_props.add()
                entry.key, entry.value = key, f"{n.op_type.lower()}: {n.name}"


def _exporter_form(e: Exporter) -> Interface:
    return Interface(
        f"exporter-{e.name}", "exporter", 0.5,
        lambda m: m.producer_name == e.producer and (not e.domain or m.domain == e.domain)
        and any(m.producer_version == v for v in e.versions),
        _exporter_graph(e), _exporter_model, since=e.since, group="exporter",
        fits=lambda site: site.style in e.styles)


INTERFACES: Registry[Interface] = Registry("interface form", {
    **{f.name: f for f in map(_exporter_form, EXPORTERS.values())},
    "seq-input": Interface(
        "seq-input", "types", 0.06,
        lambda m: _io_types(m, "input", "sequence_type",
                            lambda t: t.sequence_type.elem_type.tensor_type.HasField("shape")),
        _seq_input, since=11),
    "seq-input-unranked": Interface(
        "seq-input-unranked", "types", 0.03,
        lambda m: _io_types(m, "input", "sequence_type",
                            lambda t: not t.sequence_type.elem_type.tensor_type.HasField(
                                "shape")),
        lambda site: _seq_input(site, ranked=False), since=11),
    "seq-output": Interface(
        "seq-output", "types", 0.06, lambda m: _io_types(m, "output", "sequence_type"),
        _seq_output, since=11),
    "optional-input": Interface(
        "optional-input", "types", 0.08,
        lambda m: _io_types(m, "input", "optional_type")
        and any(n.op_type == "OptionalGetElement" for n in m.graph.node),
        _optional_input, since=15),
    "optional-input-absent": Interface(
        "optional-input-absent", "types", 0.04,
        lambda m: _io_types(m, "input", "optional_type") and _guarded_optional(m),
        lambda site: _optional_input(site, absent=True), since=15),
    "optional-output": Interface(
        "optional-output", "types", 0.08, lambda m: _io_types(m, "output", "optional_type"),
        _optional_output, since=15),
    "overridable-initializers": Interface(
        "overridable-initializers", "initializers", 0.1,
        lambda m: m.ir_version >= 4 and _initializer_inputs(m)[0] > 0, _overridable,
        since=9),
    "ir3-initializer-inputs": Interface(
        "ir3-initializer-inputs", "initializers", 0.0,
        lambda m: m.ir_version == 3 and 0 < _initializer_inputs(m)[0]
        == _initializer_inputs(m)[1],
        until=8, made_by="opsets 7 and 8 (IR 3): GraphBuilder.model lists every initializer"),
    "dim-param-shared": Interface(
        "dim-param-shared", "dims", 0.15,
        lambda m: _has_dim(m, lambda d, c: c.get(d.dim_param, 0) >= 2), _shared),
    "dim-param-distinct": Interface(
        "dim-param-distinct", "dims", 0.15,
        lambda m: _has_dim(m, lambda d, c: len(c) >= 2), _distinct),
    "dim-unknown": Interface(
        "dim-unknown", "dims", 0.1,
        lambda m: _has_dim(m, lambda d, c: not d.HasField("dim_value")
                           and not d.HasField("dim_param")), _unknown),
    "dim-param-expression": Interface(
        "dim-param-expression", "dims", 0.08,
        lambda m: _has_dim(m, lambda d, c: any(ch in d.dim_param for ch in "+*/(")),
        _expression),
})


def _members(form: Interface) -> list[Interface]:
    return [f for f in INTERFACES.values() if f.group == form.group] if form.group else [form]


def apply_interfaces(b: GraphBuilder, seed: int, scale: float, style: str,
                     shapes: dict[str, list[int]],
                     only: list[str] | None = None,
                     spans: list[tuple[str, int, int]] | None = None,
                     avoid: Sequence[str] = (),
                     held: Collection[int] = (),
                     ) -> tuple[ModelProto, list[str]]:
    """Draw the interface forms of one model, apply them and build its ModelProto.

    Args:
        b: the main graph's builder, its loop done and its outputs declared.
        seed: the model's seed (the forms draw from it salted with :data:`INTERFACE_SALT`).
        scale: factor of every form's rate (``Recipe.interfaces``; 0: none drawn).
        style: the model's name style (which exporters fit).
        shapes: concrete shapes of graph inputs not declared static, updated in place.
        only: apply exactly these forms (by name) where the model has a place for them,
            instead of drawing (``[]``: none).
        spans: ``(motif, first node, end)`` of the loop's motif draws, moved in place past
            the nodes a form took out or put at the head.
        avoid: features left out of the draw; forms named ``"interface:<name>"`` here are
            not drawn (:attr:`generators.hints.GenerationHints.avoid`).
        held: indices of nodes no form takes out (a motif's Constant anchors, which an
            exporter that keeps its constants as initializers would otherwise lift).

    Returns:
        ``(model, names of the forms applied, in registry order)``.

    Raises:
        KeyError: an unknown form in ``only``.
    """
    for name in only or ():
        INTERFACES[name]  # noqa: B018 (raises for an unknown name)
    if (not scale and only is None) or only == []:
        return b.model(), []
    site = Site(b, random.Random(seed ^ INTERFACE_SALT), shapes, style, held=frozenset(held))
    _bind_existing(site)
    applied: list[Interface] = []
    decided: set[str] = set()
    for form in INTERFACES.values():
        if form.group in decided or form.graph is None:
            continue
        if form.group:
            decided.add(form.group)
        members = [f for f in _members(form) if f.since <= b.opset <= f.until and f.fits(site)
                   and (f.name in only if only is not None
                        else f"interface:{f.name}" not in avoid)]
        if only is None and site.rng.random() >= form.rate * scale:
            continue
        if members:
            chosen = site.rng.choice(members)
            assert chosen.graph is not None
            if chosen.graph(site):
                applied.append(chosen)
    moved = site.removed or site.prepended
    for i, (motif, start, end) in enumerate(spans if spans is not None and moved else ()):
        spans[i] = (motif, start - sum(r < start for r in site.removed) + site.prepended,
                    end - sum(r < end for r in site.removed) + site.prepended)
    model = b.model()
    for form in applied:
        if form.model is not None:
            form.model(site, model)
    return model, [f.name for f in applied]


def forms_of(model: ModelProto) -> list[str]:
    """Names of the forms ``model`` has, read from the proto (registry order)."""
    return [f.name for f in INTERFACES.values() if f.present(model)]

