"""Versions of the software a finding depends on, for meta.json, reports, campaign.json and
``optfuzz check --json``."""

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


def software_versions(target_version: str) -> dict[str, str]:
    """optfuzz's version, the target's (``target_version``, as the target reports it) and
    :func:`environment_versions`: ``{"optfuzz", "target", "onnx", "onnxruntime", "numpy",
    "python"}``."""
    from fuzzer import __version__

    return {"optfuzz": __version__, "target": target_version, **environment_versions()}


def utc_now() -> str:
    """The current time as ISO 8601 UTC with a ``Z`` suffix, to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
