"""``optfuzz coverage --code``: the table and plot of the target's own code coverage per case
source (see :mod:`fuzzer.campaign.code_coverage`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def short_names(paths: Sequence[str]) -> dict[str, str]:
    """Each of ``paths`` below the folder they all share (``pattern/fusion/gelu.py`` of
    ``onnxslim/core/pattern/fusion/gelu.py`` among onnxslim's core files)."""
    if not paths:
        return {}
    common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    if common in paths:  # one file's path: name it by its own folder
        common = os.path.dirname(common)
    return {p: os.path.relpath(p, common) if common else p for p in paths}


def _cell(file: Any) -> str:
    """``line % / branch %`` of a :class:`fuzzer.edges.summary.FileCoverage` ("-" for a
    file without branches)."""
    branches = f"{file.branch_percent:.1f}" if file.branches[1] else "-"
    return f"{file.line_percent:.1f} / {branches}"


def run_code_coverage(target: Any, sources: list[str], cases: int, out: Path, *,
                      jobs: int = 2, seed: int = 0) -> None:
    """Run ``cases`` cases of each source with the target's code measured (its coverage kind:
    a gcov build, coverage.py over its Python rewrite sources), print line and branch
    coverage per source file for each source and their union, and write
    ``<out>/coverage.png`` and ``<out>/coverage.json``.

    Raises:
        InputError: the target cannot be measured here (no coverage build, coverage.py
            missing), an unknown source, or gcovr failing.
    """
    from rich.console import Console
    from rich.table import Table

    from fuzzer.campaign.code_coverage import measure, plot
    from fuzzer.edges.kinds import edge_kind

    console = Console()
    with console.status("running ...") as status:
        setup, rows = measure(target.name, sources or ["generated"], cases, out / "counters",
                              jobs=jobs, seed=seed,
                              progress=lambda s, n: status.update(f"{s}: {n}/{cases} cases"))
    out.mkdir(parents=True, exist_ok=True)
    plot(rows, out / "coverage.png", f"{target.name}: edges over cases")
    if rows[-1].files:
        version = setup.build.version if setup.build is not None else target.version()
        table = Table(title=f"{target.name} {version}: line / branch coverage of "
                            f"{edge_kind(setup.kind).scope(setup)}, {cases} cases per source")
        table.add_column("file", overflow="fold")
        for row in rows:
            table.add_column(row.source, justify="right", no_wrap=True,
                             min_width=len("100.0 / 100.0"))
        by_source = [{f.path: f for f in row.files} for row in rows]
        paths = [f.path for f in rows[-1].files]
        names = short_names([p for p in paths if p != "total"])
        for path in paths:
            cells = [_cell(c[path]) if path in c else "-" for c in by_source]
            table.add_row(names.get(path, "[bold]total[/]"), *cells)
        console.print(table)
    for row in rows:
        total = row.files[-1] if row.files else None
        cov = (f"lines {total.line_percent:.1f}%, branches {total.branch_percent:.1f}% "
               f"({total.branches[0]}/{total.branches[1]})") if total else ""
        console.print(f"{row.source}: {row.cases} cases, {len(row.edges)} edge features "
                      f"{cov}".rstrip())
    console.print(f"plot: {out / 'coverage.png'}")
    (out / "coverage.json").write_text(json.dumps([{
        "source": r.source, "cases": r.cases, "edge_features": len(r.edges), "curve": r.curve,
        "files": [{"path": f.path, "lines": f.lines, "branches": f.branches}
                  for f in r.files]} for r in rows], indent=1))
