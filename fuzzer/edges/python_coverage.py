"""Per-case branch edges of a target written in Python, measured by coverage.py.

coverage.py (Batchelder et al., https://coverage.readthedocs.io) records in branch mode the
*arcs* a program took: pairs ``(from line, to line)`` of the source files it measures, where a
negative number stands for entering or leaving the code object that starts at that line
(coverage.py's "How it works" and ``CoverageData.arcs``). Here an *edge* is one arc of one of
the target's own rewrite sources, named ``(file name below its import root, from, to)`` so
that its id stays the same across runs, workers and installs; coverage.py records whether an
arc ran, not how often, so every edge feature has AFL's bucket of one hit.

A worker's :class:`CoverageCollector` starts coverage.py's tracer before each case and stops
it after; the sources it measures are the target's (:attr:`fuzzer.targets.base.Target.
coverage_modules`, resolved by :func:`resolve_sources`). Each worker also appends the arcs
it had not seen before to ``<folder>/w<pid>.arcs.jsonl``, from which :func:`file_coverage`
makes line and branch coverage per source file with coverage.py's own analysis (statements,
possible arcs) after the run. What the workers ran before their first case, untraced (the
module bodies that importing the target runs: imports, ``def`` and ``class`` statements), is
measured once in a fresh interpreter (:func:`import_arcs`) and counts in that table, not in
any case's edges.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import tempfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.edges.summary import FileCoverage
from fuzzer.errors import InputError

#: the file each worker appends its newly seen arcs to, below the run's folder.
ARCS_SUFFIX = ".arcs.jsonl"
#: file names of test modules a package ships beside its code: no rewrite source.
_TEST_FILES = ("*_test.py", "test_*.py", "conftest.py")
_TEST_DIRS = ("tests", "test", "testing")
_PACK_MASK = 0xFFFFFFF  # coverage.py's CTracer packs an arc as two 28-bit line numbers
_NEGATIVE_FROM, _NEGATIVE_TO = 1 << 56, 1 << 57


@dataclass(frozen=True)
class SourceFile:
    """One measured source file.

    Attributes:
        path: its absolute path, as coverage.py names it (real path).
        name: its path below the import root (``onnxslim/core/pattern/fusion/gelu.py``):
            the same for every install of the same release.
    """

    path: str
    name: str


def _module_files(name: str) -> list[Path]:
    """The ``.py`` files of dotted ``name``: a package's files (recursively), a module's own
    file; an ``fnmatch`` pattern in the last part names every module and package of the
    parent package it matches (``onnxruntime.transformers.fusion_*``)."""
    parent, _, last = name.rpartition(".")
    if any(c in last for c in "*?["):
        spec = _find_spec(parent) if parent else None
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"no package {parent!r} for coverage pattern {name!r}")
        out: list[Path] = []
        for folder in map(Path, spec.submodule_search_locations):
            for entry in sorted(folder.iterdir()):
                stem = entry.stem if entry.suffix == ".py" else entry.name
                if not fnmatch.fnmatchcase(stem, last):
                    continue
                if entry.suffix == ".py":
                    out.append(entry)
                elif (entry / "__init__.py").is_file():
                    out.extend(_package_files(entry))
        return out
    spec = _find_spec(name)
    if spec is None and parent and last == "__init__":
        spec = _find_spec(parent)
        if spec is not None and spec.origin:
            return [Path(spec.origin)]
    if spec is None or spec.origin is None:
        raise InputError(f"no module {name!r} to measure the coverage of")
    if spec.submodule_search_locations:
        return [f for folder in spec.submodule_search_locations
                for f in _package_files(Path(folder))]
    return [Path(spec.origin)]


def _find_spec(name: str) -> Any:
    """``importlib.util.find_spec(name)``, None where it or a parent package is missing."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _package_files(folder: Path) -> list[Path]:
    out = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder)
        if any(part in _TEST_DIRS for part in rel.parts[:-1]) or \
                any(fnmatch.fnmatchcase(path.name, p) for p in _TEST_FILES):
            continue
        out.append(path)
    return out


def resolve_sources(modules: Iterable[str]) -> tuple[SourceFile, ...]:
    """The source files of ``modules`` (dotted package or module names, an ``fnmatch``
    pattern allowed in the last part; ``pkg.__init__`` is the package's own file without
    its subpackages), test modules left out, each once, sorted by name. Imports the parent
    packages of what it resolves.

    Raises:
        InputError: a module or package is not installed, or nothing is left to measure.
    """
    found: dict[str, SourceFile] = {}
    for module in modules:
        root = _import_root(module.split(".")[0])
        for path in _module_files(module):
            real = os.path.realpath(path)
            name = os.path.relpath(real, root) if root is not None else Path(real).name
            found.setdefault(real, SourceFile(real, Path(name).as_posix()))
    if not found:
        raise InputError(f"no source files in {', '.join(modules) or 'no modules'}")
    return tuple(sorted(found.values(), key=lambda f: f.name))


