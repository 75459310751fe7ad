"""GraphBuilder: appends nodes, weights, graph inputs and outputs, and emits a ModelProto.

Protos are filled field by field (no ``onnx.helper.make_attribute`` type sniffing), which
keeps building a ~10-node model near 0.1 ms. The builder keeps the pool of
:class:`~generators.values.Value` objects that later ops may consume.

Weight placement (``weights`` argument, registry :data:`WEIGHT_PLACEMENTS`): ``initializer``,
``constant`` (a Constant node), ``input`` (an initializer also listed as a graph input; the
only legal layout for IR < 4, and an overridable input from IR 4 on).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from onnx import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    SparseTensorProto,
    TensorProto,
    ValueInfoProto,
    numpy_helper,
)

from generators.names import Namer
from generators.values import NP_DTYPE, Value
from generators.versions import ir_version_for

#: How a weight reaches its consumer.
WEIGHT_PLACEMENTS: tuple[str, ...] = ("initializer", "constant", "input")
#: Opset of Constant's ``sparse_value``.
SPARSE_SINCE = 11
#: In a builder that makes them (``sparse``), one Constant-placed weight in this many (of
#: rank 1 or more, not empty) holds its value as ``sparse_value``: the form a pruned
#: exporter writes, which a tool's own load and save must keep. Chosen by a hash of the
#: weight's name, so the choice draws nothing from the random stream and every other draw of
#: a seed stays as it was.
SPARSE_EVERY = 32

_NP_TO_ONNX = {v: k for k, v in NP_DTYPE.items()}


def tensor_proto(array: np.ndarray, name: str) -> TensorProto:
    """A TensorProto holding ``array`` as raw data (dtypes of :data:`NP_DTYPE`).

    Raises:
        KeyError: unsupported dtype.
    """
    t = TensorProto()
    t.name = name
    t.data_type = _NP_TO_ONNX[array.dtype]
    t.dims.extend(array.shape)
    t.raw_data = np.ascontiguousarray(array).tobytes()
    return t


def sparse_tensor(array: np.ndarray, name: str) -> SparseTensorProto:
    """``array`` (rank 1 or more) as a SparseTensorProto of its nonzero elements: ``values``
    named ``name``, ``indices`` 1-D int64 linear indices into the flattened array (ONNX spec,
    SparseTensorProto), ``dims`` the array's shape."""
    flat = array.ravel()
    idx = np.flatnonzero(flat).astype(np.int64)
    st = SparseTensorProto()
    st.values.CopyFrom(numpy_helper.from_array(flat[idx], name))
    st.indices.CopyFrom(numpy_helper.from_array(idx, name + "_indices"))
    st.dims.extend(array.shape)
    return st


#: the typed field of each element type (ONNX spec, TensorProto): 8- and 16-bit types and
#: bool in ``int32_data`` (float16 and bfloat16 as bit patterns), uint32/uint64 in
#: ``uint64_data``.
_TYPED_FIELD = {
    TensorProto.FLOAT: "float_data", TensorProto.DOUBLE: "double_data",
    TensorProto.INT64: "int64_data", TensorProto.INT32: "int32_data",
    TensorProto.INT16: "int32_data", TensorProto.INT8: "int32_data",
    TensorProto.UINT16: "int32_data", TensorProto.UINT8: "int32_data",
    TensorProto.BOOL: "int32_data", TensorProto.FLOAT16: "int32_data",
    TensorProto.BFLOAT16: "int32_data", TensorProto.UINT32: "uint64_data",
    TensorProto.UINT64: "uint64_data",
}


def store_typed(tensor: TensorProto) -> TensorProto:
    """Move ``tensor``'s ``raw_data`` into the typed field of its element type (in place;
    returned). Tensors of other types, or not stored raw, are left as they are."""
    field = _TYPED_FIELD.get(tensor.data_type)
    if field is None or not tensor.HasField("raw_data"):
        return tensor
    if tensor.data_type in (TensorProto.FLOAT16, TensorProto.BFLOAT16):
        values = np.frombuffer(tensor.raw_data, dtype="<u2").tolist()
    else:
        values = numpy_helper.to_array(tensor).reshape(-1).tolist()
    tensor.ClearField("raw_data")
    getattr(tensor, field).extend(int(v) if field != "float_data" and field != "double_data"
                                  else v for v in values)
    return tensor


