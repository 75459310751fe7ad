"""Instrumented builds of a target: coverage (gcov) and sanitizers (ASan + UBSan).

In: a target name and a build kind. Out: a :class:`~fuzzer.builds.record.Build` in the
user's cache that a process activates before importing the target. ``BUILDERS`` maps a target
to the function that builds it; a new buildable target is one new module and one entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fuzzer.builds.kinds import KINDS, BuildKind
from fuzzer.builds.record import Build, build_folder, load_build
from fuzzer.errors import InputError

#: target name -> "module:function" that builds it (see fuzzer.builds.onnxoptimizer.build).
BUILDERS: dict[str, str] = {
    "onnxoptimizer": "fuzzer.builds.onnxoptimizer:build",
}


def builder(target: str) -> Callable[..., Any]:
    """The build function of ``target``.

    Raises:
        InputError: the target cannot be built here (the message lists those that can).
    """
    if target not in BUILDERS:
        raise InputError(f"no instrumented build of {target}; buildable: "
                         f"{', '.join(sorted(BUILDERS))}")
    module, attr = BUILDERS[target].split(":")
    return getattr(importlib.import_module(module), attr)


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


__all__ = ["BUILDERS", "KINDS", "Build", "BuildKind", "build_folder", "builder",
           "coverage_build", "load_build", "sanitizer_build"]
