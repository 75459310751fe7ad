"""Targets (systems under test). ``get_target(name)`` returns an adapter from the registry."""

from fuzzer.targets.base import (
    TARGETS,
    Target,
    cli_target,
    get_target,
    offers_pass,
    require_passes,
    target_names,
)

__all__ = ["TARGETS", "Target", "cli_target", "get_target", "offers_pass", "require_passes",
           "target_names"]
