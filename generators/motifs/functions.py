"""Motifs with model-local functions: ``FunctionProto``s in ``ModelProto.functions`` called by
nodes of the graph, as exporters that keep modules as functions write them (torch.onnx's
dynamo exporter, onnxscript). Function inliners (onnxscript's ``InlinePass``, onnxruntime's
own) replace each call by the body, binding the call's inputs, outputs and attributes.

Forms (the ONNX IR spec, "Functions"; model-local functions need IR 8, opset 15):

- attributes by reference: body nodes whose attribute is ``ref_attr_name`` of one of the
  function's attributes (a Constant's ``value_float``, LeakyRelu's ``alpha``, Transpose's
  ``perm``, Softmax's ``axis``), sometimes left off the call so the body node falls back to
  the op's own default, and from IR 9 (opset 18) a default in ``attribute_proto``;
- one function called twice, so inlined names must stay unique; body names that collide
  with the graph's own tensor names (``t3``, ``8``) or with the other call's;
- a function calling another model-local function (nested inlining);
- a function with two outputs, the second one unused by the caller;
- a body whose values are constant once inlined (folding after inlining).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnx import AttributeProto, FunctionProto, NodeProto, OperatorSetIdProto

from generators.builder import GraphBuilder, attribute
from generators.motifs.spec import Motif
from generators.values import FLOAT, Value

#: opset where model-local functions exist (IR 8).
FUNCTIONS_SINCE = 15
#: opset from which a function may declare attribute defaults (``attribute_proto``, IR 9).
DEFAULTS_SINCE = 18
#: domains exporters put their functions in.
DOMAINS = ("local", "pkg.optfuzz", "custom")
#: the inliner's passes (onnxscript's names) and what acts on inlined bodies.
PASSES = ("InlinePass", "FoldConstantsPass", "RemoveUnusedFunctionsPass",
          "RemoveUnusedOpsetsPass")

_TYPES = {int: AttributeProto.INT, float: AttributeProto.FLOAT, list: AttributeProto.INTS}


def ref(name: str, function_attribute: str, kind: type) -> AttributeProto:
    """An attribute ``name`` that refers to the function's attribute ``function_attribute``
    (``kind``: int, float or list for ints)."""
    a = AttributeProto()
    a.name = name
    a.ref_attr_name = function_attribute
    a.type = _TYPES[kind]
    return a


def body_node(op: str, inputs: Sequence[str], outputs: Sequence[str],
              refs: Sequence[AttributeProto] = (), domain: str = "", **attrs: Any) -> NodeProto:
    """A node of a function body: plain attributes ``attrs`` and references ``refs``."""
    n = NodeProto()
    n.op_type = op
    n.domain = domain
    n.input.extend(inputs)
    n.output.extend(outputs)
    n.attribute.extend(attribute(k, v) for k, v in attrs.items() if v is not None)
    n.attribute.extend(refs)
    return n


def declare(b: GraphBuilder, name: str, inputs: Sequence[str], outputs: Sequence[str],
            nodes: Sequence[NodeProto], attributes: Sequence[str] = (),
            defaults: dict[str, Any] | None = None, domain: str | None = None) -> FunctionProto:
    """Add a model-local function to the model: its body imports the model's default opset
    (and ``domain`` at version 1 when it calls functions of it); ``defaults`` (attribute ->
    value) go into ``attribute_proto`` (IR 9), the other ``attributes`` into ``attribute``.
    Returns the FunctionProto (its ``domain`` drawn from :data:`DOMAINS` when None)."""
    f = FunctionProto()
    f.name = name
    f.domain = domain if domain is not None else b.rng.choice(DOMAINS)
    f.input.extend(inputs)
    f.output.extend(outputs)
    f.node.extend(nodes)
    defaults = defaults or {}
    f.attribute.extend(a for a in attributes if a not in defaults)
    f.attribute_proto.extend(attribute(k, v) for k, v in defaults.items())
    for domain_name, version in {"": b.opset, **{n.domain: 1 for n in nodes if n.domain}}.items():
        imp = OperatorSetIdProto()
        imp.domain = domain_name
        imp.version = version
        f.opset_import.append(imp)
    b.functions.append(f)
    return f


def call(b: GraphBuilder, f: FunctionProto, x: Value, shape: tuple[int, ...],
         n_out: int = 1, **attrs: Any) -> Value:
    """A node of the graph that calls ``f`` on ``x``; its first output (float32 of ``shape``)
    is pooled, further outputs are left unconsumed."""
    outs = b.node(f.name, [x.name], n_out=n_out, domain=f.domain, **attrs)
    return b.add(Value(outs[0], FLOAT, shape))


def _inner(b: GraphBuilder, k: int) -> str:
    """A body-internal name: often one the graph's own names may also use."""
    return b.rng.choice([f"t{k}", str(k + 1), f"tmp{k}", "x_scaled", f"/fn/{k}"])


def fname(b: GraphBuilder, stem: str) -> str:
    """``stem``, or ``stem_<n>`` where the model already has a function of that name."""
    taken = {f.name for f in b.functions}
    return stem if stem not in taken else f"{stem}_{len(b.functions)}"


