"""Kinds of code coverage, by the name a target declares (:attr:`fuzzer.targets.base.Target.
code_coverage`): how the workers measure the target's own code per case, and how a run's
per-file line and branch coverage is read.

- ``gcov``: an instrumented build of a native target (:mod:`fuzzer.builds`), its counters
  read per case (:class:`fuzzer.edges.collector.GcovCollector`) and per file by gcovr.
- ``hits``: the target calls :func:`fuzzer.targets.hits.hit` at the branches it wants
  counted (the planted-bug ``fake`` target); no per-file table.
- ``python``: coverage.py's arcs of the target's rewrite sources
  (:attr:`fuzzer.targets.base.Target.coverage_modules`, :mod:`fuzzer.edges.python_coverage`).

A new kind is one :class:`EdgeKind` in :data:`EDGE_KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.edges.setup import EdgeCollector, EdgeSetup
from fuzzer.edges.summary import FileCoverage
from fuzzer.errors import InputError
from fuzzer.registry import Registry


@dataclass(frozen=True)
class EdgeKind:
    """How one kind of target code is measured.

    Attributes:
        name: the key a target declares.
        setup: ``(target adapter, folder) -> EdgeSetup`` for workers whose counter files go
            to ``folder``; raises InputError where the target cannot be measured here.
        collector: ``(setup) -> EdgeCollector``, called once in each worker.
        files: ``(setup, run folders) -> [FileCoverage]`` per source file over the runs'
            counter files, a ``total`` row last (empty: the kind has no per-file table).
        scope: ``(setup) -> str``: what the per-file table covers, for its title.
    """

    name: str
    setup: Callable[[Any, Path], EdgeSetup]
    collector: Callable[[EdgeSetup], EdgeCollector]
    files: Callable[[EdgeSetup, Sequence[Path]], list[FileCoverage]]
    scope: Callable[[EdgeSetup], str]


def _gcov_setup(target: Any, folder: Path) -> EdgeSetup:
    from fuzzer.builds import coverage_build

    return EdgeSetup(str(folder), "gcov", build=coverage_build(target), target=target.name)


def _gcov_collector(setup: EdgeSetup) -> EdgeCollector:
    import os

    from fuzzer.edges.collector import GcovCollector

    assert setup.build is not None
    package = Path(setup.build.site) / setup.build.target.replace("-", "_")
    modules = sorted(package.glob("*.so"))
    if not modules:
        raise FileNotFoundError(f"no extension module in {package}")
    return GcovCollector(str(modules[0]), Path(setup.folder) / f"w{os.getpid()}")


def _gcov_files(setup: EdgeSetup, runs: Sequence[Path]) -> list[FileCoverage]:
    from fuzzer.edges.summary import code_coverage

    assert setup.build is not None
    return code_coverage(setup.build, runs)


def _hits_collector(setup: EdgeSetup) -> EdgeCollector:
    from fuzzer.edges.python_edges import PythonEdgeCollector

    return PythonEdgeCollector()


def _python_setup(target: Any, folder: Path) -> EdgeSetup:
    from fuzzer.edges.python_coverage import resolve_sources

    if not target.coverage_modules:
        raise InputError(f"target {target.name} declares no modules to measure "
                         "(coverage_modules)")
    return EdgeSetup(str(folder), "python", target=target.name,
                     sources=resolve_sources(target.coverage_modules))


def _python_collector(setup: EdgeSetup) -> EdgeCollector:
    from fuzzer.edges.python_coverage import CoverageCollector

    return CoverageCollector(setup.sources, Path(setup.folder))


def _python_files(setup: EdgeSetup, runs: Sequence[Path]) -> list[FileCoverage]:
    from fuzzer.edges.python_coverage import file_coverage, import_arcs

    start_up = Path(setup.folder).parent / "start-up"
    if not any(start_up.glob("*.arcs.jsonl")):
        import_arcs(setup.target, setup.sources, start_up)
    return file_coverage(setup.sources, [*runs, start_up])


def _python_scope(setup: EdgeSetup) -> str:
    from fuzzer.targets import get_target

    return ", ".join(get_target(setup.target).coverage_modules)


#: kind name -> how it is measured.
EDGE_KINDS: Registry[EdgeKind] = Registry("code coverage kind", {
    "gcov": EdgeKind("gcov", _gcov_setup, _gcov_collector, _gcov_files,
                     lambda s: s.build.passes_dir if s.build is not None else ""),
    "hits": EdgeKind("hits", lambda t, f: EdgeSetup(str(f), "hits", target=t.name),
                     _hits_collector, lambda s, r: [], lambda s: "branches the target names"),
    "python": EdgeKind("python", _python_setup, _python_collector, _python_files,
                       _python_scope),
})


def edge_kind(name: str) -> EdgeKind:
    """The kind called ``name``.

    Raises:
        InputError: no such kind (the message lists the known ones).
    """
    if name not in EDGE_KINDS:
        raise InputError(str(EDGE_KINDS.unknown(name)))
    return EDGE_KINDS[name]


def target_kind(target: Any) -> EdgeKind:
    """The kind of code coverage ``target`` (an adapter) declares.

    Raises:
        InputError: an unknown kind.
    """
    return edge_kind(getattr(target, "code_coverage", "gcov"))


def edge_setup(target: Any, folder: Path) -> EdgeSetup:
    """The workers' set-up that measures ``target``'s own code (the kind it declares),
    their counter files going to ``folder``.

    Raises:
        InputError: an unknown kind, or the target cannot be measured here (no coverage
            build, no modules, coverage.py missing).
    """
    return target_kind(target).setup(target, folder)
