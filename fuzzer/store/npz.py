"""Input feeds and outputs as ``.npz`` archives (inputs.npz, expected.npz, actual.npz)."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``np.savez`` of ``arrays`` into bytes."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file at ``path`` (no pickles).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not an npz archive.
    """
    data = path.read_bytes()
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except (EOFError, RuntimeError, zipfile.BadZipFile, OverflowError, zlib.error,
            struct.error) as exc:  # empty, truncated or garbled
        raise ValueError(f"{path.name} is not an npz archive ({exc or 'empty'})") from None
