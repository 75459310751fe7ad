"""Which element types onnxruntime's CPU execution provider runs, per op and version.

Read from onnxruntime's own kernel registry
(``onnxruntime.capi.onnxruntime_pybind11_state.get_all_opkernel_def``: one entry per kernel
with its op, domain, opset range and type constraints), so that a plan never asks for a node
the reference run cannot execute; such choices are kept out with the reason
:func:`kernel_reason` gives. The table is read once per process (about 5 ms).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from generators.schema.space import type_name

#: kernels of one op: (first opset, last opset, {type constraint: element type names}).
Kernel = tuple[int, int, dict[str, frozenset[str]]]

_PROVIDER = "CPUExecutionProvider"

#: ``(domain, op) -> {type constraint: element types}`` the registry lists for a kernel that
#: the kernel refuses when the session initializes (ConstantOfShape's ``value`` in a float 8
#: type: "Unsupported value attribute datatype", constant_of_shape_base.h).
REFUSED_AT_INIT: dict[tuple[str, str], dict[str, frozenset[str]]] = {
    ("", "ConstantOfShape"): {"T2": frozenset({"float8e4m3fn", "float8e4m3fnuz",
                                               "float8e5m2", "float8e5m2fnuz"})},
}


@lru_cache(maxsize=1)
def cpu_kernels() -> dict[tuple[str, str], tuple[Kernel, ...]]:
    """``(domain, op) -> kernels`` of onnxruntime's CPU execution provider (empty when
    onnxruntime is not installed)."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_c
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return {}
    table: dict[tuple[str, str], list[Kernel]] = {}
    for k in ort_c.get_all_opkernel_def():
        if k.provider != _PROVIDER:
            continue
        lo, hi = k.version_range
        cons = {name: frozenset(n for n in (type_name(t) for t in types) if n)
                for name, types in k.type_constraints.items()}
        domain = "" if k.domain == "ai.onnx" else k.domain
        table.setdefault((domain, k.op_name), []).append((lo, hi, cons))
    return {key: tuple(v) for key, v in table.items()}


def has_kernel(op: str, domain: str, version: int, bindings: dict[str, str]) -> bool:
    """Whether one CPU kernel of ``op`` covers ``version`` and accepts every
    ``type constraint -> element type name`` of ``bindings`` (a constraint the kernel does
    not name is unconstrained)."""
    return kernel_reason(op, domain, version, bindings) is None


def _constant(version: int, bindings: dict[str, str]) -> str | None:
    """A Constant node of any element type: onnxruntime makes its value an initializer when
    it loads the graph (``Graph::Graph`` in onnxruntime/core/graph/graph.cc), so no kernel
    runs it."""
    return None


def _cast_like(version: int, bindings: dict[str, str]) -> str | None:
    """CastLike ``T1 -> T2``: onnxruntime has no kernel of it and expands the node by its
    schema's function, one Cast to the element type of ``target_type``
    (onnx/defs/tensor/defs.cc), which needs its own kernel."""
    src, dst = bindings.get("T1"), bindings.get("T2")
    if src is None or dst is None:
        return None
    return cast_reason(src, dst, version)


#: ``(domain, op) -> reason`` for the ops onnxruntime's CPU execution provider runs without a
#: kernel of their own (the registry lists none): each says, for a version and its type
#: bindings, None where the session runs the node, else why not.
WITHOUT_KERNEL: dict[tuple[str, str], Callable[[int, dict[str, str]], str | None]] = {
    ("", "Constant"): _constant,
    ("", "CastLike"): _cast_like,
}


def cast_to_float(op: str, domain: str, version: int,
                  bindings: dict[str, str]) -> dict[str, str] | None:
    """The type bindings onnxruntime runs a node of ``bindings`` with where no kernel takes
    its float16: its InsertCastTransformer (``onnxruntime/core/optimizer/
    insert_cast_transformer.cc``) casts each float16 input of a node that no execution
    provider took to float, and each float16 output back, so the node runs the float kernel
    (every float16 binding read as float). None where no input of the op's schema is bound
    to float16 (the transformer looks at inputs only) or the op has no schema."""
    halves = {t for t, d in bindings.items() if d == "float16"}
    if not halves:
        return None
    from onnx import defs

    try:
        schema = defs.get_schema(op, version, domain)
    except defs.SchemaError:
        return None
    if not any(p.type_str in halves for p in schema.inputs):
        return None
    return {t: "float" if d == "float16" else d for t, d in bindings.items()}


def kernel_reason(op: str, domain: str, version: int, bindings: dict[str, str]) -> str | None:
    """None where :func:`has_kernel` holds, else why not, in a sentence. An op of
    :data:`WITHOUT_KERNEL` is judged by its entry there; float16 bindings without a kernel
    of their own by the float kernel onnxruntime runs them with (:func:`cast_to_float`)."""
    if (domain, op) in WITHOUT_KERNEL:
        return WITHOUT_KERNEL[(domain, op)](version, bindings)
    kernels = [k for k in cpu_kernels().get((domain, op), ()) if k[0] <= version <= k[1]]
    if not kernels:
        return f"onnxruntime has no CPU kernel for {op}-{version}"
    refused = REFUSED_AT_INIT.get((domain, op), {})
    for t, d in sorted(bindings.items()):
        if d in refused.get(t, ()):
            return f"onnxruntime's CPU kernel for {op} refuses {t}={d} when the session " \
                   "initializes (the kernel registry lists it)"
    def taken(binds: dict[str, str]) -> bool:
        return any(all(t not in cons or d in cons[t] for t, d in binds.items())
                   for _, _, cons in kernels)

    if taken(bindings):
        return None
    as_float = cast_to_float(op, domain, version, bindings)  # looked up only where needed
    if as_float is not None and taken(as_float):
        return None
    what = ", ".join(f"{t}={d}" for t, d in sorted(bindings.items()))
    return f"onnxruntime has no CPU kernel for {op}-{version} with {what}"


def cast_reason(src: str, dst: str, opset: int) -> str | None:
    """None where the Cast version in force at model opset ``opset`` takes ``src`` to
    ``dst`` and onnxruntime has its kernel, else why not."""
    if src == dst:
        return None
    from onnx import defs

    from generators.schema.space import type_reason

    schema = defs.get_schema("Cast", opset, "")
    binds = {"T1": src, "T2": dst}
    return type_reason(schema, binds) or kernel_reason("Cast", "", schema.since_version, binds)
