"""What a worker needs to collect per-case edges: the coverage build it imports (or none,
for a target that reports its own edges) and the folder its counter files go to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from fuzzer.builds.record import Build


class EdgeCollector(Protocol):
    """Per-case edge hit counts of the code a worker runs."""

    def start(self) -> None:
        """Forget counts made outside a case."""

    def collect(self) -> dict[int, int]:
        """``{edge id: hits}`` since :meth:`start` or the last call."""


@dataclass(frozen=True)
class EdgeSetup:
    """How the workers of a sandbox collect edges.

    Attributes:
        folder: where each worker's ``.gcda`` tree goes (``<folder>/w<pid>/...``).
        build: the coverage build the workers import; None for a target that reports its
            own edges (:mod:`fuzzer.edges.python_edges`).
    """

    folder: str
    build: Build | None = None

    def activate(self) -> None:
        """Make this process import the build (before the target is imported).

        Raises:
            fuzzer.errors.InputError: the target was imported from elsewhere already.
        """
        if self.build is not None:
            self.build.activate()

    def collector(self) -> EdgeCollector:
        """This process's collector (call once per worker, after :meth:`activate`).

        Raises:
            FileNotFoundError: the build has no extension module.
        """
        if self.build is None:
            from fuzzer.edges.python_edges import PythonEdgeCollector

            return PythonEdgeCollector()
        from fuzzer.edges.collector import GcovCollector

        package = Path(self.build.site) / self.build.target.replace("-", "_")
        modules = sorted(package.glob("*.so"))
        if not modules:
            raise FileNotFoundError(f"no extension module in {package}")
        return GcovCollector(str(modules[0]), Path(self.folder) / f"w{os.getpid()}")
