"""Instrumented builds of a target: coverage (gcov) and sanitizers (ASan + UBSan).

In: a target name and a build kind. Out: a :class:`~fuzzer.builds.record.Build` in the
user's cache that a process activates before importing the target. A target names the module
that builds it (:attr:`fuzzer.targets.Target.build_module`: ``build(kind, ...)`` for an
instrumented build of the installed version, ``build_checkout(checkout, site, ...)`` for a
source checkout, as ``replay --against`` takes one); a new buildable target is one new module
and that attribute.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fuzzer.builds.kinds import KINDS, BuildKind
from fuzzer.builds.record import Build, build_folder, load_build
from fuzzer.errors import InputError


def _build_module(target: str) -> str | None:
    """The build module target ``target`` (a registered name) declares; None for an unknown
    target, one that cannot be imported here, or one optfuzz builds nothing of."""
    from fuzzer.targets.base import target_class

    try:
        return target_class(target).build_module
    except (KeyError, ImportError):
        return None


def buildable() -> dict[str, str]:
    """Every registered target that declares a build module: name -> module."""
    from fuzzer.targets.base import target_names

    return {name: module for name in target_names()
            if (module := _build_module(name)) is not None}


def builder(target: str) -> Callable[..., Any]:
    """The build function of ``target``.

    Raises:
        InputError: the target cannot be built here (the message lists those that can).
    """
    module = _build_module(target)
    if module is None:
        raise InputError(f"no instrumented build of {target}; buildable: "
                         f"{', '.join(sorted(buildable()))}")
    return importlib.import_module(module).build


def checkout_builder(project: str) -> Callable[..., Any] | None:
    """The function that builds a source checkout of distribution ``project`` (canonical
    name) offline, as :func:`fuzzer.builds.onnxoptimizer.build_checkout` does, from the
    target whose :attr:`~fuzzer.targets.Target.package` that distribution is; None for a
    project whose own build needs nothing of optfuzz (a pure-Python one, which pip builds)."""
    from packaging.utils import canonicalize_name

    from fuzzer.targets.base import target_class

    for name, module in buildable().items():
        package = target_class(name).package
        if package is not None and canonicalize_name(package) == canonicalize_name(project):
            return getattr(importlib.import_module(module), "build_checkout", None)
    return None


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
    if target.build_module is None:
        what = "code coverage" if kind == "coverage" else "sanitizer build"
        raise InputError(f"no {what} for target {target.name}; instrumented builds "
                         f"exist for {', '.join(sorted(buildable()))}")
    return load_build(target.name, kind, target.version())


__all__ = ["KINDS", "Build", "BuildKind", "build_folder", "buildable", "builder",
           "checkout_builder", "coverage_build", "load_build", "sanitizer_build"]
