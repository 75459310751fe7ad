"""A subcommand of ``optfuzz`` as an object: its name, the function Typer calls (whose
annotated parameters are the command's options and arguments, shared ones from the option
groups of :mod:`fuzzer.commands.options`), or the subcommands of a command group.

Every command module exports one ``COMMAND``; :data:`fuzzer.cli.COMMANDS` is the registry of
them, and the app is built from it (:meth:`Command.add_to`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer


@dataclass(frozen=True)
class Command:
    """One subcommand, or a group of them (``optfuzz corpus list``).

    Attributes:
        name: the word that selects it on the command line.
        run: the function Typer calls (its docstring is the command's help); None for a
            group.
        help: a group's help (a command's help is ``run``'s docstring).
        subcommands: a group's commands, in the order its ``--help`` lists them.
    """

    name: str
    run: Callable[..., Any] | None = None
    help: str | None = None
    subcommands: tuple[Command, ...] = ()

    def __post_init__(self) -> None:
        if (self.run is None) == (not self.subcommands):
            raise ValueError(f"command {self.name!r}: give either run or subcommands")

    def add_to(self, app: typer.Typer) -> None:
        """Add this command (a group: a sub-app with its subcommands) to ``app``."""
        if self.run is not None:
            app.command(self.name)(self.run)
            return
        group = typer.Typer(help=self.help, no_args_is_help=True)
        for command in self.subcommands:
            command.add_to(group)
        app.add_typer(group, name=self.name)

    def names(self) -> list[str]:
        """The command lines this command answers to: ``name``, or ``name sub`` for each
        subcommand of a group."""
        return [self.name] if self.run is not None else \
            [f"{self.name} {n}" for c in self.subcommands for n in c.names()]
