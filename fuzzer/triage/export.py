"""A campaign folder as a pytest module (``optfuzz export pytest FOLDER``): one test per
bundle still worth testing, which runs the bundle's repro.py in a fresh interpreter and fails
while it exits 1 (the bug reproduces), passes once it exits 0, and skips where it exits 2 (the
test cannot run here: a missing package or file).

Bundles left out: those marked duplicate, invalid or fixed (:data:`LEFT_OUT`), and those
without a repro.py (``optfuzz report BUNDLE`` writes one). The module needs only the standard
library and pytest; it names each bundle folder relative to the module's own folder, so the
module and the campaign folder can move together (e.g. into a repository's tests). The repro
runs with the module's interpreter and environment (the target's package, e.g. through
``PYTHONPATH``, must be importable).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from fuzzer.store.bundle_state import DUPLICATE, FIXED, INVALID, state_name
from fuzzer.store.folder import BundleStore, DamagedBundle
from fuzzer.store.meta import BundleMeta

#: maintainer's states whose bundles get no test.
LEFT_OUT = (DUPLICATE, INVALID, FIXED)
REPRO = "repro.py"
#: most seconds one repro.py may take in the exported test (it bounds its own child
#: by the campaign's timeout; this bounds the rest).
REPRO_SECONDS = 900

_MODULE = '''"""optfuzz bundles of {folder} as tests: each runs the bundle's repro.py in a fresh
interpreter and fails while the bug reproduces (repro.py exits 1), passes once it is fixed
(exit 0), and skips where the repro cannot run here (exit 2).

Written by `optfuzz export pytest`. Bundle folders are relative to this file's folder.
Needs only the standard library and pytest; repro.py needs onnx, onnxruntime, numpy and the
target's package.
"""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPRODUCES, FIXED, CANNOT_RUN = 1, 0, 2
TIMEOUT_S = {timeout}


def run_repro(folder):
    """Run FOLDER/repro.py in a fresh interpreter; fail while it reproduces the bug."""
    bundle = HERE / folder
    proc = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    tail = "\\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
    if proc.returncode == CANNOT_RUN:
        pytest.skip(f"{{bundle.name}}: the repro cannot run here: {{tail}}")
    assert proc.returncode != REPRODUCES, f"{{bundle.name}} still reproduces:\\n{{tail}}"
    assert proc.returncode == FIXED, \\
        f"{{bundle.name}}: repro.py exited {{proc.returncode}}:\\n{{tail}}"
'''

_TEST = '''

def test_{name}():
    {title!r}
    run_repro({folder!r})
'''


@dataclass
class Export:
    """What :func:`exported` chose.

    Attributes:
        tested: the bundles that get a test, in id order.
        left_out: ``(id, why)`` of the readable bundles that get none.
        damaged: the damaged bundles (skipped).
    """

    tested: list[BundleMeta]
    left_out: list[tuple[str, str]]
    damaged: list[DamagedBundle]


def exported(store: BundleStore) -> Export:
    """The bundles of ``store`` that get a test: readable, not marked duplicate, invalid or
    fixed, with a repro.py."""
    metas, damaged = store.read_all()
    tested, left_out = [], []
    for meta in metas:
        state = state_name(meta.state)
        if state in LEFT_OUT:
            left_out.append((meta.id, f"marked {state}"))
        elif not (store.path(meta.id) / REPRO).is_file():
            left_out.append((meta.id, f"no {REPRO} (optfuzz report writes one)"))
        else:
            tested.append(meta)
    return Export(tested, left_out, damaged)


def function_name(bundle_id: str) -> str:
    """The test function's name part of a bundle id: ``output-mismatch-1a2b3c4d`` ->
    ``output_mismatch_1a2b3c4d``."""
    return re.sub(r"\W", "_", bundle_id)


def pytest_module(root: Path, metas: list[BundleMeta], module: Path) -> str:
    """The text of the test module to be written at ``module`` for the bundles ``metas`` of
    folder ``root`` (their folders named relative to ``module``'s folder)."""
    base = module.resolve().parent
    text = _MODULE.format(folder=root.name, timeout=REPRO_SECONDS)
    for meta in metas:
        folder = Path(os.path.relpath(root.resolve() / meta.id, base)).as_posix()
        title = f"{meta.symptom} in {meta.target.name} {meta.target.version}: " \
                f"{' '.join(meta.message.split())[:60]}"
        text += _TEST.format(name=function_name(meta.id), folder=folder, title=title)
    return text