def _scaled_activation(b: GraphBuilder, x: Value) -> Value:
    """f(x; alpha, slope) = act(x * alpha): Constant(value_float=@alpha), Mul, then Relu,
    Tanh, Sigmoid or LeakyRelu(alpha=@slope) (slope left off the call at times)."""
    act = b.rng.choice(["Relu", "Tanh", "Sigmoid", "LeakyRelu", "LeakyRelu"])
    c, m = _inner(b, 0), _inner(b, 1)
    if m == c:
        m = f"{m}_"
    nodes = [body_node("Constant", [], [c], [ref("value_float", "alpha", float)]),
             body_node("Mul", ["X", c], [m]),
             body_node(act, [m], ["Y"], [ref("alpha", "slope", float)]
                       if act == "LeakyRelu" else [])]
    defaults = {"slope": 0.2} if act == "LeakyRelu" and b.opset >= DEFAULTS_SINCE and \
        b.rng.random() < 0.5 else None
    attributes = ["alpha", "slope"] if act == "LeakyRelu" else ["alpha"]
    f = declare(b, fname(b, "ScaledAct"), ["X"], ["Y"], nodes, attributes, defaults)
    slope = b.rng.choice([0.1, 0.3, None]) if act == "LeakyRelu" else None
    return call(b, f, x, x.shape, alpha=b.rng.choice([0.5, 1.0, 2.0, -1.0]), slope=slope)


def _permute_softmax(b: GraphBuilder, x: Value) -> Value:
    """f(x; perm, axis) = Softmax(Transpose(x, perm=@perm), axis=@axis)."""
    perm = list(range(x.rank))
    b.rng.shuffle(perm)
    t = _inner(b, 2)
    nodes = [body_node("Transpose", ["X"], [t], [ref("perm", "perm", list)]),
             body_node("Softmax", [t], ["Y"], [ref("axis", "axis", int)])]
    defaults = {"axis": -1} if b.opset >= DEFAULTS_SINCE and b.rng.random() < 0.5 else None
    f = declare(b, fname(b, "PermuteSoftmax"), ["X"], ["Y"], nodes, ["perm", "axis"],
                defaults)
    axis = b.rng.randrange(-x.rank, x.rank) if defaults is None or b.rng.random() < 0.5 \
        else None
    shape = tuple(x.shape[p] for p in perm)
    return call(b, f, x, shape, perm=perm, axis=axis)


def _called_twice(b: GraphBuilder, x: Value) -> Value:
    """One function (Neg, Exp of a clipped value, Add) called twice in a row."""
    a, c = _inner(b, 3), _inner(b, 4)
    if a == c:
        c = f"{c}_"
    nodes = [body_node("Neg", ["X"], [a]), body_node("Tanh", [a], [c]),
             body_node("Add", ["X", c], ["Y"])]
    f = declare(b, fname(b, "Block"), ["X"], ["Y"], nodes)
    y = call(b, f, x, x.shape)
    return call(b, f, y, x.shape)


def _nested(b: GraphBuilder, x: Value) -> Value:
    """An outer function whose body calls an inner model-local function twice."""
    domain = b.rng.choice(DOMAINS)
    inner = declare(b, fname(b, "Inner"), ["X"], ["Y"],
                    [body_node("Sigmoid", ["X"], ["s"]), body_node("Mul", ["X", "s"], ["Y"])],
                    domain=domain)
    nodes = [body_node(inner.name, ["X"], ["u"], domain=domain),
             body_node(inner.name, ["u"], ["v"], domain=domain),
             body_node("Sub", ["v", "X"], ["Y"])]
    outer = declare(b, fname(b, "Outer"), ["X"], ["Y"], nodes, domain=domain)
    return call(b, outer, x, x.shape)


def _two_outputs(b: GraphBuilder, x: Value) -> Value:
    """A function with two outputs (Relu and Abs of its input); the call names both, the
    second stays unused or becomes a graph output."""
    nodes = [body_node("Relu", ["X"], ["Y"]), body_node("Abs", ["X"], ["Z"])]
    f = declare(b, fname(b, "Split2"), ["X"], ["Y", "Z"], nodes)
    y = call(b, f, x, x.shape, n_out=2)
    if b.rng.random() < 0.3:
        second = b.nodes[-1].output[1]
        b.graph_output(Value(second, FLOAT, x.shape))
    return y


def _constant_body(b: GraphBuilder, x: Value) -> Value:
    """A function whose shape arithmetic is constant once inlined: Shape, Gather of the
    last dim, Unsqueeze, Concat with -1, Reshape of its input to (-1, last)."""
    nodes = [body_node("Shape", ["X"], ["shape"]),
             body_node("Constant", [], ["last"], value_ints=[x.rank - 1]),
             body_node("Gather", ["shape", "last"], ["dim"]),
             body_node("Constant", [], ["minus1"], value_ints=[-1]),
             body_node("Concat", ["minus1", "dim"], ["target"], axis=0),
             body_node("Reshape", ["X", "target"], ["Y"])]
    f = declare(b, fname(b, "FlattenLast"), ["X"], ["Y"], nodes)
    return call(b, f, x, (x.size // x.shape[-1], x.shape[-1]))


def _fn_motif(name: str, emit: Any, ranks: tuple[int, int] = (1, 4)) -> Motif:
    return Motif(name, PASSES, emit=emit, ranks=ranks, since=FUNCTIONS_SINCE)


MOTIFS = (
    _fn_motif("fn-scaled-activation", _scaled_activation),
    _fn_motif("fn-permute-softmax", _permute_softmax),
    _fn_motif("fn-called-twice", _called_twice),
    _fn_motif("fn-nested", _nested),
    _fn_motif("fn-two-outputs", _two_outputs),
    _fn_motif("fn-constant-body", _constant_body, ranks=(2, 4)),
)

#: Place of this family in the draw order (:data:`generators.motifs.MOTIFS`).
ORDER = 130
#: Drawn only for a pass hint that names one of its passes (see :mod:`generators.motifs`).
HINTED_ONLY = True
