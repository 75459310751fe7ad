"""How every command presents itself in ``--help``, the conventions of command-line tools:
metavars in capitals (``MODEL``, ``FLOAT``; none beside a flag, which takes no value),
the values an option with a fixed set accepts (:data:`fuzzer.commands.options.CHOICES`,
listed when help is shown, so that listing the installed targets costs nothing otherwise),
and docstrings as prose (the hard line breaks of a docstring's paragraph are not the
reader's line breaks).

:func:`conventional` gives every command of an app these classes; a command module needs
nothing of its own.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

#: an option's metavar, where it names none, by the type of its value.
TYPE_METAVARS: dict[Any, str] = {int: "INTEGER", float: "FLOAT", str: "TEXT", Path: "PATH"}


def unwrap(text: str | None) -> str | None:
    """``text`` (a docstring) with each paragraph on one line: the lines of a paragraph
    joined by spaces, paragraphs still apart (a blank line), typer's ``\\b`` paragraphs (kept
    as written) left alone."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(line.strip() for line in
                                                             p.splitlines())
                       for p in paragraphs)


def value_metavar(param: Any) -> str:
    """The metavar of an option that takes a value and names no metavar: its type in
    capitals (:data:`TYPE_METAVARS`; ``VALUE`` for another type), the element's type for a
    repeatable option."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:  # a click parameter type, as older typer releases make
        return str(param.type.name).upper()
    annotation = descriptor.annotation
    if typing.get_origin(annotation) is list:
        annotation = typing.get_args(annotation)[0]
    return TYPE_METAVARS.get(annotation, "VALUE")


class Argument(TyperArgument):
    """typer's argument shown as command-line tools show one: its metavar alone, in the
    usage line bare where it is required and in brackets where it is not (typer writes
    ``{model}``), with no type beside it in the help."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = str(self.metavar or self.name).upper() + ("..." if self.nargs != 1 else "")
        return [name if self.required else f"[{name}]"]


def conventional_metavar(param: Any) -> None:
    """Give ``param`` (a parameter of a command) its conventional look where it names no
    metavar: an argument its name in capitals (and the class :class:`Argument`), a flag
    no metavar, an option its type (:func:`value_metavar`)."""
    if type(param) is TyperArgument:
        param.__class__ = Argument  # the same object, shown by the methods above
    if param.metavar is not None:
        return
    if isinstance(param, TyperArgument):
        param.metavar = param.name.upper()
    elif getattr(param, "is_flag", False) or getattr(param, "count", False):
        param.metavar = ""
    else:
        param.metavar = value_metavar(param)


class _Conventions:
    """What :class:`Command` and :class:`Group` add to typer's classes."""

    params: list[Any]
    _choices_listed = False

    def _conventions(self) -> None:
        self.help = unwrap(self.help)  # type: ignore[attr-defined]
        for param in self.params:
            conventional_metavar(param)

    def get_help_option(self, ctx: Any) -> Any:
        """click's ``--help``/``-h`` option, without a metavar (it is a flag)."""
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """typer's help, after appending the accepted values to the help of each option
        with a fixed set (:data:`fuzzer.commands.options.CHOICES`); options typer adds
        after construction (``--install-completion``) get their metavars here."""
        self._conventions()
        if not self._choices_listed:
            from fuzzer.commands.options import CHOICES

            for param in self.params:
                names = [CHOICES[o] for o in getattr(param, "opts", ()) if o in CHOICES]
                if names:
                    listed = ", ".join(names[0]())
                    param.help = f"{(param.help or '').rstrip()} One of: {listed}.".lstrip()
            self._choices_listed = True
        super().format_help(ctx, formatter)  # type: ignore[misc]


class Command(_Conventions, TyperCommand):
    """typer's command class with the conventions of this module."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._conventions()


class Group(_Conventions, TyperGroup):
    """typer's group class with the conventions of this module."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._conventions()


def _ours(cls: Any, default: type, ours: type) -> Any:
    """``ours`` where ``cls`` is typer's ``default`` (or unset), else ``cls``."""
    chosen = getattr(cls, "value", cls)  # typer's placeholder of an unset default
    return ours if chosen is None or chosen is default else cls


def conventional(app: typer.Typer) -> None:
    """Make every command and sub-app of ``app`` (already registered), and ``app`` itself,
    use :class:`Command` and :class:`Group`, where none chose another class."""
    app.info.cls = _ours(app.info.cls, TyperGroup, Group)
    for command in app.registered_commands:
        command.cls = _ours(command.cls, TyperCommand, Command)
    for group in app.registered_groups:
        group.cls = _ours(group.cls, TyperGroup, Group)
        if group.typer_instance is not None:
            conventional(group.typer_instance)
