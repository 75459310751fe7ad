"""Line and branch coverage per source file of a coverage build, by ``gcovr``.

The workers' ``.gcda`` trees (``<run>/w<pid>/<object folder>/...``) lack gcov's notes files
(``.gcno``), which stay in the build's object folder; they are copied beside each counter
file, and ``gcovr`` (which runs ``gcov`` and merges the results of every tree) reports the
files under the build's pass folder. Every branch counts, those of C++ exception handling
too: gcov can tell those apart only in code that ran, so leaving them out would make the
total depend on the cases and runs incomparable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fuzzer.builds.record import Build
from fuzzer.errors import InputError

TIMEOUT = 600.0  # seconds for one gcovr run


@dataclass(frozen=True)
class FileCoverage:
    """Coverage of one source file (or, with ``path == "total"``, of all of them).

    Attributes:
        path: the file, relative to the sdist's top folder.
        lines: ``(covered, total)`` executable lines.
        branches: ``(covered, total)`` branch outcomes.
    """

    path: str
    lines: tuple[int, int]
    branches: tuple[int, int]

    @property
    def line_percent(self) -> float:
        """Covered lines in percent (0 for a file without lines)."""
        return 100.0 * self.lines[0] / self.lines[1] if self.lines[1] else 0.0

    @property
    def branch_percent(self) -> float:
        """Covered branch outcomes in percent (0 for a file without branches)."""
        return 100.0 * self.branches[0] / self.branches[1] if self.branches[1] else 0.0


def _add_notes(build: Build, run: Path) -> None:
    objects = Path(build.objects)
    for gcda in run.rglob("*.gcda"):
        rel = gcda.relative_to(run)
        # the tree mirrors the absolute object path below a per-worker folder (w<pid>)
        tail = Path(*rel.parts[1:]) if rel.parts[0].startswith("w") else rel
        notes = Path("/") / tail.with_suffix(".gcno")
        if not notes.is_file() or not str(notes).startswith(str(objects)):
            continue
        shutil.copy2(notes, gcda.with_suffix(".gcno"))


def code_coverage(build: Build, runs: Sequence[Path]) -> list[FileCoverage]:
    """Per-file coverage of the build's pass sources over the counter trees ``runs``
    (merged), sorted by path, with a ``"total"`` row last.

    Raises:
        InputError: gcovr is missing or fails.
    """
    for run in runs:
        _add_notes(build, run)
    passes = str(Path(build.source) / build.passes_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        cmd = [sys.executable, "-m", "gcovr", "--root", build.source, "--filter",
               f"{passes}/", "--json-summary", str(out),
               *[str(r) for r in runs if r.is_dir()]]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"gcovr did not finish: {exc}") from None
        if proc.returncode != 0 or not out.is_file():
            if "No module named gcovr" in proc.stderr:
                raise InputError("code coverage needs gcovr: pip install 'optfuzz[builds]'")
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise InputError(f"gcovr failed: {last}")
        data = json.loads(out.read_text())
    rows = [FileCoverage(f["filename"], (f["line_covered"], f["line_total"]),
                         (f["branch_covered"], f["branch_total"]))
            for f in data.get("files", [])]
    rows.sort(key=lambda r: r.path)
    rows.append(FileCoverage("total", (data["line_covered"], data["line_total"]),
                             (data["branch_covered"], data["branch_total"])))
    return rows
