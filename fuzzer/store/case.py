"""The test case a bundle folder holds: what replay, localize and reduce run again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzzer.execution.case import TestCase
from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import read_npz

#: folder of a bundle holding its model at the sizes that were timed (a ``slow`` finding).
SCALING_DIR = "scaling"


def bundle_case(folder: Path, meta: BundleMeta,
                config: dict[str, Any] | None = None) -> TestCase:
    """The TestCase of a bundle folder: model.onnx bytes, inputs.npz feeds, and the target
    and configuration recorded in its meta.json (``config`` replaces the latter). A bundle
    with a ``scaling/`` folder asks for the three-size timing (``TestCase.growth``), its
    sizes up to the largest there (``TestCase.growth_nodes``).

    Raises:
        OSError: model.onnx or inputs.npz is missing or unreadable.
        ValueError: inputs.npz is not an npz archive.
    """
    model = (folder / "model.onnx").read_bytes()
    feeds = read_npz(folder / "inputs.npz")
    sizes = [int(p.stem) for p in (folder / SCALING_DIR).glob("*.onnx") if p.stem.isdigit()]
    return TestCase(meta.target.name,
                    dict(config if config is not None else meta.target.config),
                    {"kind": "bundle", "id": meta.id, "path": str(folder)},
                    model_bytes=model, feeds=feeds, growth=(folder / SCALING_DIR).is_dir(),
                    growth_nodes=max(sizes, default=None))
