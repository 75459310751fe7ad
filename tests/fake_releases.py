"""Releases of the fake target as wheels, and fake-target bundles with their repro.py.

A release is the distribution ``optfuzz-fake`` (:data:`fuzzer.targets.fake.RELEASE_MODULE`):
its version becomes the fake target's, and the bugs its ``FIXED`` names are off. The wheel
is written here by hand (a zip with the module and its ``.dist-info``), so installing it
needs no build backend and no network; ``requires`` adds ``Requires-Dist`` lines (a
requirement no folder offers makes a release that cannot be installed)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Any

from fuzzer.report.repro import render_repro, repro_context
from fuzzer.targets.fake import RELEASE_MODULE
from tests.schema2_bundles import write_bundle


def fake_release(folder: Path, version: str, fixed: tuple[str, ...] = (),
                 requires: tuple[str, ...] = ()) -> Path:
    """Write the wheel of ``optfuzz-fake`` ``version`` without the bugs ``fixed`` into
    ``folder``; return its path."""
    info = f"optfuzz_fake-{version}.dist-info"
    files = {
        f"{RELEASE_MODULE}/__init__.py": f"FIXED = {tuple(fixed)!r}\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: optfuzz-fake\n"
                            f"Version: {version}\n"
                            + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: optfuzz-tests\n"
                         "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{name},sha256={_digest(text.encode())},{len(text.encode())}"
              for name, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"optfuzz_fake-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def fake_bundle(root: Path, bundle_id: str, bug: str, **changes: Any) -> Path:
    """Write a fake-target bundle of pass ``bug`` (model x -> Exp -> Neg -> y) with its
    repro.py under ``root``; return its folder."""
    config = {"passes": [bug], "fixed_point": False}
    meta = write_bundle(root, bundle_id, target={"name": "fake", "version": "1.0",
                                                 "config": config},
                        signature=f"fake|{bug}|{bundle_id}", **changes)
    (root / bundle_id / "repro.py").write_text(
        render_repro(**repro_context(meta), timeout=30.0))
    return root / bundle_id
