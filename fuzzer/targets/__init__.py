"""Targets (systems under test) and what optfuzz knows about each.

In: a target name and a configuration. Out: the optimizer's output model, its pass names and
anchors, the oracle context of a configuration, and the repro's optimize call.
``get_target(name)`` returns an adapter from the registry; a new target is one new module
and one registry entry.
"""

from fuzzer.targets.base import (
    ANY,
    DEFAULT_TARGET,
    TARGETS,
    DocumentedBehaviour,
    Target,
    cli_target,
    get_target,
    offers_pass,
    require_passes,
    target_class,
    target_names,
)

__all__ = ["ANY", "DEFAULT_TARGET", "TARGETS", "DocumentedBehaviour", "Target", "cli_target",
           "get_target", "offers_pass", "require_passes", "target_class", "target_names"]