def _import_root(top: str) -> str | None:
    """The folder that holds top-level package ``top`` (None for a single-file module)."""
    spec = _find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.dirname(os.path.realpath(list(spec.submodule_search_locations)[0]))


def edge_id(name: str, arc: tuple[int, int]) -> int:
    """A stable 32-bit id of ``arc`` (coverage.py's ``(from, to)``) in source file
    ``name`` (:attr:`SourceFile.name`)."""
    return zlib.crc32(f"{name}:{arc[0]}:{arc[1]}".encode())


def unpack_arc(packed: int) -> tuple[int, int]:
    """The ``(from, to)`` arc that coverage.py's C tracer packed into one int (two 28-bit
    line numbers and two sign bits; coverage/ctracer/tracer.c, ``CTracer_record_pair``)."""
    first, second = packed & _PACK_MASK, (packed >> 28) & _PACK_MASK
    return (-first if packed & _NEGATIVE_FROM else first,
            -second if packed & _NEGATIVE_TO else second)


class CoverageCollector:
    """Reads one worker's per-case arcs of ``sources`` from coverage.py's tracer.

    :meth:`start` starts the tracer and :meth:`collect` stops it, so that only a case's own
    code runs traced. coverage.py's public way to read what it traced, ``get_data()`` and
    ``erase()`` after every case, writes the arcs into its SQLite store and builds a new
    collector per case: on 200 onnxslim cases (``benchmarks/python_coverage.py``) a case
    took 5.4 times as long as untraced, against 1.6 times when reading the tracer's own arc
    sets, which is therefore done where the installed coverage.py keeps them as 7.x does
    (``Coverage._collector.data``, each set emptied in place); ``public=True``, or another
    layout, takes the public way. On Python 3.11 the tracer (coverage.py's C tracer, through
    ``sys.settrace``) sees every line of Python run while it is on, the target's or not, so
    the cost follows the share of the case spent in Python: 1.5 times on
    onnxruntime-transformers' cases, 3.3 on onnxscript's (onnx_ir is Python too).

    Args:
        sources: the files to measure (:func:`resolve_sources`).
        folder: where this worker's ``w<pid>.arcs.jsonl`` goes (None: nowhere).
        public: read by ``get_data()`` / ``erase()`` only.

    Raises:
        InputError: coverage.py is not installed.
    """

    def __init__(self, sources: Sequence[SourceFile], folder: Path | None = None,
                 public: bool = False) -> None:
        try:
            import coverage
        except ImportError:
            raise InputError("Python code coverage needs coverage.py: pip install "
                             "'optfuzz[builds]'") from None
        self._names = {s.path: s.name for s in sources}
        self._cov = coverage.Coverage(branch=True, data_file=None, config_file=False,
                                      include=[_escape(s.path) for s in sources])
        self._public = public
        self._running = False
        self._ids: dict[str, dict[Any, int]] = {}
        self._seen: dict[str, set[tuple[int, int]]] = {}
        self._log = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            self._log = folder / f"w{os.getpid()}{ARCS_SUFFIX}"

    def start(self) -> None:
        """Forget arcs traced outside a case and start tracing."""
        if self._running:
            self.collect()
        self._cov.start()
        self._running = True

    def collect(self) -> dict[int, int]:
        """Stop tracing; ``{edge id: 1}`` of the arcs taken since :meth:`start` (empty
        when tracing was not started)."""
        if not self._running:
            return {}
        self._cov.stop()
        self._running = False
        taken = self._take()
        out: dict[int, int] = {}
        fresh: dict[str, list[tuple[int, int]]] = {}
        for path, arcs in taken.items():
            name = self._names.get(path) or self._names.get(os.path.realpath(path), path)
            ids = self._ids.setdefault(name, {})
            seen = self._seen.setdefault(name, set())
            for key, arc in arcs:
                eid = ids.get(key)
                if eid is None:
                    eid = ids[key] = edge_id(name, arc)
                out[eid] = 1
                if arc not in seen:
                    seen.add(arc)
                    fresh.setdefault(path, []).append(arc)
        if fresh and self._log is not None:
            with self._log.open("a") as log:
                for path, arcs in fresh.items():
                    log.write(json.dumps({"file": path, "arcs": arcs}) + "\n")
        return out

    def _take(self) -> dict[str, list[tuple[Any, tuple[int, int]]]]:
        """``{file: [(key, arc)]}`` traced since the last call, and the tracer's store
        emptied; ``key`` is what the tracer stored (a packed int or the arc)."""
        collector = getattr(self._cov, "_collector", None)
        data = getattr(collector, "data", None)
        packed = getattr(getattr(collector, "core", None), "packed_arcs", None)
        if self._public or not isinstance(data, dict) or packed is None:
            return self._take_public()
        out: dict[str, list[tuple[Any, tuple[int, int]]]] = {}
        for path, keys in data.items():
            if not keys:
                continue
            out[path] = [(k, unpack_arc(k)) for k in keys] if packed else \
                [(k, k) for k in keys]
            keys.clear()
        return out

    def _take_public(self) -> dict[str, list[tuple[Any, tuple[int, int]]]]:
        data = self._cov.get_data()
        out = {path: [(arc, arc) for arc in data.arcs(path) or ()]
               for path in data.measured_files()}
        self._cov.erase()
        return out


