"""A source checkout of the fake target's release (``optfuzz-fake``) and the offline build
:mod:`fuzzer.builds` uses for such a checkout, standing in for a C++ optimizer's
(:func:`fuzzer.builds.onnxoptimizer.build_checkout`): the same interface, no compiler."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from fuzzer.builds.install import record_distribution
from fuzzer.builds.record import Build
from fuzzer.targets.fake import RELEASE_MODULE

PROJECT = "optfuzz-fake"


def fake_checkout(folder: Path, version: str = "1.1.dev0") -> Path:
    """Write a git checkout of ``optfuzz-fake`` ``version`` (every bug present, committed)
    into ``folder``; return it."""
    package = folder / RELEASE_MODULE
    package.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(f"[project]\nname = '{PROJECT}'\n"
                                           "dynamic = ['version']\n")
    (folder / "VERSION_NUMBER").write_text(version + "\n")
    (package / "__init__.py").write_text("FIXED = ()\n")
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "release"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return folder


def fix(checkout: Path, *bugs: str) -> None:
    """Patch ``checkout`` (uncommitted) so that its build lacks ``bugs``."""
    (checkout / RELEASE_MODULE / "__init__.py").write_text(f"FIXED = {tuple(bugs)!r}\n")


def build_checkout(checkout: Path, site: Path, jobs: int = 1,
                   say: Callable[[str], None] = print) -> Build:
    """Put ``checkout``'s package into ``site``; return the record a real build returns."""
    say(f"building {checkout.name}")
    shutil.copytree(checkout / RELEASE_MODULE, site / RELEASE_MODULE)
    version = (checkout / "VERSION_NUMBER").read_text().strip()
    record_distribution(site, PROJECT, version, [RELEASE_MODULE], checkout)
    return Build(target=PROJECT, version=version, kind="release", folder=str(checkout),
                 source=str(checkout), objects=str(checkout), site=str(site),
                 passes_dir=RELEASE_MODULE, seconds=0.0)
