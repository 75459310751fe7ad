"""Targets (systems under test). ``get_target(name)`` returns an adapter from the registry."""

from fuzzer.targets.base import TARGETS, Target, get_target, target_names

__all__ = ["TARGETS", "Target", "get_target", "target_names"]
