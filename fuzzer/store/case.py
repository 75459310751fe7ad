"""The test case a bundle folder holds: what replay, localize and reduce run again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzzer.execution.case import TestCase
from fuzzer.store.npz import read_npz


def bundle_case(folder: Path, meta: dict[str, Any],
                config: dict[str, Any] | None = None) -> TestCase:
    """The TestCase of a bundle folder: model.onnx bytes, inputs.npz feeds, and the target
    and configuration recorded in its meta.json (``config`` replaces the latter).

    Raises:
        OSError: model.onnx or inputs.npz is missing or unreadable.
        ValueError: inputs.npz is not an npz archive, or meta.json lacks the target.
    """
    model = (folder / "model.onnx").read_bytes()
    feeds = read_npz(folder / "inputs.npz")
    try:
        target = meta["target"]
    except (KeyError, TypeError):
        raise ValueError("meta.json names no target") from None
    return TestCase(target["name"], dict(config if config is not None else target["config"]),
                    {"kind": "bundle", "id": meta.get("id", folder.name),
                     "path": str(folder)},
                    model_bytes=model, feeds=feeds)
