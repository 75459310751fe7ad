"""``optfuzz coverage --code``: the target's own code coverage reached by N cases of each
case source (generated, corpus, mutated), alone and together.

Each source runs in its own sandbox whose workers measure the target's code the way the target
declares (:mod:`fuzzer.edges.kinds`: a gcov build's counters, coverage.py's arcs of its Python
rewrite sources, or the edges it names itself) and collect every case's edges
(:class:`fuzzer.edges.setup.EdgeSetup`); the edges seen so far after each case give the
coverage-over-cases curve, and the kind's reading of each source's counter files gives line
and branch coverage per source file (gcovr, :mod:`fuzzer.edges.summary`; coverage.py,
:mod:`fuzzer.edges.python_coverage`). The union reads every source's files together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

from fuzzer.edges.kinds import target_kind
from fuzzer.edges.setup import EdgeSetup
from fuzzer.edges.summary import FileCoverage
from fuzzer.errors import InputError

#: case sources ``--source`` may name for a code-coverage run.
CODE_SOURCES = ("generated", "corpus", "mutated")


@dataclass
class SourceCoverage:
    """What N cases of one source reached.

    Attributes:
        source: ``generated``, ``corpus``, ``mutated`` or ``union``.
        cases: cases run.
        curve: distinct edge features seen after each case (length ``cases``).
        edges: the distinct edge features seen.
        files: per-file coverage with a ``total`` row last (empty where the target's coverage
            kind has no per-file table).
    """

    source: str
    cases: int = 0
    curve: list[int] = field(default_factory=list)
    edges: set[int] = field(default_factory=set)
    files: list[FileCoverage] = field(default_factory=list)


def _stream(source: str, target: str, seed: int) -> Iterator[Any]:
    from fuzzer.campaign.stream import CaseStream, StreamConfig
    from fuzzer.targets import get_target

    adapter = get_target(target)
    if source == "corpus":
        from fuzzer.corpus import iter_models

        config = StreamConfig(target, seed, generated=False, corpus=list(iter_models(
            ["bundled"])))
    else:
        config = StreamConfig(target, seed, generated=source == "generated",
                              mutated=source == "mutated")
    return iter(CaseStream(config, adapter))


def measure(target: str, sources: Sequence[str], cases: int, folder: Path, *,
            jobs: int = 2, seed: int = 0, timeout: float = 30.0,
            progress: Callable[[str, int], None] | None = None
            ) -> tuple[EdgeSetup, list[SourceCoverage]]:
    """Run ``cases`` cases of each of ``sources`` with edge collection; return the workers'
    set-up (of the last source) and one :class:`SourceCoverage` per source and, for more
    than one, a ``union`` row last.

    Args:
        target: target name.
        sources: names from :data:`CODE_SOURCES`.
        cases: cases per source (a corpus source may have fewer).
        folder: where each source's counter files go (``<folder>/<source>/``); emptied.
        jobs: workers per source.
        seed: seed of the case streams.
        timeout: per-case timeout in seconds.
        progress: called with ``(source, cases done)``.

    Raises:
        InputError: an unknown source; the target cannot be measured here (no coverage
            build, coverage.py missing); gcovr failing.
    """
    import shutil

    from fuzzer.execution.sandbox import DEFAULT_MEMORY_LIMIT, Sandbox
    from fuzzer.targets import get_target

    unknown = [s for s in sources if s not in CODE_SOURCES]
    if not sources:
        raise InputError(f"no case source; code coverage knows {', '.join(CODE_SOURCES)}")
    if unknown:
        raise InputError(f"unknown source(s) {unknown}; code coverage knows "
                         f"{', '.join(CODE_SOURCES)}")
    adapter = get_target(target)
    shutil.rmtree(folder, ignore_errors=True)
    rows: list[SourceCoverage] = []
    kind = target_kind(adapter)
    setup = kind.setup(adapter, folder / sources[0])
    build = setup.build
    for source in sources:
        row = SourceCoverage(source)
        run = folder / source
        setup = replace(setup, folder=str(run))
        with Sandbox(jobs=jobs, timeout=timeout, edges=setup,
                     memory_limit=None if build is not None and
                     not build.build_kind.memory_limit_ok else DEFAULT_MEMORY_LIMIT) \
                as sandbox:
            futures = [sandbox.submit(case) for case in islice(_stream(source, target, seed),
                                                               cases)]
            for fut in futures:
                result = fut.result()
                row.cases += 1
                row.edges |= result.edges or frozenset()
                row.curve.append(len(row.edges))
                if progress is not None:
                    progress(source, row.cases)
        row.files = kind.files(setup, [run])
        rows.append(row)
    if len(rows) > 1:
        union = SourceCoverage("union", cases=sum(r.cases for r in rows))
        for r in rows:
            union.edges |= r.edges
        union.files = kind.files(setup, [folder / s for s in sources])
        rows.append(union)
    return setup, rows


def plot(rows: Sequence[SourceCoverage], path: Path, title: str) -> None:
    """Write the coverage-over-cases curves of ``rows`` (not the union) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for row in rows:
        if row.source != "union":
            ax.plot(range(1, len(row.curve) + 1), row.curve, label=row.source)
    ax.set_xlabel("cases")
    ax.set_ylabel("distinct edge features")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
