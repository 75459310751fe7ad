"""Realistic feeds from a per-model input spec.

A spec maps a graph input name (or ``"*"`` for every input not named) to an entry::

    {"fill": "image", "shape": [1, 3, 320, 320], ...fill parameters}

``shape`` (optional) fixes the dynamic dims; the user's ``--input-shapes`` wins over it.
Fills (a registry: a new kind is one new function in :data:`FILLS`):

- ``image``: natural photos (``set: photo``) or document scans (``set: document``), resized
  to the H and W of the shape; ``layout`` NCHW (default) or NHWC; ``color`` rgb (default),
  bgr or gray (also chosen when the channel dim is 1); value = (pixel * ``scale`` - ``mean``)
  / ``std`` per channel, pixel in [0, 255].
- ``audio``: ``signal`` speech (default) or noise at ``rate`` Hz (default 16000) along
  ``axis`` (default: the longest axis), one clip per index of the other axes.
- ``bytes``: int byte sequences of real files (the head then the tail, ``head`` + ``tail``
  values, padded with ``pad``), as content-type classifiers read them.
- ``const``: every element ``value`` (e.g. an int64 scalar sample rate 16000).
- ``zeros``: all zeros (e.g. the initial state of a recurrent model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.corpus import audio, images
from fuzzer.registry import Registry


def fill_image(rng: np.random.Generator, shape: list[int], dtype: np.dtype,
               params: Mapping[str, Any]) -> np.ndarray:
    """Photos for an image input of ``shape`` (4-D, NCHW or NHWC) and ``dtype``."""
    if len(shape) != 4:
        raise ValueError(f"image fill needs a 4-D shape, got {shape}")
    nhwc = params.get("layout", "NCHW") == "NHWC"
    n, h, w, c = (shape[0], shape[1], shape[2], shape[3]) if nhwc else \
        (shape[0], shape[2], shape[3], shape[1])
    color = "gray" if c == 1 else params.get("color", "rgb")
    batch = []
    for _ in range(n):
        rgb = images.picture(rng, params.get("set", "photo"), h, w)
        if color == "gray":
            pix = (rgb @ np.array([0.299, 0.587, 0.114], dtype=np.float32))[:, :, None]
        else:
            pix = rgb[:, :, ::-1] if color == "bgr" else rgb
        batch.append(pix[:, :, :c])
    arr = np.stack(batch).astype(np.float32)  # NHWC
    mean = np.asarray(params.get("mean", 0.0), dtype=np.float32)
    std = np.asarray(params.get("std", 1.0), dtype=np.float32)
    if mean.size > c:
        mean, std = mean[:c], std[:c] if std.size > c else std
    arr = (arr * float(params.get("scale", 1.0)) - mean) / std
    if not nhwc:
        arr = arr.transpose(0, 3, 1, 2)
    if np.issubdtype(dtype, np.integer):
        arr = np.clip(np.rint(arr), np.iinfo(dtype).min, np.iinfo(dtype).max)
    return np.ascontiguousarray(arr.astype(dtype))


def fill_audio(rng: np.random.Generator, shape: list[int], dtype: np.dtype,
               params: Mapping[str, Any]) -> np.ndarray:
    """Signals along the time axis ``axis`` (default: the longest axis) of ``shape``."""
    axis = int(params.get("axis", int(np.argmax(shape)) if shape else 0))
    samples = shape[axis]
    moved = [s for i, s in enumerate(shape) if i != axis]
    clips = int(np.prod(moved, dtype=np.int64)) if moved else 1
    make = audio.SIGNALS[params.get("signal", "speech")]
    rate = int(params.get("rate", 16000))
    data = np.stack([make(rng, samples, rate) for _ in range(clips)])
    data = data.reshape([*moved, samples])
    return np.ascontiguousarray(np.moveaxis(data, -1, axis).astype(dtype))


def _byte_files() -> list[str]:
    import csv
    import json
    import textwrap

    files = [csv.__file__, json.__file__, textwrap.__file__]
    try:
        import skimage

        base = Path(skimage.__file__).parent / "data"
        files += [str(base / "chelsea.png"), str(base / "rocket.jpg")]
    except ImportError:
        pass
    return files


def fill_bytes(rng: np.random.Generator, shape: list[int], dtype: np.dtype,
               params: Mapping[str, Any]) -> np.ndarray:
    """Rows of ``head`` first bytes then ``tail`` last bytes of real files, padded with
    ``pad`` (default 256), for a ``(..., head + tail)`` int input."""
    length = shape[-1]
    head = int(params.get("head", length // 2))
    tail = length - head
    pad = int(params.get("pad", 256))
    files = _byte_files()
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    out = np.full((rows, length), pad, dtype=np.int64)
    for r in range(rows):
        with open(files[int(rng.integers(len(files)))], "rb") as handle:
            content = handle.read().strip()
        first = np.frombuffer(content[:head], dtype=np.uint8)
        last = np.frombuffer(content[-tail:] if tail else b"", dtype=np.uint8)
        out[r, :first.size] = first
        out[r, length - last.size:] = last
    return out.reshape(shape).astype(dtype)


def fill_const(rng: np.random.Generator, shape: list[int], dtype: np.dtype,
               params: Mapping[str, Any]) -> np.ndarray:
    """Every element equal to ``value``."""
    return np.full(shape, params["value"], dtype=dtype)


def fill_zeros(rng: np.random.Generator, shape: list[int], dtype: np.dtype,
               params: Mapping[str, Any]) -> np.ndarray:
    """All zeros."""
    return np.zeros(shape, dtype=dtype)


Fill = Callable[[np.random.Generator, list[int], np.dtype, Mapping[str, Any]], np.ndarray]

#: fill kind -> function ``(rng, shape, dtype, params) -> ndarray``.
FILLS: Registry[Fill] = Registry("fill", {
    "image": fill_image,
    "audio": fill_audio,
    "bytes": fill_bytes,
    "const": fill_const,
    "zeros": fill_zeros,
})


def spec_shapes(spec: Mapping[str, Any]) -> dict[str, list[int]]:
    """Default shapes the spec fixes: ``{input name: dims}`` (``"*"`` entries excluded)."""
    return {name: list(entry["shape"]) for name, entry in spec.items()
            if name != "*" and "shape" in entry}


def spec_feeds(model: Any, spec: Mapping[str, Any], seed: int,
               shapes: Mapping[str, list[int]] | None) -> dict[str, np.ndarray] | None:
    """Feeds for every graph input of ``model`` that needs one, deterministic from ``seed``.

    Inputs that the spec does not cover get the synthesizer's values
    (:func:`generators.inputs.synthesize_value`). Returns ``None`` when the spec covers no
    input. Shapes: ``shapes`` (the user's) > the spec's ``shape`` > declared dims with
    dynamic dims set to :data:`generators.inputs.DEFAULT_DYNAMIC_DIM`.

    Raises:
        ValueError: an unknown fill kind, or a shape the fill cannot use.
        generators.inputs.InputSpecError: an input that cannot be synthesized.
    """
    from onnx import helper

    from generators.inputs import graph_feed_inputs, input_shape, synthesize_value

    rng = np.random.default_rng(seed)
    merged = dict(spec_shapes(spec), **dict(shapes or {}))
    feeds: dict[str, np.ndarray] = {}
    covered = False
    for vi in graph_feed_inputs(model):
        entry = spec.get(vi.name, spec.get("*"))
        shape = input_shape(vi, merged)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
        if entry is None:
            feeds[vi.name] = synthesize_value(rng, dtype, shape)
            continue
        if entry["fill"] not in FILLS:
            raise ValueError(f"unknown fill {entry['fill']!r} for input {vi.name!r}")
        feeds[vi.name] = FILLS[entry["fill"]](rng, shape, dtype, entry)
        covered = True
    return feeds if covered else None
