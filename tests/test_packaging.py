"""Packaging: ``pip install -e .`` without extras pulls neither scikit-image nor scipy (the
``images`` extra has them), and image inputs say how to install it where it is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from fuzzer.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"scikit-image", "scipy"}


@pytest.fixture(scope="module")
def requires(tmp_path_factory) -> list[str]:
    """``importlib.metadata.requires`` of optfuzz as this checkout's pyproject.toml declares
    it (its metadata built in a temporary folder, nothing installed)."""
    tree = tmp_path_factory.mktemp("optfuzz")
    shutil.copy(ROOT / "pyproject.toml", tree)
    shutil.copy(ROOT / "README.md", tree)
    (tree / "fuzzer").mkdir()
    shutil.copy(ROOT / "fuzzer" / "__init__.py", tree / "fuzzer")
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q",
                    "egg_info", "--egg-base", str(tree)], cwd=tree, check=True,
                   capture_output=True, timeout=120)
    (info,) = tree.glob("*.egg-info")
    return metadata.PathDistribution(info).requires or []


def core(requirements: list[str]) -> list[Requirement]:
    """The requirements that hold without any extra (markers evaluated here)."""
    parsed = [Requirement(r) for r in requirements]
    return [r for r in parsed if r.marker is None or r.marker.evaluate({"extra": ""})]


def test_scikit_image_and_scipy_are_no_core_dependency(requires):
    assert not {canonicalize_name(r.name) for r in core(requires)} & HEAVY
    images = [Requirement(r) for r in requires if 'extra == "images"' in r]
    assert [r.name for r in images] == ["scikit-image"]


def test_the_installed_core_dependencies_pull_no_scipy(requires):
    """The closure of the core requirements over the distributions installed here."""
    seen: set[str] = set()
    todo = [r.name for r in core(requires)]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += [r.name for r in core(metadata.requires(name) or [])]
        except metadata.PackageNotFoundError:
            continue
    assert "onnx" in seen and not seen & HEAVY


def test_image_inputs_without_scikit_image_name_the_extra(monkeypatch):
    from fuzzer.corpus import images

    images.sample.cache_clear()
    monkeypatch.setitem(sys.modules, "skimage", None)  # import skimage raises ImportError
    monkeypatch.setitem(sys.modules, "skimage.data", None)
    try:
        with pytest.raises(InputError, match=r"pip install 'optfuzz\[images\]'"):
            images.picture(np.random.default_rng(0), "photo", 8, 8)
    finally:
        images.sample.cache_clear()
