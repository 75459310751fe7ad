"""The Target protocol and the registry of targets.

A target adapts one optimizer to optfuzz: ``optimize(model, config) -> model`` and a
description of its configuration space. Configurations are JSON-able dicts; every target
understands ``{"passes": [...], "fixed_point": bool}`` where passes make sense for it, so that
localization can search over pass lists of any target.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fuzzer.errors import InputError

#: target name -> "module:attribute" of its class; imported lazily (heavy imports).
TARGETS: dict[str, str] = {
    "onnxoptimizer": "fuzzer.targets.onnxoptimizer:OnnxOptimizerTarget",
    "fake": "fuzzer.targets.fake:FakeTarget",
}


class Target(Protocol):
    """A system under test.

    Attributes:
        name: registry name, also the first field of every signature.
    """

    name: str

    def version(self) -> str:
        """Installed version of the optimizer (e.g. ``"0.4.2"``)."""

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """Return the optimized ``onnx.ModelProto``; may raise (an ``optimizer-error``)."""

    def available_passes(self) -> list[str]:
        """Every pass name the target accepts."""

    def default_config(self) -> dict[str, Any]:
        """The configuration a user gets without options (e.g. the default pass list)."""

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        """Draw the next configuration of a campaign; ``passes`` restricts the pass pool."""

    def repro_snippet(self, config: dict[str, Any]) -> str:
        """Python lines that apply the target to a ModelProto ``model`` into ``optimized``,
        using only the target's own package (for repro.py and report.md)."""


_cache: dict[str, Target] = {}


def target_names() -> list[str]:
    """Names of all registered targets."""
    return sorted(TARGETS)


def get_target(name: str) -> Target:
    """Return the (cached) target adapter called ``name``.

    Raises:
        KeyError: for an unknown name; the message lists the known ones.
    """
    if name not in _cache:
        if name not in TARGETS:
            raise KeyError(f"unknown target {name!r}; known: {', '.join(target_names())}")
        module, attr = TARGETS[name].split(":")
        _cache[name] = getattr(importlib.import_module(module), attr)()
    return _cache[name]


def cli_target(name: str) -> Target:
    """:func:`get_target` for command lines.

    Raises:
        InputError: an unknown name (the message lists the known ones).
    """
    try:
        return get_target(name)
    except KeyError as exc:
        raise InputError(exc.args[0]) from None


def offers_pass(target: Target) -> Callable[[str], bool]:
    """Whether ``target`` (as installed) has a pass of a given name: one it lists, or one its
    optional ``accepts_pass`` admits (the fake target's ``nop-*`` fillers)."""
    known = set(target.available_passes())
    accepts = getattr(target, "accepts_pass", None)
    return lambda name: name in known or bool(accepts and accepts(name))


def require_passes(target: Target, passes: Sequence[str]) -> None:
    """Refuse pass names ``target`` does not have.

    Raises:
        InputError: naming the unknown passes.
    """
    offered = offers_pass(target)
    bad = [p for p in passes if not offered(p)]
    if bad:
        raise InputError(f"unknown pass(es) {bad} for target {target.name}")
