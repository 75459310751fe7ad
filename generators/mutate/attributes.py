"""Attribute values at their edges, read from each node's op schema (``onnx.defs``).

One edit per mutation, on one node of the main graph: a schema default written out where it
was absent, or dropped where it was written; a non-negative ``axis``/``axes`` (attribute or
``axes`` input) made negative; Transpose's ``perm`` made explicit, dropped, or changed (two
equal-sized axes swapped, else any permutation); zero and huge pads (Conv and pooling ``pads``,
Pad's ``pads`` input or attribute); a non-default value for an optional attribute (flags
flipped, floats at 0, negative, tiny and huge, ``auto_pad`` and the modes of Resize, Pad and
Gelu). Edits that change shapes re-declare the types that follow.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from onnx import AttributeProto, ModelProto, NodeProto, TypeProto, defs, numpy_helper

from generators.builder import attribute
from generators.mutate.graph import (
    all_names,
    attr,
    consumers,
    fresh,
    infer_types,
    list_initializers_as_inputs,
    opset_of,
    refresh_types,
    remove_attr,
    static_shape,
)
from generators.mutate.spec import Mutator

#: Opset from which axis attributes and inputs accept negative values.
NEGATIVE_AXES_SINCE = 11
#: Ops whose ``axis`` counts the output's dims, or is not a dim index: left alone.
_AXIS_EXCEPTIONS = frozenset({"OneHot", "Unsqueeze"})
#: Integer attributes that are 0/1 flags.
FLAGS = frozenset({"keepdims", "transA", "transB", "ceil_mode", "count_include_pad",
                   "select_last_index", "exclusive", "reverse", "largest", "sorted",
                   "noop_with_empty_axes", "detect_negative", "detect_positive", "allowzero",
                   "upper"})
#: Float attributes given edge values.
FLOAT_ATTRIBUTES = frozenset({"alpha", "beta", "gamma", "epsilon", "lambd", "bias"})
#: String attributes -> values to try instead of the default.
STRING_EDGES: dict[str, tuple[str, ...]] = {
    "auto_pad": ("SAME_UPPER", "SAME_LOWER", "VALID"),
    "approximate": ("tanh",),
    "nearest_mode": ("floor", "ceil", "round_prefer_ceil"),
    "coordinate_transformation_mode": ("align_corners", "asymmetric", "pytorch_half_pixel",
                                       "half_pixel"),
    "mode": ("edge",),
}
#: Ops whose ``pads`` attribute is ``[begin..., end...]`` over the spatial dims.
WINDOW_OPS = frozenset({"Conv", "MaxPool", "AveragePool", "LpPool"})
#: Extra elements (beyond the input's) a huge Pad may create.
MAX_PADDED = 1 << 15


@dataclass
class Site:
    """One node of the main graph and what edits need to know about it.

    Attributes:
        model: the model (being changed in place).
        node: the node.
        schema: its op schema at the model's opset, or None (unknown op or domain).
        types: tensor types of the main graph (:func:`generators.mutate.graph.infer_types`).
        opset: the model's default-domain opset.
    """

    model: ModelProto
    node: NodeProto
    schema: defs.OpSchema | None
    types: dict[str, TypeProto]
    opset: int

    def rank(self, name: str) -> int | None:
        """Rank of tensor ``name`` where shape inference knows it."""
        tp = self.types.get(name)
        if tp is None or not tp.tensor_type.HasField("shape"):
            return None
        return len(tp.tensor_type.shape.dim)

    def shape(self, name: str) -> tuple[int, ...] | None:
        """Static shape of tensor ``name``, or None."""
        tp = self.types.get(name)
        return static_shape(tp) if tp is not None else None

    def initializer(self, name: str) -> np.ndarray | None:
        """The value of initializer ``name``, or None."""
        for t in self.model.graph.initializer:
            if t.name == name:
                return numpy_helper.to_array(t)
        return None

    def set_input_tensor(self, index: int, array: np.ndarray) -> None:
        """Make the node's input ``index`` an initializer holding ``array``: rewritten where
        only this node reads it, else a new initializer for this node alone."""
        g = self.model.graph
        old = self.node.input[index]
        listed = {i.name for i in g.input}
        if len(consumers(g).get(old, [])) == 1 and old not in listed:
            for t in g.initializer:
                if t.name == old:
                    t.CopyFrom(numpy_helper.from_array(array, old))
            return
        name = fresh(all_names(self.model), old)
        g.initializer.append(numpy_helper.from_array(array, name))
        list_initializers_as_inputs(self.model)
        self.node.input[index] = name


#: ``(site, rng) -> True`` when the edit changed the node (and False with no side effects).
Edit = Callable[[Site, random.Random], bool]


def _defaults(site: Site) -> dict[str, AttributeProto]:
    if site.schema is None:
        return {}
    return {name: a.default_value for name, a in site.schema.attributes.items()
            if a.default_value.type != AttributeProto.UNDEFINED}


def explicit_default(site: Site, rng: random.Random) -> bool:
    """Write out one schema default the node leaves absent."""
    absent = [n for n in _defaults(site) if attr(site.node, n) is None]
    if not absent:
        return False
    value = AttributeProto()
    value.CopyFrom(_defaults(site)[rng.choice(absent)])
    site.node.attribute.append(value)
    return True


def drop_default(site: Site, rng: random.Random) -> bool:
    """Drop one attribute whose value is the schema default."""
    same = [n for n, d in _defaults(site).items()
            if (a := attr(site.node, n)) is not None and _same(a, d)]
    if not same:
        return False
    remove_attr(site.node, rng.choice(same))
    return True


def _same(a: AttributeProto, b: AttributeProto) -> bool:
    probe = AttributeProto()
    probe.CopyFrom(a)
    probe.doc_string = b.doc_string
    probe.name = b.name
    return probe == b


def _axis_rank(site: Site) -> int | None:
    if site.node.op_type in _AXIS_EXCEPTIONS or not site.node.input:
        return None
    return site.rank(site.node.input[0])


def negative_axis(site: Site, rng: random.Random) -> bool:
    """A non-negative ``axis`` or ``axes`` (attribute, or the ``axes`` input initializer) made
    negative (``a - rank``; for Unsqueeze the output's rank)."""
    if site.opset < NEGATIVE_AXES_SINCE:
        return False
    n = site.node
    rank = site.rank(n.output[0]) if n.op_type == "Unsqueeze" and n.output else _axis_rank(site)
    if rank is None:
        return False
    choices: list[Callable[[], None]] = []
    a = attr(n, "axis")
    if a is not None and a.type == AttributeProto.INT and 0 <= a.i < rank:
        choices.append(lambda: setattr(a, "i", a.i - rank))
    axes = attr(n, "axes")
    if axes is not None and any(0 <= v < rank for v in axes.ints):
        def negate_attr() -> None:
            values = [v - rank if 0 <= v < rank else v for v in axes.ints]
            del axes.ints[:]
            axes.ints.extend(values)
        choices.append(negate_attr)
    index = _input_index(site, "axes")
    value = site.initializer(n.input[index]) if index is not None else None
    if value is not None and value.ndim <= 1 and ((value >= 0) & (value < rank)).any():
        choices.append(lambda: site.set_input_tensor(
            index, np.where((value >= 0) & (value < rank), value - rank, value).astype(
                value.dtype)))
    if not choices:
        return False
    rng.choice(choices)()
    return True


def _input_index(site: Site, formal: str) -> int | None:
    """Index of the node's input whose schema name is ``formal`` when it is given."""
    if site.schema is None:
        return None
    for k, param in enumerate(site.schema.inputs):
        if param.name == formal and k < len(site.node.input) and site.node.input[k]:
            return k
    return None


def transpose_perm(site: Site, rng: random.Random) -> bool:
    """Transpose's ``perm``: the default (reversed) written out or dropped, two equal-sized
    axes swapped (same output shape), or any other permutation."""
    n = site.node
    if n.op_type != "Transpose":
        return False
    rank = site.rank(n.input[0])
    shape = site.shape(n.input[0])
    if rank is None or rank < 2:
        return False
    reverse = list(range(rank))[::-1]
    perm = attr(n, "perm")
    if perm is None:
        n.attribute.append(attribute("perm", reverse))
        return True
    current = list(perm.ints)
    if current == reverse and rng.random() < 0.5:
        remove_attr(n, "perm")
        return True
    pairs = [(i, j) for i in range(rank) for j in range(i + 1, rank)
             if shape is not None and shape[current[i]] == shape[current[j]]]
    new = list(current)
    if pairs:
        i, j = rng.choice(pairs)
        new[i], new[j] = new[j], new[i]
    else:
        while new == current:
            rng.shuffle(new)
    del perm.ints[:]
    perm.ints.extend(new)
    refresh_types(site.model)
    return True


def window_pads(site: Site, rng: random.Random) -> bool:
    """Conv and pooling ``pads``: zeros written out where absent, or set to zero or to the
    largest the window allows (kernel - 1, times the dilation for Conv)."""
    n = site.node
    if n.op_type not in WINDOW_OPS:
        return False
    auto = attr(n, "auto_pad")
    if auto is not None and auto.s not in (b"", b"NOTSET"):
        return False
    kernel = _kernel(site)
    if kernel is None:
        return False
    pads = attr(n, "pads")
    spatial = len(kernel)
    dil = list(attr(n, "dilations").ints) if attr(n, "dilations") is not None and \
        n.op_type == "Conv" else [1] * spatial
    huge = [(k - 1) * d for k, d in zip(kernel, dil, strict=False)] * 2
    options = [[0] * (2 * spatial)] + ([huge] if any(huge) else [])
    if pads is not None:
        options = [o for o in options if o != list(pads.ints)]
    if not options:
        return False
    remove_attr(n, "pads")
    n.attribute.append(attribute("pads", rng.choice(options)))
    refresh_types(site.model)
    return True


def _kernel(site: Site) -> list[int] | None:
    k = attr(site.node, "kernel_shape")
    if k is not None:
        return list(k.ints)
    if site.node.op_type == "Conv" and len(site.node.input) > 1:
        w = site.shape(site.node.input[1])
        return list(w[2:]) if w is not None else None
    return None


def pad_amounts(site: Site, rng: random.Random) -> bool:
    """Pad's amounts (the ``pads`` input from opset 11, the attribute before): all zero (a
    no-op Pad), or huge in constant mode (up to :data:`MAX_PADDED` new elements)."""
    n = site.node
    if n.op_type != "Pad":
        return False
    shape = site.shape(n.input[0])
    if shape is None:
        return False
    mode = attr(n, "mode")
    constant = mode is None or mode.s == b"constant"
    grow = max(1, min(64, MAX_PADDED // max(1, int(np.prod(shape))))) if constant else 0
    zero = [0] * (2 * len(shape))
    huge = [rng.choice([0, grow]) for _ in zero]
    options = [zero] + ([huge] if any(huge) else [])
    index = _input_index(site, "pads")
    if index is not None:
        if site.initializer(n.input[index]) is None:
            return False
        site.set_input_tensor(index, np.asarray(rng.choice(options), np.int64))
    else:
        name = "pads" if attr(n, "pads") is not None else "paddings"
        if attr(n, name) is None:
            return False
        remove_attr(n, name)
        n.attribute.append(attribute(name, rng.choice(options)))
    refresh_types(site.model)
    return True


def non_default(site: Site, rng: random.Random) -> bool:
    """An optional attribute set to a value other than its default: a flag flipped, a float at
    0, negated, tiny or huge, or another string mode (``auto_pad`` drops explicit ``pads``)."""
    choices: list[tuple[str, object]] = []
    for name, default in _defaults(site).items():
        current = attr(site.node, name)
        value = current if current is not None else default
        if value.type == AttributeProto.INT and name in FLAGS and value.i in (0, 1):
            choices.append((name, 1 - value.i))
        elif value.type == AttributeProto.FLOAT and name in FLOAT_ATTRIBUTES:
            f = value.f
            choices += [(name, v) for v in (0.0, -f if f else -1.0, 1e-7, 1e7, 2 * f)
                        if v != f]
        elif value.type == AttributeProto.STRING and name in STRING_EDGES:
            choices += [(name, s) for s in STRING_EDGES[name] if s.encode() != value.s]
    if not choices:
        return False
    name, value = rng.choice(choices)
    remove_attr(site.node, name)
    if name == "auto_pad":
        remove_attr(site.node, "pads")
    site.node.attribute.append(attribute(name, value))
    refresh_types(site.model)
    return True


#: The edits, each tried on nodes in a random order until one applies.
EDITS: tuple[Edit, ...] = (explicit_default, drop_default, negative_axis, transpose_perm,
                           window_pads, pad_amounts, non_default)


def _schema(node: NodeProto, opset: int, model: ModelProto) -> defs.OpSchema | None:
    domain = node.domain if node.domain not in ("", "ai.onnx") else ""
    version = opset if not domain else opset_of(model, domain)
    try:
        return defs.get_schema(node.op_type, version, domain)
    except Exception:
        return None


def edit_attributes(model: ModelProto, rng: random.Random) -> ModelProto | None:
    """One edge-value edit on one node of the main graph, or None where none applies."""
    opset = opset_of(model)
    types = infer_types(model)
    pairs = [(k, e) for k in range(len(model.graph.node)) for e in EDITS]
    rng.shuffle(pairs)
    schemas: dict[int, defs.OpSchema | None] = {}
    for k, edit in pairs:
        node = model.graph.node[k]
        if k not in schemas:
            schemas[k] = _schema(node, opset, model)
        if edit(Site(model, node, schemas[k], types, opset), rng):
            return model
    return None


MUTATORS = (Mutator("attribute-edges", "attribute", edit_attributes, weight=2.0),)
