"""``optfuzz coverage --code``: the table and plot of the target's own code coverage per case
source (see :mod:`fuzzer.edges.measure`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def run_code_coverage(target: Any, sources: list[str], cases: int, out: Path, *,
                      jobs: int = 2, seed: int = 0) -> None:
    """Run ``cases`` cases of each source through the coverage build, print line and branch
    coverage per pass source file for each source and their union, and write
    ``<out>/coverage.png`` and ``<out>/coverage.json``.

    Raises:
        InputError: no coverage build, an unknown source, or gcovr failing.
    """
    from rich.console import Console
    from rich.table import Table

    from fuzzer.builds import coverage_build
    from fuzzer.edges.measure import measure, plot

    build = coverage_build(target)
    console = Console()
    with console.status("running ...") as status:
        rows = measure(target.name, build, sources or ["generated"], cases, out / "counters",
                       jobs=jobs, seed=seed,
                       progress=lambda s, n: status.update(f"{s}: {n}/{cases} cases"))
    out.mkdir(parents=True, exist_ok=True)
    plot(rows, out / "coverage.png", f"{target.name}: edges over cases")
    if build is not None:
        table = Table(title=f"{target.name} {build.version}: line / branch coverage of "
                            f"{build.passes_dir}, {cases} cases per source")
        table.add_column("file", no_wrap=True)
        for row in rows:
            table.add_column(row.source, justify="right")
        by_source = [{f.path: f for f in row.files} for row in rows]
        for path in [f.path for f in rows[-1].files]:
            cells = [f"{c[path].line_percent:.1f} / {c[path].branch_percent:.1f}"
                     if path in c else "-" for c in by_source]
            table.add_row(Path(path).name if path != "total" else "[bold]total[/]", *cells)
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
