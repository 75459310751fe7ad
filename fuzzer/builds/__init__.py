"""Instrumented builds of a target: coverage (gcov) and sanitizers (ASan + UBSan).

In: a target name and a build kind. Out: a :class:`~fuzzer.builds.record.Build` in the
user's cache that a process activates before importing the target. ``BUILDERS`` maps a target
to the module that builds it (``build(kind, ...)`` for an instrumented build of the installed
version, ``build_checkout(checkout, site, ...)`` for a source checkout, as ``replay --against``
takes one); a new buildable target is one new module and one entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fuzzer.builds.kinds import KINDS, BuildKind
from fuzzer.builds.record import Build, build_folder, load_build
from fuzzer.errors import InputError

#: target name (its distribution's canonical name) -> the module that builds it (see
#: fuzzer.builds.onnxoptimizer).
BUILDERS: dict[str, str] = {
    "onnxoptimizer": "fuzzer.builds.onnxoptimizer",
}


def builder(target: str) -> Callable[..., Any]:
    """The build function of ``target``.

    Raises:
        InputError: the target cannot be built here (the message lists those that can).
    """
    if target not in BUILDERS:
        raise InputError(f"no instrumented build of {target}; buildable: "
                         f"{', '.join(sorted(BUILDERS))}")
    return importlib.import_module(BUILDERS[target]).build


def checkout_builder(project: str) -> Callable[..., Any] | None:
    """The function that builds a source checkout of distribution ``project`` (canonical
    name) offline, as :func:`fuzzer.builds.onnxoptimizer.build_checkout` does; None for a
    project whose own build needs nothing of optfuzz (a pure-Python one, which pip builds)."""
    if project not in BUILDERS:
        return None
    return getattr(importlib.import_module(BUILDERS[project]), "build_checkout", None)


def coverage_build(target: Any) -> Any:
    """The coverage build of ``target`` as installed, or None for a target that reports
    its own edges (``Target.reports_edges``).

    Raises:
        InputError: the target has no coverage build (the message says how to make one).
    """
    return _installed_build(target, "coverage")


def sanitizer_build(target: Any) -> Any:
    """The sanitize build of ``target`` as installed, or None for a target without native
    code of its own (``Target.reports_edges``: it runs as installed under the sanitizer
    runtime, whose interceptors still see the heap errors it makes through libc).

    Raises:
        InputError: the target has no sanitize build (the message says how to make one).
    """
    return _installed_build(target, "sanitize")


def _installed_build(target: Any, kind: str) -> Any:
    if target.reports_edges:
        return None
    if target.name not in BUILDERS:
        what = "code coverage" if kind == "coverage" else "sanitizer build"
        raise InputError(f"no {what} for target {target.name}; instrumented builds "
                         f"exist for {', '.join(sorted(BUILDERS))}")
    return load_build(target.name, kind, target.version())


__all__ = ["BUILDERS", "KINDS", "Build", "BuildKind", "build_folder", "builder", "checkout_builder",
           "coverage_build", "load_build", "sanitizer_build"]
