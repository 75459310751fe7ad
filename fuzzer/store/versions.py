"""Versions of the software a finding depends on, for meta.json and reports."""

from __future__ import annotations

import platform
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata


@lru_cache(maxsize=1)
def environment_versions() -> dict[str, str]:
    """``{"onnx": ..., "onnxruntime": ..., "numpy": ..., "python": ...}`` as installed."""
    out = {}
    for name in ("onnx", "onnxruntime", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    out["python"] = platform.python_version()
    return out


def utc_now() -> str:
    """The current time as ISO 8601 UTC with a ``Z`` suffix, to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
