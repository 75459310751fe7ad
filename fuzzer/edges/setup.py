"""What a worker needs to collect per-case edges: how the target's code is measured (its
coverage kind, :mod:`fuzzer.edges.kinds`), the coverage build it imports or the Python
sources it traces, and the folder its counter files go to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fuzzer.builds.record import Build
from fuzzer.edges.python_coverage import SourceFile


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
        folder: where each worker's counter files go (``<folder>/w<pid>...``).
        kind: how the target's code is measured, a key of
            :data:`fuzzer.edges.kinds.EDGE_KINDS` (``gcov``, ``hits``, ``python``).
        build: the coverage build the workers import (``gcov``); None otherwise.
        target: the target's name (``python``: the import-time coverage is its adapter's).
        sources: the source files measured (``python``: :func:`fuzzer.edges.python_coverage.
            resolve_sources`).
    """

    folder: str
    kind: str = "gcov"
    build: Build | None = None
    target: str = ""
    sources: tuple[SourceFile, ...] = ()

    def activate(self) -> None:
        """Make this process import the build (before the target is imported).

        Raises:
            fuzzer.errors.InputError: the target was imported from elsewhere already.
        """
        if self.build is not None:
            self.build.activate()
