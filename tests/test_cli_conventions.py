"""The command line follows the conventions of command-line tools: ``--version``, ``-h``
beside ``--help`` everywhere, capital metavars, the choices of an option with a fixed set,
no type beside a flag, help text as prose, shell completion."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fuzzer import __version__
from fuzzer.commands.conventions import unwrap
from fuzzer.targets.base import target_names


def optfuzz(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200", TERM="dumb", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "fuzzer", *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_version_prints_optfuzz_version_and_exits_0():
    proc = optfuzz("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"optfuzz {__version__}"


@pytest.mark.parametrize("args", [["-h"], ["check", "-h"], ["triage", "-h"],
                                  ["corpus", "list", "-h"]])
def test_h_is_help_on_the_app_and_on_commands(args):
    proc = optfuzz(*args)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: optfuzz" in proc.stdout and "Show this message and exit." in proc.stdout


def test_the_app_offers_shell_completion():
    assert "--install-completion" in optfuzz("--help").stdout


def test_fuzz_help_lists_the_targets_and_shows_capital_metavars():
    proc = optfuzz("fuzz", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # the help column wraps lines
    for name in target_names():
        assert name in text, name
    for metavar in ("TARGET", "FOLDER", "SECONDS", "NAME:DIMS", "LIST"):
        assert f" {metavar} " in text, metavar
    assert "<bool>" not in text and "<str>" not in text and "<path>" not in text


def test_an_argument_is_its_name_in_capitals():
    usage = optfuzz("check", "--help").stdout
    assert "Usage: optfuzz check [OPTIONS] MODEL" in usage and "{model}" not in usage
    assert "Usage: optfuzz triage [OPTIONS] [FOLDER]" in optfuzz("triage", "--help").stdout


def test_symptom_options_list_the_registered_symptoms():
    from oracles import symptom_names

    text = " ".join(optfuzz("triage", "--help").stdout.split())
    assert all(name in text for name in symptom_names())


def test_docstring_paragraphs_become_one_line_each():
    text = """First line of a sentence
        that goes on.

        Second paragraph,
        also one line."""
    assert unwrap(text) == ("First line of a sentence that goes on.\n\n"
                            "Second paragraph, also one line.")


def test_the_commands_come_from_the_registry():
    from fuzzer.cli import COMMANDS, MODULES, app
    from fuzzer.commands.command import Command
    from fuzzer.registry import Registry

    assert isinstance(COMMANDS, Registry)
    assert all(isinstance(c, Command) for c in COMMANDS.values())
    assert COMMANDS.names() == list(MODULES)
    # typer lists the commands, then the groups, each in the registry's order
    assert [c.name for c in app.registered_commands] == \
        [c.name for c in COMMANDS.values() if c.run]
    assert [g.name for g in app.registered_groups] == \
        [c.name for c in COMMANDS.values() if not c.run]
    assert COMMANDS["corpus"].names() == ["corpus list", "corpus fetch", "corpus verify",
                                          "corpus report"]


def test_a_command_object_adds_itself_and_a_group_its_subcommands():
    import typer
    from typer.testing import CliRunner

    from fuzzer.commands.command import Command

    def hello(name: str = typer.Option("world", "--name")) -> None:
        """Say hello."""
        typer.echo(f"hello {name}")

    def bye() -> None:
        """Say bye."""
        typer.echo("bye")

    app = typer.Typer()
    Command("hello", hello).add_to(app)
    Command("polite", help="Polite words.",
            subcommands=(Command("hello", hello), Command("bye", bye))).add_to(app)
    runner = CliRunner()
    assert runner.invoke(app, ["hello", "--name", "you"]).output == "hello you\n"
    assert runner.invoke(app, ["polite", "bye"]).output == "bye\n"
    assert Command("polite", help="", subcommands=(Command("bye", bye),)).names() == \
        ["polite bye"]
    with pytest.raises(ValueError, match="either run or subcommands"):
        Command("empty")
