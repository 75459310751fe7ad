"""The ``optfuzz`` command line: a Typer app whose subcommands live in ``fuzzer/commands``.

Each module in :data:`COMMANDS` defines ``register(app)``; heavy imports (onnx, onnxruntime)
happen inside the commands, so ``optfuzz --help`` stays fast. A new subcommand is one new
module and one entry here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import typer

from fuzzer.errors import InputError

#: subcommand modules under fuzzer.commands, in the order --help lists them.
COMMANDS: tuple[str, ...] = (
    "fuzz", "check", "localize", "reduce", "triage", "replay", "report", "coverage", "corpus",
    "targets", "target",
)

app = typer.Typer(
    name="optfuzz",
    help="Differential fuzzer for ONNX graph optimizers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_all() -> None:
    for name in COMMANDS:
        module_name = f"fuzzer.commands.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(app)


_register_all()


def main() -> None:
    """Entry point of the console script: bad input ends in one line on stderr and exit 2."""
    try:
        app()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
