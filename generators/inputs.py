"""Input synthesis: feeds for a model's graph inputs, deterministic from a seed.

Values: floating point from a standard normal distribution; integers uniform in [0, 3]
(safe as indices, axes offsets and counts of small tensors); bool uniform. Generated graphs are
built to stay finite on such values. Dynamic dims take the size given by ``shapes``
(onnx-simplifier's ``--input-shapes name:1,3,224,224`` syntax, parsed by
:func:`parse_input_shapes`) or else :data:`DEFAULT_DYNAMIC_DIM`.

Inputs of sequence type (``seq(tensor(T))``) are fed a list of arrays: their ``shapes`` entry
is ``[length, *element dims]``, by default :data:`DEFAULT_SEQUENCE_LENGTH` elements of the
declared element shape (dynamic dims, or an element without shape, as above). Inputs of
optional type are fed a present value of their element type (an array, or a list for an
optional sequence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: Size given to a dynamic (symbolic or unknown) dim when the user did not fix it.
DEFAULT_DYNAMIC_DIM = 1

#: Elements fed to a sequence input when the user did not fix its length.
DEFAULT_SEQUENCE_LENGTH = 2

#: The ``shapes`` entry ``[ABSENT]`` of an optional input has it fed None (no value); no
#: user shape is negative (:func:`parse_input_shapes`).
ABSENT = -1

#: Refuse to synthesize a single input larger than this many bytes.
MAX_INPUT_BYTES = 1 << 30


class InputSpecError(ValueError):
    """An input that cannot be synthesized (absurd shape, unsupported dtype, bad --input-shapes)."""


def parse_input_shapes(items: Iterable[str] | None) -> dict[str, list[int]]:
    """Parse ``["name:1,3,224,224", "mask:1,128"]`` into ``{name: [dims]}``.

    A single item may hold several specs separated by spaces. Names may contain ``:`` (the
    last ``:`` separates the dims), as in TensorFlow's ``input:0``.

    Raises:
        InputSpecError: a spec without ``:``, or a dim that is not a positive integer.
    """
    shapes: dict[str, list[int]] = {}
    for item in items or []:
        for spec in item.split():
            name, sep, dims = spec.rpartition(":")
            if not sep or not name:
                raise InputSpecError(f"--input-shapes expects name:d1,d2,...; got {spec!r}")
            try:
                values = [int(d) for d in dims.split(",") if d != ""]
            except ValueError:
                raise InputSpecError(f"--input-shapes: dims of {name!r} must be integers") from None
            if any(v < 0 for v in values):
                raise InputSpecError(f"--input-shapes: negative dim for {name!r}")
            shapes[name] = values
    return shapes


def graph_feed_inputs(model: Any) -> list[Any]:
    """Graph inputs that need a feed: those that are not also initializers (IR < 4 lists
    initializers among the inputs; they keep their stored values)."""
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _tensor_of(type_proto: Any) -> tuple[Any, bool]:
    """``(tensor type, whether it sits in a sequence)`` of a tensor, ``seq(tensor)``,
    ``optional(tensor)`` or ``optional(seq(tensor))`` TypeProto.

    Raises:
        InputSpecError: any other type (maps, sparse tensors, nested sequences).
    """
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        return _tensor_of(type_proto.optional_type.elem_type)
    if kind == "sequence_type" and \
            type_proto.sequence_type.elem_type.WhichOneof("value") == "tensor_type":
        return type_proto.sequence_type.elem_type.tensor_type, True
    if kind == "tensor_type":
        return type_proto.tensor_type, False
    raise InputSpecError(f"cannot feed values of type {kind or 'unset'}")


def input_shape(value_info: Any, shapes: Mapping[str, list[int]] | None = None) -> list[int]:
    """Concrete shape for a graph input: the user's shape, else declared dims with dynamic
    dims set to :data:`DEFAULT_DYNAMIC_DIM`; for a sequence input ``[length, *element
    dims]`` (:data:`DEFAULT_SEQUENCE_LENGTH`), for an optional one its element's.

    Raises:
        InputSpecError: the input is neither a tensor nor a sequence or optional of tensors.
    """
    if shapes and value_info.name in shapes:
        return list(shapes[value_info.name])
    try:
        ttype, in_sequence = _tensor_of(value_info.type)
    except InputSpecError:
        raise InputSpecError(f"input {value_info.name!r} is not a tensor") from None
    head = [DEFAULT_SEQUENCE_LENGTH] if in_sequence else []
    if not ttype.HasField("shape"):
        return [*head, DEFAULT_DYNAMIC_DIM]
    dims = []
    for dim in ttype.shape.dim:
        dims.append(dim.dim_value if dim.HasField("dim_value") and dim.dim_value > 0
                    else DEFAULT_DYNAMIC_DIM)
    return [*head, *dims]


def synthesize_value(rng: np.random.Generator, dtype: np.dtype, shape: list[int]) -> np.ndarray:
    """One random tensor of ``dtype`` and ``shape`` following the module's value rules."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size * dtype.itemsize > MAX_INPUT_BYTES:
        raise InputSpecError(f"input of shape {shape} needs {size * dtype.itemsize} bytes")
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 4, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(size=shape).astype(dtype)
    if dtype.kind in "US" or dtype == np.object_:
        return np.array(rng.choice(["a", "bb", "ccc"], size=shape), dtype=object)
    raise InputSpecError(f"cannot synthesize values of dtype {dtype}")


def synthesize_inputs(model: Any, seed: int,
                      shapes: Mapping[str, list[int]] | None = None) -> dict[str, Any]:
    """Feeds for every graph input of ``model`` that needs one, deterministic from ``seed``.

    Returns ``{input name: value}`` in graph-input order: an ndarray per tensor or optional
    tensor input, a list of ndarrays (all of the element shape) per sequence input, None
    per optional input whose ``shapes`` entry is ``[ABSENT]``.

    Raises:
        InputSpecError: an input that is neither a tensor nor a sequence or optional of
            tensors, an unsupported dtype, a sequence shape without its length, or a shape
            whose size exceeds :data:`MAX_INPUT_BYTES`.
    """
    from onnx import helper

    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    for value_info in graph_feed_inputs(model):
        shape = input_shape(value_info, shapes)
        if shape == [ABSENT] and value_info.type.HasField("optional_type"):
            feeds[value_info.name] = None
            continue
        ttype, in_sequence = _tensor_of(value_info.type)
        elem = ttype.elem_type
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
        except Exception:
            raise InputSpecError(
                f"input {value_info.name!r} has unsupported element type {elem}") from None
        if not in_sequence:
            feeds[value_info.name] = synthesize_value(rng, dtype, shape)
            continue
        if not shape:
            raise InputSpecError(f"sequence input {value_info.name!r} needs [length, dims]")
        stacked = synthesize_value(rng, dtype, shape)
        feeds[value_info.name] = [stacked[i] for i in range(shape[0])]
    return feeds
