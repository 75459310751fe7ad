"""How the report's standalone repro gets the model's inputs: ``FEEDS``, one line per graph
input in the model's order.

A small array (its literal at most :data:`MAX_LITERAL` characters) is written out as a
numpy literal, exactly (a float is written with the fewest digits that give the same value
back in its own type). A larger one, or one whose values the bundle does not hold (a draft
rendered without inputs.npz), is generated with numpy's generator and a fixed seed
(:data:`SEED`), in the recorded shape and type (the model's declared ones, a symbolic
dimension taken as 1), and the report says so. An input of a type neither can write
(strings, bfloat16, sequences) makes the script load the attached inputs.npz.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzzer.report.markdown import code_span

#: longest numpy literal written inline, in characters.
MAX_LITERAL = 120
#: the seed of generated inputs.
SEED = 0
#: numpy kinds a literal or a generator writes: float, signed, unsigned, bool.
_KINDS = frozenset("fiub")


@dataclass(frozen=True)
class FeedsSource:
    """Python lines that define ``FEEDS`` (input name -> array) in the standalone repro.

    Attributes:
        lines: the lines (no final newline).
        note: what the reader should know (inputs generated, or loaded from the
            attachment), or None where every input is written out.
    """

    lines: list[str]
    note: str | None = None


def _scalar(value: Any, kind: str) -> str:
    """One element as Python source: the shortest text that gives the same value back in
    its own float type (``np.nan``, ``np.inf`` by name), an int, or a bool."""
    if kind == "b":
        return str(bool(value))
    if kind in "iu":
        return str(int(value))
    if np.isnan(value):
        return "np.nan"
    if np.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return str(value)  # numpy's shortest repr for the element's own type


def _nested(array: np.ndarray, kind: str) -> str:
    if array.ndim == 0:
        return _scalar(array[()], kind)
    return "[" + ", ".join(_nested(item, kind) for item in array) + "]"


def dtype_name(dtype: np.dtype) -> str:
    """``np.<name>`` of ``dtype`` (``np.bool_`` for bool)."""
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def array_literal(array: np.ndarray) -> str | None:
    """``array`` as a numpy expression that builds it exactly, or None where its type has
    no literal here (:data:`_KINDS` and the float types numpy names)."""
    if array.dtype.kind not in _KINDS or not hasattr(np, array.dtype.name):
        return None
    dtype = dtype_name(array.dtype)
    if array.size == 0:
        return f"np.zeros({tuple(array.shape)!r}, dtype={dtype})"
    return f"np.array({_nested(array, array.dtype.kind)}, dtype={dtype})"


def generated(shape: tuple[int, ...], dtype: np.dtype) -> str | None:
    """The expression that draws an array of ``shape`` and ``dtype`` from ``rng`` (standard
    normal floats, integers in [0, 4), fair bools), or None for another type."""
    if dtype.kind not in _KINDS or not hasattr(np, dtype.name):
        return None
    if dtype.kind == "b":
        return f"rng.random({shape!r}) < 0.5"
    draw = "standard_normal" if dtype.kind == "f" else "integers"
    bounds = "" if dtype.kind == "f" else "0, 4, "
    return f"rng.{draw}({bounds}{shape!r}).astype({dtype_name(dtype)})"


def declared(value: Any) -> tuple[tuple[int, ...], np.dtype] | None:
    """The shape (a symbolic or unknown dimension as 1) and numpy dtype a graph input
    (``onnx.ValueInfoProto``) declares, or None where it is no tensor of a known type."""
    from onnx import helper

    tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
    if tensor is None or not tensor.elem_type:
        return None
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    except (KeyError, TypeError):
        return None
    dims = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim)
    return dims, dtype


def runtime_inputs(model: Any) -> list[Any]:
    """The graph inputs of ``model`` that are not initializers, in order."""
    inits = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in inits]


#: ``FEEDS`` where an input can be neither written nor generated: the attachment's, with
#: sequence and empty optional inputs unpacked as
#: :func:`fuzzer.execution.stage_driver.pack_values` stored them.
FROM_FILE = FeedsSource([
    'RAW = dict(np.load("inputs.npz"))  # from the attached zip',
    'FEEDS = {k: v for k, v in RAW.items() if "::seq" not in k and not k.endswith("::none")}',
    'FEEDS.update({k[:-5]: [RAW[f"{k}:{i}"] for i in range(int(v))]',
    '              for k, v in RAW.items() if k.endswith("::seq")})',
    'FEEDS.update({k[:-6]: None for k in RAW if k.endswith("::none")})'],
    "The inputs come from inputs.npz in the attached zip.")


def feeds_source(model: Any, feeds: dict[str, np.ndarray] | None) -> FeedsSource:
    """``FEEDS`` for the graph inputs of ``model`` (a ModelProto) from the bundle's inputs
    ``feeds`` (None: not at hand): see the module docstring."""
    entries: list[str] = []
    drawn: list[str] = []
    for value in runtime_inputs(model):
        array = None if feeds is None else feeds.get(value.name)
        if not value.type.HasField("tensor_type"):
            return FROM_FILE  # a sequence or optional input
        literal = array_literal(np.asarray(array)) if array is not None else None
        if literal is None or len(literal) > MAX_LITERAL:
            shape_type = (tuple(np.shape(array)), np.asarray(array).dtype) \
                if array is not None else declared(value)
            literal = generated(*shape_type) if shape_type else None
            if literal is None:
                return FROM_FILE
            drawn.append(value.name)
        entries.append(f"{value.name!r}: {literal}")
    head = [f"rng = np.random.default_rng({SEED})"] if drawn else []
    if not entries:
        return FeedsSource([*head, "FEEDS = {}"])
    body = ",\n         ".join(entries)
    lines = [*head, *f"FEEDS = {{{body}}}".split("\n")]
    if not drawn:
        return FeedsSource(lines)
    which = "every input" if len(drawn) == len(entries) else \
        ", ".join(code_span(name) for name in drawn)
    held = "the bundle's inputs.npz holds" if feeds is not None else "inputs.npz holds"
    return FeedsSource(lines, f"The script draws {which} at random (numpy, seed {SEED}) in "
                              f"the recorded shape and type; {held} the values the bug was "
                              "found with.")
