"""Stored feeds in the ONNX backend test data layout: ``test_data_set_0/input_<i>.pb``.

Each file holds one serialized ``onnx.TensorProto``; ``input_<i>`` feeds the i-th graph input
that needs a feed (IR < 4 graphs list initializers among their inputs; those are skipped).
A tensor whose ``name`` matches a graph input feeds that input instead.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.errors import InputError

_INPUT_FILE = re.compile(r"input_(\d+)\.pb$")


def load_feeds(folder: Path, model: Any) -> dict[str, np.ndarray] | None:
    """Feeds ``{graph input name: ndarray}`` from ``folder/input_<i>.pb``.

    Returns ``None`` when the folder holds no input files, or when one of them is not a
    tensor (sequences, maps and optionals are left to input synthesis).

    Raises:
        InputError: more input files than graph inputs, or an unreadable file.
    """
    from onnx import TensorProto, numpy_helper

    from generators.inputs import graph_feed_inputs

    files = sorted((int(m.group(1)), p) for p in Path(folder).glob("input_*.pb")
                   if (m := _INPUT_FILE.search(p.name)))
    if not files:
        return None
    names = [vi.name for vi in graph_feed_inputs(model)]
    if len(files) > len(names):
        raise InputError(f"{folder}: {len(files)} stored inputs for {len(names)} graph inputs")
    feeds: dict[str, np.ndarray] = {}
    for index, path in files:
        tensor = TensorProto()
        try:
            tensor.ParseFromString(path.read_bytes())
        except Exception:
            return None
        if not tensor.dims and not tensor.raw_data and tensor.data_type == 0:
            return None  # not a TensorProto (a SequenceProto parses as an empty tensor)
        name = tensor.name if tensor.name in names else names[index]
        feeds[name] = numpy_helper.to_array(tensor)
    return feeds