def attribute(name: str, value: Any) -> AttributeProto:
    """An AttributeProto for an int, float, str, bytes, TensorProto, SparseTensorProto,
    GraphProto, a non-empty list of ints / floats, or a copy of an AttributeProto under
    ``name``.

    Raises:
        TypeError: any other value (including an empty list, whose type is ambiguous).
    """
    a = AttributeProto()
    if isinstance(value, AttributeProto):  # made elsewhere (e.g. a list of strings)
        a.CopyFrom(value)
        a.name = name
        return a
    a.name = name
    if isinstance(value, bool | int | np.integer):
        a.type = AttributeProto.INT
        a.i = int(value)
    elif isinstance(value, float | np.floating):
        a.type = AttributeProto.FLOAT
        a.f = float(value)
    elif isinstance(value, str | bytes):
        a.type = AttributeProto.STRING
        a.s = value.encode() if isinstance(value, str) else value
    elif isinstance(value, TensorProto):
        a.type = AttributeProto.TENSOR
        a.t.CopyFrom(value)
    elif isinstance(value, GraphProto):
        a.type = AttributeProto.GRAPH
        a.g.CopyFrom(value)
    elif isinstance(value, SparseTensorProto):
        a.type = AttributeProto.SPARSE_TENSOR
        a.sparse_tensor.CopyFrom(value)
    elif isinstance(value, list | tuple) and value:
        if all(isinstance(v, int | np.integer) for v in value):
            a.type = AttributeProto.INTS
            a.ints.extend(int(v) for v in value)
        else:
            a.type = AttributeProto.FLOATS
            a.floats.extend(float(v) for v in value)
    else:
        raise TypeError(f"attribute {name!r}: unsupported value {value!r}")
    return a


def value_info(name: str, dtype: int, shape: Sequence[int | str] | None) -> ValueInfoProto:
    """A tensor ValueInfoProto; ``shape`` items are ints or symbolic dim names; ``None`` leaves
    the shape unknown."""
    vi = ValueInfoProto()
    vi.name = name
    tt = vi.type.tensor_type
    tt.elem_type = dtype
    if shape is not None:
        dims = tt.shape.dim
        tt.shape.SetInParent()
        for d in shape:
            dim = dims.add()
            if isinstance(d, str):
                dim.dim_param = d
            else:
                dim.dim_value = d
    return vi


