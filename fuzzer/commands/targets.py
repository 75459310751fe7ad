"""``optfuzz targets``: the installed targets, built-in and plugins (entry-point group
``optfuzz.targets``), with their versions and configuration spaces; a built-in target whose
package is missing shows the command that installs it, a plugin that fails to import one
warning line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from fuzzer.commands.command import Command


@dataclass(frozen=True)
class TargetRow:
    """One line of the listing.

    Attributes:
        name: registry name.
        origin: ``built-in``, or ``plugin`` and the distribution that registers it.
        version: the optimizer's version ("" where it cannot be imported).
        space: what a configuration chooses (``Target.configuration_space``), or why the
            target cannot be used here (the install command of a missing package).
        usable: whether the target can run here.
    """

    name: str
    origin: str
    version: str
    space: str
    usable: bool


def _origin(point: Any) -> str:
    """``plugin (<distribution> <version>)`` of a plugin target's entry point."""
    dist = getattr(point, "dist", None)
    return f"plugin ({dist.name} {dist.version})" if dist is not None else "plugin"


def target_rows() -> list[TargetRow]:
    """One :class:`TargetRow` per registered target, in name order. A plugin that cannot be
    imported gives one warning line on stderr (never a traceback)."""
    from fuzzer.registry import warn_line
    from fuzzer.targets.base import TARGETS, get_target, target_names

    rows = []
    for name in target_names():
        origin = "built-in" if TARGETS.builtin(name) else _origin(TARGETS.plugin(name))
        try:
            target = get_target(name)
            rows.append(TargetRow(name, origin, target.version(),
                                  target.configuration_space(), True))
        except ImportError as exc:
            if not TARGETS.builtin(name):
                warn_line(str(exc))
            rows.append(TargetRow(name, origin, "", str(exc), False))
    return rows


def targets() -> None:
    """List the installed targets: version and configuration space of each (and, for a
    missing package, the command that installs it)."""
    for row in target_rows():
        typer.echo(f"{row.name}  {row.version or '-'}  ({row.origin})")
        typer.echo(f"    {row.space if row.usable else 'not usable here: ' + row.space}")


COMMAND = Command("targets", targets)
