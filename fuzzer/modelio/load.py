"""Safe model loading: corrupt, hostile or absurd models are refused with an InputError.

Checks, in order: the file exists and is at most :data:`MAX_MODEL_BYTES`; it parses as a
ModelProto that has a graph and an IR version; external data (for initializers and Constant
attributes, in subgraphs too) names a relative path that stays inside the model's folder and
exists; no tensor or graph input declares a dim above :data:`MAX_DIM` or a tensor above
:data:`MAX_TENSOR_BYTES`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fuzzer.errors import InputError
from fuzzer.modelio.graphs import iter_graphs, iter_tensors

MAX_MODEL_BYTES = 2 << 30  # protobuf's own limit
MAX_TENSOR_BYTES = 4 << 30
MAX_DIM = 1 << 31


def parse_model(data: bytes, what: str = "model") -> Any:
    """Parse serialized bytes into a ModelProto without loading external data.

    Raises:
        InputError: the bytes are not a ModelProto with a graph and an IR version.
    """
    import onnx
    from google.protobuf.message import DecodeError

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise InputError(f"{what} is not an ONNX model (protobuf: {exc})") from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise InputError(f"{what} is not an ONNX model (no graph or IR version; truncated?)")
    return model


def check_sizes(model: Any, what: str = "model") -> None:
    """Refuse absurd dims and tensor sizes (see module docstring).

    Declared dims of graph inputs and outputs may be negative (dynamic, as Paddle exports
    them); tensor dims may not.

    Raises:
        InputError: a dim above MAX_DIM, a negative tensor dim, or a tensor above
            MAX_TENSOR_BYTES.
    """
    for tensor in iter_tensors(model.graph):
        size = 1
        for dim in tensor.dims:
            if dim < 0 or dim > MAX_DIM:
                raise InputError(f"{what}: tensor {tensor.name!r} has absurd dim {dim}")
            size *= dim
        if size * 8 > MAX_TENSOR_BYTES * 2 or size > MAX_TENSOR_BYTES:
            raise InputError(f"{what}: tensor {tensor.name!r} has {size} elements")
    for g in iter_graphs(model.graph):
        for value in [*g.input, *g.output]:
            for dim in value.type.tensor_type.shape.dim:
                # a negative dim (Paddle's exporter writes -1) means "dynamic"
                if dim.HasField("dim_value") and dim.dim_value > MAX_DIM:
                    raise InputError(f"{what}: {value.name!r} declares absurd dim {dim.dim_value}")


def resolve_external_data(model: Any, base_dir: Path, what: str = "model") -> list[Path]:
    """Check every external-data reference of ``model`` and return the files it names.

    Raises:
        InputError: a location that is absolute, leaves ``base_dir`` (``..``, symlinks), or
            does not exist.
    """
    import onnx

    root: Path | None = None
    files = []
    for tensor in iter_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        root = root or base_dir.resolve()
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        if not location or os.path.isabs(location):
            raise InputError(f"{what}: external data of {tensor.name!r} has bad location "
                             f"{location!r}")
        target = (root / location).resolve()
        if target != root and root not in target.parents:
            raise InputError(f"{what}: external data of {tensor.name!r} points outside the "
                             f"model's folder ({location})")
        if not target.is_file():
            raise InputError(f"{what}: external data file {location!r} is missing")
        files.append(target)
    return files


def load_model(path: str | os.PathLike[str]) -> Any:
    """Load a model file safely (external data included) and return its ModelProto.

    Raises:
        InputError: missing or unreadable file, too large, not ONNX, hostile external data,
            absurd shapes.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    if p.stat().st_size > MAX_MODEL_BYTES:
        raise InputError(f"{p}: larger than {MAX_MODEL_BYTES} bytes")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror})") from None
    model = parse_model(data, str(p))
    check_sizes(model, str(p))
    if resolve_external_data(model, p.parent, str(p)):
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(model, str(p.parent))
        except Exception as exc:  # a short or corrupt data file
            raise InputError(f"{p}: external data cannot be read ({exc})") from None
    return model