def static_dims(vi: ValueInfoProto) -> list[int] | None:
    """``vi``'s dims when it is a tensor of known rank whose every dim is a fixed positive
    size, else None (no shape, a symbolic or unknown dim, or a dim of 0)."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else 0 for d in tt.shape.dim]
    return dims if all(d > 0 for d in dims) else None


class GraphBuilder:
    """Builds one graph (the main graph or a subgraph body).

    Args:
        rng: Python random source (all choices).
        nprng: random arrays for weight values (``numpy.random.Generator`` or
            :class:`generators.pooled_random.PooledRandom`).
        opset: default-domain opset the model declares.
        namer: name source shared by the model and its subgraphs.
        weights: default weight placement, one of :data:`WEIGHT_PLACEMENTS`.
        outer: pool of outer-scope values a subgraph body may read.
        sparse: some Constant weights hold ``sparse_value`` (:data:`SPARSE_EVERY`).
    """

    def __init__(self, rng: random.Random, nprng: Any, opset: int,
                 namer: Namer, weights: str = "initializer",
                 outer: Iterable[Value] = (), sparse: bool = False) -> None:
        self.rng = rng
        self.nprng = nprng
        self.opset = opset
        self.namer = namer
        self.weights = weights
        self.sparse = sparse
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[ValueInfoProto] = []
        self.input_names: set[str] = set()
        self.outputs: list[ValueInfoProto] = []
        self.value_infos: list[ValueInfoProto] = []
        self.output_names: set[str] = set()
        self.pool: list[Value] = []
        self.outer: list[Value] = list(outer)
        self.consumed: set[str] = set()
        self.motifs: list[str] = []
        #: model-local functions (FunctionProto) that nodes of the model call.
        self.functions: list[FunctionProto] = []
        #: the anchor op the motif draw being emitted is to make (set while a draw that
        #: takes a schema plan row is emitted: :func:`generators.schema.apply.emit_for_row`);
        #: a motif of variants reads it through :meth:`variant`. None: no aim.
        self.aim: str | None = None
        #: the levels of the plan row the motif draw being emitted is to take, by anchor op
        #: (``{"Shape": {"attr:start": "nondefault", ...}}``; set with :attr:`aim`); a motif
        #: whose structure depends on a level reads it through :meth:`planned`. Empty: no row.
        self.levels: dict[str, dict[str, str]] = {}
        #: the lowest IR version :meth:`model` declares (4 keeps opsets 7 and 8 from IR 3,
        #: which lists every initializer as a graph input).
        self.min_ir = 0

    def variant(self, drawn: str, options: Iterable[str]) -> str:
        """The variant a motif emits: ``drawn`` (its choice among ``options``, anchor op
        names, made from :attr:`rng` as ever), unless :attr:`aim` is another of
        ``options``, then the aim. Draws nothing from :attr:`rng`, so a draw without an
        aim is the draw it was.

        Returns:
            ``aim`` where it is one of ``options``, else ``drawn``.
        """
        return self.aim if self.aim is not None and self.aim in set(options) else drawn

    def planned(self, op: str, factor: str) -> str | None:
        """The level that the plan row the draw is to take gives ``factor`` of anchor ``op``
        (``planned("Shape", "attr:start") == "nondefault"``), so that a motif can build the
        rest of its window to fit it (a Gather reading a Shape's output indexes the dims the
        Shape gives). Draws nothing from :attr:`rng`.

        Returns:
            The level (:mod:`generators.schema.levels`), or None where the draw takes no row
            or the row gives ``factor`` no level.
        """
        return self.levels.get(op, {}).get(factor)

    # -- nodes -------------------------------------------------------------------------------
    def node(self, op: str, inputs: Sequence[str], n_out: int = 1, domain: str = "",
             outputs: Sequence[str] | None = None, **attrs: Any) -> list[str]:
        """Append an ``op`` node; returns its output names (fresh unless ``outputs`` given).
        Attributes whose value is ``None`` are left out; ``""`` inputs are omitted optionals."""
        n = NodeProto()
        n.op_type = op
        if domain:
            n.domain = domain
        name = self.namer.node(op)
        if name:
            n.name = name
        n.input.extend(inputs)
        self.consumed.update(inputs)
        outs = list(outputs) if outputs is not None else [
            self.namer.tensor(op) for _ in range(n_out)]
        n.output.extend(outs)
        for key, val in attrs.items():
            if val is not None:
                n.attribute.append(attribute(key, val))
        self.nodes.append(n)
        return outs

    def op(self, op: str, inputs: Sequence[Value | str], dtype: int, shape: tuple[int, ...],
           props: Iterable[str] = (), **attrs: Any) -> Value:
        """Append a single-output ``op`` node and return its output as a pooled Value."""
        names = [i.name if isinstance(i, Value) else i for i in inputs]
        out = self.node(op, names, **attrs)[0]
        return self.add(Value(out, dtype, tuple(shape), frozenset(props)))

    def add(self, value: Value) -> Value:
        """Put ``value`` into the pool of consumable values and return it."""
        self.pool.append(value)
        return value

    # -- weights -----------------------------------------------------------------------------
    def const(self, array: np.ndarray, op: str = "Const", placement: str | None = None,
              props: Iterable[str] = ()) -> Value:
        """A weight holding ``array`` placed as ``placement`` (default: the builder's), not
        pooled; a Constant holds it as ``value``, or (a ``sparse`` builder) as
        ``sparse_value`` one time in :data:`SPARSE_EVERY`. Returns its Value (``const``
        set)."""
        placement = placement or self.weights
        if placement == "constant" and self.opset < 9 and array.dtype.kind != "f":
            placement = "initializer"  # Constant-1 holds floating-point tensors only
        name = self.namer.weight(op)
        t = tensor_proto(array, name)
        if placement == "constant" and self.sparse and self.opset >= SPARSE_SINCE and \
                array.ndim and array.size and zlib.crc32(name.encode()) % SPARSE_EVERY == 0:
            self.node("Constant", [], outputs=[name], sparse_value=sparse_tensor(array, name))
        elif placement == "constant":
            self.node("Constant", [], outputs=[name], value=t)
        else:
            self.initializers.append(t)
            if placement == "input":
                self.inputs.append(value_info(name, t.data_type, array.shape))
                self.input_names.add(name)
        return Value(name, t.data_type, tuple(array.shape), frozenset(props), array)

    def ints(self, values: Sequence[int], op: str = "Const", placement: str | None = None,
             dtype: type = np.int64) -> Value:
        """A 1-D int64 weight (shapes, axes, starts ...)."""
        return self.const(np.asarray(values, dtype=dtype), op, placement)

    def scalar(self, value: float | int | bool, dtype: int, op: str = "Const",
               shape: tuple[int, ...] = ()) -> Value:
        """A weight of ``dtype`` filled with ``value``."""
        return self.const(np.full(shape, value, dtype=NP_DTYPE[dtype]), op)

    def random_weight(self, shape: tuple[int, ...], dtype: int, op: str = "Const",
                      scale: float = 0.5, placement: str | None = None,
                      positive: bool = False) -> Value:
        """A weight of normal values (std ``scale``; ``positive``: in [0.5, 1.5]); integer
        dtypes get values in [0, 3], bool uniform."""
        np_dtype = NP_DTYPE[dtype]
        if np_dtype.kind == "f":
            if positive:
                arr = self.nprng.uniform(0.5, 1.5, size=shape).astype(np_dtype)
            else:
                arr = (self.nprng.standard_normal(size=shape) * scale).astype(np_dtype)
        elif np_dtype.kind == "b":
            arr = self.nprng.integers(0, 2, size=shape).astype(np_dtype)
        else:
            arr = self.nprng.integers(1 if positive else 0, 4, size=shape).astype(np_dtype)
        props = ("nonneg", "ge1") if positive and np_dtype.kind == "i" else (
            ("nonneg",) if positive else ())
        return self.const(arr, op, placement, props)

    # -- interface ---------------------------------------------------------------------------
    def graph_input(self, dtype: int, shape: tuple[int, ...],
                    symbolic: dict[int, str] | None = None) -> Value:
        """A new graph input; dims listed in ``symbolic`` (axis -> dim name) are declared
        symbolic and must be 1 in ``shape`` (the default size of dynamic dims)."""
        name = self.namer.graph_input()
        declared: list[int | str] = list(shape)
        for axis, dim_name in (symbolic or {}).items():
            if shape[axis] != 1:
                raise ValueError("symbolic dims must have size 1")
            declared[axis] = dim_name
        self.inputs.append(value_info(name, dtype, declared))
        self.input_names.add(name)
        return self.add(Value(name, dtype, tuple(shape)))

    def graph_output(self, value: Value, declare_shape: bool = True) -> None:
        """Mark ``value`` a graph output (once)."""
        if value.name in self.output_names:
            return
        self.output_names.add(value.name)
        self.outputs.append(value_info(value.name, value.dtype,
                                       value.shape if declare_shape else None))

    def leaves(self) -> list[Value]:
        """Pooled values no node consumes and that are not graph inputs."""
        return [v for v in self.pool
                if v.name not in self.consumed and v.name not in self.input_names]

    def graph(self, name: str = "main_graph", into: GraphProto | None = None) -> GraphProto:
        """The GraphProto built so far (filled into ``into`` when given)."""
        g = GraphProto() if into is None else into
        g.name = name
        g.node.extend(self.nodes)
        g.initializer.extend(self.initializers)
        g.input.extend(self.inputs)
        g.output.extend(self.outputs)
        g.value_info.extend(self.value_infos)
        return g

    def annotate(self, share: float = 1.0) -> None:
        """Declare value_info (dtype and shape) for a ``share`` of the intermediate tensors, as
        exporters that run shape inference do; shape-dependent passes read it."""
        skip = self.input_names | self.output_names
        for v in self.pool:
            if v.name not in skip and (share >= 1.0 or self.rng.random() < share):
                self.value_infos.append(value_info(v.name, v.dtype, v.shape))

    def model(self, producer: str = "optfuzz") -> ModelProto:
        """The ModelProto: default-domain ``opset``, matching IR version (at least
        :attr:`min_ir`); for IR < 4 every
        initializer is also listed as a graph input; :attr:`functions` as its model-local
        functions."""
        ir = max(ir_version_for(self.opset), self.min_ir)
        if ir < 4:
            listed = {i.name for i in self.inputs}
            for t in self.initializers:
                if t.name not in listed:
                    self.inputs.append(value_info(t.name, t.data_type, list(t.dims)))
        m = ModelProto()
        m.ir_version = ir
        m.producer_name = producer
        imp = m.opset_import.add()
        imp.domain = ""
        imp.version = self.opset
        for domain in sorted({n.domain for n in self.nodes} - {"", "ai.onnx"}):
            extra = m.opset_import.add()  # contrib ops (com.microsoft) exist in version 1
            extra.domain = domain
            extra.version = 1
        self.graph(into=m.graph)
        m.functions.extend(self.functions)
        return m
