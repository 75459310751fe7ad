"""``optfuzz export pytest``: a standalone test module that fails while a planted fake bug
reproduces and passes once the fake target's release fixes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fuzzer.triage.marks import mark_bundle
from tests.test_triage_status import optfuzz, save_bundle, unary_model

ROOT = Path(__file__).resolve().parent.parent


def run_module(module: Path, fixed: str) -> subprocess.CompletedProcess[str]:
    """pytest on the exported ``module`` in a fresh process, the fake target's bugs
    ``fixed`` switched off (OPTFUZZ_FAKE_FIXED); repro.py imports the fake target from
    this checkout."""
    env = dict(os.environ, OPTFUZZ_FAKE_FIXED=fixed, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(module.parent), str(module)], cwd=module.parent,
                          capture_output=True, text=True, env=env, timeout=600)


def test_the_exported_module_fails_while_the_bug_reproduces(tmp_path: Path) -> None:
    project = tmp_path / "project"
    model = unary_model(tmp_path / "m.onnx", ["Exp", "Neg", "Cos"])
    out = project / "crashes"
    for passes in ("drop-node", "raise", "invalid"):
        save_bundle(model, passes, out)
    ids = {p.name.rsplit("-", 1)[0]: p.name for p in out.iterdir() if p.is_dir()}
    mark_bundle(out / ids["optimizer-error"], ["fixed", "2.0"])
    mark_bundle(out / ids["invalid-model"], ["reported", "https://example.org/issues/1"])
    (out / ids["invalid-model"] / "repro.py").unlink()

    module = project / "ci" / "test_bundles.py"  # its folder is made as it is written
    proc = optfuzz("export", "pytest", str(out), "-o", str(module))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {module}: 1 test(s)" in proc.stdout
    assert f"left out {ids['optimizer-error']}: marked fixed" in proc.stdout
    assert f"left out {ids['invalid-model']}: no repro.py" in proc.stdout
    text = module.read_text()
    assert "import fuzzer" not in text and "from fuzzer" not in text
    assert f"'../crashes/{ids['output-mismatch']}'" in text

    failing = run_module(module, fixed="")
    test = f"test_{ids['output-mismatch'].replace('-', '_')}"
    assert failing.returncode == 1, failing.stdout
    assert f"FAILED test_bundles.py::{test}" in failing.stdout
    assert "still reproduces" in failing.stdout and "1 failed" in failing.stdout

    moved = tmp_path / "elsewhere"  # the module and the folder move together
    shutil.copytree(project, moved)
    passing = run_module(moved / "ci" / "test_bundles.py", fixed="drop-node")
    assert passing.returncode == 0, passing.stdout
    assert "1 passed" in passing.stdout


def test_export_refuses_a_missing_folder_in_one_line(tmp_path: Path) -> None:
    proc = optfuzz("export", "pytest", str(tmp_path / "nothing"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "not a folder" in proc.stderr
