"""Input feeds and outputs as ``.npz`` archives (inputs.npz, expected.npz, actual.npz), and
the feeds a person gives for a model (``optfuzz check --load-inputs``)."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.errors import InputError


def npz_bytes(arrays: dict[str, Any]) -> bytes:
    """``np.savez`` of ``arrays`` into bytes; sequence (list) and empty optional (None)
    values are packed into arrays (:func:`fuzzer.execution.stage_driver.pack_values`)."""
    from fuzzer.execution.stage_driver import pack_values

    buffer = io.BytesIO()
    np.savez(buffer, **pack_values(arrays))
    return buffer.getvalue()


def read_npz(path: Path) -> dict[str, Any]:
    """The arrays of the ``.npz`` file at ``path`` (no pickles), with the sequence and
    empty optional values :func:`npz_bytes` packed unpacked (lists, None).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not an npz archive.
    """
    data = path.read_bytes()
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        from fuzzer.execution.stage_driver import unpack_values

        return unpack_values(arrays)
    except (EOFError, RuntimeError, zipfile.BadZipFile, OverflowError, zlib.error,
            struct.error) as exc:  # empty, truncated or garbled
        raise ValueError(f"{path.name} is not an npz archive ({exc or 'empty'})") from None
    except ValueError:  # neither a zip nor an .npy file: numpy took it for a pickle
        raise ValueError(f"{path.name} is not an npz archive") from None


def load_feeds(path: Path, model: Any) -> dict[str, np.ndarray]:
    """The input feeds of ``path`` (an ``.npz`` file a person gives, arrays by input name)
    for ``model`` (``onnx.ModelProto``), checked against its graph inputs: every input that
    needs a feed has one (an initializer listed among the inputs may have one), of the
    declared element type, rank and fixed dims. String arrays become object arrays, as
    onnxruntime takes them.

    Raises:
        InputError: the file is missing or not an npz archive, or it does not match the
            model (the one-line message says how).
    """
    from onnx import helper

    from generators.inputs import graph_feed_inputs

    try:
        feeds = read_npz(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # its message names the file
        raise InputError(str(exc)) from None
    needed = {value.name: value for value in graph_feed_inputs(model)}
    declared = {value.name: value for value in model.graph.input}
    missing = [name for name in needed if name not in feeds]
    unknown = [name for name in feeds if name not in declared]
    if missing or unknown:
        what = [f"no array for input(s) {', '.join(missing)}"] * bool(missing) + \
            [f"array(s) {', '.join(unknown)} name no graph input"] * bool(unknown)
        raise InputError(f"{path}: {'; '.join(what)} (the model's inputs: "
                         f"{', '.join(needed) or 'none'})")
    for name, array in feeds.items():
        if not declared[name].type.HasField("tensor_type"):
            continue  # a sequence (list) or optional input: onnxruntime checks its type
        tensor = declared[name].type.tensor_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)) \
            if tensor.elem_type else array.dtype
        if dtype == np.object_ and array.dtype.kind in "US":
            feeds[name] = array = array.astype(object)
        if array.dtype != dtype:
            raise InputError(f"{path}: input {name} is {dtype}, the array {array.dtype}")
        if tensor.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                    for d in tensor.shape.dim]
            if len(dims) != array.ndim or any(d not in (None, n)
                                              for d, n in zip(dims, array.shape, strict=True)):
                shown = ["?" if d is None else d for d in dims]
                raise InputError(f"{path}: input {name} has shape {shown}, the array "
                                 f"{list(array.shape)}")
    return feeds