#: seconds the start-up measure (:func:`import_arcs`) may take.
IMPORT_TIMEOUT = 300.0


def import_arcs(target: str, sources: Sequence[SourceFile], folder: Path) -> None:
    """Log to ``folder`` the arcs of ``sources`` that making the adapter of ``target`` runs
    in a fresh interpreter: the module bodies (imports, ``def`` and ``class`` statements)
    that every worker ran before its first case, untraced. Runs in a spawned process.

    Raises:
        InputError: the process failed or outlived :data:`IMPORT_TIMEOUT`.
    """
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(
        target=_import_and_log, args=(target, tuple(sources), str(folder)))
    process.start()
    process.join(IMPORT_TIMEOUT)
    if process.is_alive():
        process.kill()
        process.join()
        raise InputError(f"measuring what importing {target} runs took over "
                         f"{IMPORT_TIMEOUT:.0f} s")
    if process.exitcode != 0:
        raise InputError(f"measuring what importing {target} runs failed "
                         f"(exit code {process.exitcode})")


def _import_and_log(target: str, sources: tuple[SourceFile, ...], folder: str) -> None:
    collector = CoverageCollector(sources, Path(folder))
    collector.start()
    from fuzzer.targets import get_target

    get_target(target)
    collector.collect()


def _escape(path: str) -> str:
    """``path`` as a coverage.py ``include`` pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[]" else c for c in path)


def read_arcs(runs: Sequence[Path]) -> dict[str, set[tuple[int, int]]]:
    """The union of the arcs the workers of ``runs`` logged (``*.arcs.jsonl`` below each),
    ``{file path: {(from, to)}}``; a line cut short by a killed worker is skipped."""
    arcs: dict[str, set[tuple[int, int]]] = {}
    for run in runs:
        if not run.is_dir():
            continue
        for log in sorted(run.rglob(f"*{ARCS_SUFFIX}")):
            for line in log.read_text().splitlines():
                try:
                    entry = json.loads(line)
                    arcs.setdefault(entry["file"], set()).update(
                        (int(a), int(b)) for a, b in entry["arcs"])
                except (ValueError, KeyError, TypeError):
                    continue
    return arcs


def file_coverage(sources: Sequence[SourceFile], runs: Sequence[Path]) -> list[FileCoverage]:
    """Line and branch coverage of each of ``sources`` over the arcs logged in ``runs``
    (merged), sorted by name, with a ``"total"`` row last: coverage.py's own numbers
    (statements run of all statements; branch outcomes taken of all possible ones, from its
    static analysis of each file), with :attr:`FileCoverage.path` the file's
    :attr:`SourceFile.name`. Files no case reached count with nothing covered.

    Raises:
        InputError: coverage.py is not installed.
    """
    try:
        import coverage
        from coverage.data import CoverageData
    except ImportError:
        raise InputError("Python code coverage needs coverage.py: pip install "
                         "'optfuzz[builds]'") from None
    taken = read_arcs(runs)
    names = {s.path: s.name for s in sources}
    with tempfile.TemporaryDirectory(prefix="optfuzz-pycov-") as tmp:
        data_file = str(Path(tmp) / ".coverage")
        data = CoverageData(basename=data_file)
        data.add_arcs({path: arcs for path, arcs in taken.items() if path in names})
        data.write()
        cov = coverage.Coverage(data_file=data_file, branch=True, config_file=False)
        cov.load()
        report = Path(tmp) / "coverage.json"
        cov.json_report(morfs=[s.path for s in sources], outfile=str(report),
                        ignore_errors=True)
        files = json.loads(report.read_text()).get("files", {})
    rows = []
    for path, entry in files.items():
        summary = entry["summary"]
        name = names.get(path) or names.get(os.path.realpath(path), path)
        rows.append(FileCoverage(name, (summary["covered_lines"], summary["num_statements"]),
                                 (summary.get("covered_branches", 0),
                                  summary.get("num_branches", 0))))
    rows.sort(key=lambda r: r.path)
    rows.append(FileCoverage("total", (sum(r.lines[0] for r in rows),
                                       sum(r.lines[1] for r in rows)),
                             (sum(r.branches[0] for r in rows),
                              sum(r.branches[1] for r in rows))))
    return rows
