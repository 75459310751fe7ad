"""Option groups shared by every command, after Polygraphy's argument groups: a flag that
several commands accept is declared once here, so it has one name, one default and one
meaning everywhere, and ``--help`` shows it in its group's panel.

Groups: campaign limits (``--hours``, ``--minutes``, ``--seconds``, ``--max-cases``), target
(``--target``, ``--passes``, ``--fixed-point``), inputs (``--input-shapes``, ``--seed``),
execution (``--timeout``, ``--memory-limit-gib``, ``--jobs``), reducer
(``--reduce-seconds``), selection of bundles (``--symptom``, ``--pass``). An option whose
values are a fixed set names them in :data:`CHOICES` (``--help`` lists them, the shell
completes them). The functions turn their raw values into what the rest of optfuzz takes,
raising :class:`fuzzer.errors.InputError` (one line, exit 2) for bad values.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from fuzzer.errors import InputError
from fuzzer.targets.base import DEFAULT_TARGET

TARGET, INPUTS, EXECUTION, REDUCER, SELECTION, BUILDS = (
    "Target", "Inputs", "Execution", "Reducer", "Bundle selection", "Other builds")


def target_choices() -> list[str]:
    """The registered targets, plugins included (the values of ``--target``)."""
    from fuzzer.targets.base import target_names

    return target_names()


def symptom_choices() -> list[str]:
    """The symptoms the oracles register, most severe first (the values of ``--symptom``)."""
    from oracles import symptom_names

    return list(symptom_names())


def generator_choices() -> list[str]:
    """The graph generators (the values of ``--generator``)."""
    from generators import GENERATORS

    return list(GENERATORS)


#: option -> its accepted values, asked only when help is shown or a shell completes it:
#: listing them imports the targets' registry or the oracles.
CHOICES: dict[str, Callable[[], list[str]]] = {
    "--target": target_choices, "--symptom": symptom_choices, "--generator": generator_choices,
}


def _completion(option: str) -> Callable[[str], list[str]]:
    """Shell completion of ``option``'s values (:data:`CHOICES`)."""
    def complete(incomplete: str) -> list[str]:
        return [name for name in CHOICES[option]() if name.startswith(incomplete)]
    return complete


TargetName = Annotated[str | None, typer.Option(
    "--target", metavar="TARGET", autocompletion=_completion("--target"),
    help=f"System under test (default: {DEFAULT_TARGET}, or the bundle's).",
    rich_help_panel=TARGET)]
Passes = Annotated[str | None, typer.Option(
    "--passes", metavar="LIST", help="Comma list of passes (default: the target's default "
    "list, or the bundle's configuration).", rich_help_panel=TARGET)]
FixedPoint = Annotated[bool | None, typer.Option(
    "--fixed-point/--no-fixed-point", help="Run the passes to a fixed point (default: off, "
    "or as the bundle recorded).", rich_help_panel=TARGET)]
InputShapes = Annotated[list[str] | None, typer.Option(
    "--input-shapes", metavar="NAME:DIMS", help="Sizes of dynamic dims, e.g. "
    "input:1,3,224,224 (repeatable).", rich_help_panel=INPUTS)]
Seed = Annotated[int, typer.Option(
    "--seed", metavar="N", help="Seed of everything random: generated cases and synthesized "
    "inputs.", rich_help_panel=INPUTS)]
Timeout = Annotated[float, typer.Option(
    "--timeout", min=0.1, metavar="SECONDS", help="Per-case timeout in seconds; past it a "
    "case is a hang.", rich_help_panel=EXECUTION)]
MemoryLimit = Annotated[float, typer.Option(
    "--memory-limit-gib", min=0.0, metavar="GIB", help="Address-space limit of each worker "
    "process in GiB (0: none).", rich_help_panel=EXECUTION)]
Jobs = Annotated[int, typer.Option(
    "--jobs", "-j", min=1, metavar="N", help="Worker processes.", rich_help_panel=EXECUTION)]
ReduceSeconds = Annotated[float, typer.Option(
    "--reduce-seconds", "--time-limit", min=0.0, metavar="SECONDS", help="Time bound of a "
    "reduction in seconds (0: no reduction).", rich_help_panel=REDUCER)]
PendingReduceSeconds = Annotated[float | None, typer.Option(
    "--reduce-seconds", "--time-limit", min=0.0, metavar="SECONDS", help="Time bound of a "
    "reduction in seconds (0: no reduction) [default: the campaign's own, else 120].",
    rich_help_panel=REDUCER)]
Symptom = Annotated[str | None, typer.Option(
    "--symptom", metavar="SYMPTOM", autocompletion=_completion("--symptom"),
    help="Only bundles with this symptom.", rich_help_panel=SELECTION)]
PassName = Annotated[str | None, typer.Option(
    "--pass", metavar="PASS", help="Only bundles involving this pass.",
    rich_help_panel=SELECTION)]

Hours = Annotated[float | None, typer.Option(metavar="HOURS",
                                             help="Run for this many hours.")]
Minutes = Annotated[float | None, typer.Option(metavar="MINUTES",
                                               help="Run for this many minutes.")]
Seconds = Annotated[float | None, typer.Option(metavar="SECONDS",
                                               help="Run for this many seconds.")]
MaxCases = Annotated[int | None, typer.Option("--max-cases", metavar="N",
                                              help="Stop after N cases.")]

EnvCache = Annotated[Path | None, typer.Option(
    "--env-cache", help="Folder of the environments other builds of a target are installed "
    "into (default: the optfuzz cache's envs/).", rich_help_panel=BUILDS)]
FindLinks = Annotated[Path | None, typer.Option(
    "--find-links", help="Install (and list releases) from this folder of wheels and sdists "
    "instead of the package index.", rich_help_panel=BUILDS)]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY_GIB = 4.0


def parse_list(text: str | None) -> list[str] | None:
    """``"a,b, c"`` -> ``["a", "b", "c"]``; None or empty -> None."""
    items = [t.strip() for t in (text or "").split(",") if t.strip()]
    return items or None


def target_config(target: str | None, passes: str | None, fixed_point: bool | None,
                  base: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """The target adapter and the configuration the target options describe: ``base`` (the
    target's default configuration when None) with ``--passes`` and ``--fixed-point``
    applied where given.

    Raises:
        InputError: an unknown target or pass.
    """
    from fuzzer.targets import cli_target, require_passes

    adapter = cli_target(target)
    config = dict(base if base is not None else adapter.default_config())
    pass_list = parse_list(passes)
    if pass_list:
        require_passes(adapter, pass_list)
        config = adapter.with_passes(config, pass_list)
    if fixed_point is not None:
        config["fixed_point"] = fixed_point
    return adapter, config


def input_shapes(values: list[str] | None) -> dict[str, list[int]] | None:
    """``--input-shapes`` values as ``{input name: dims}`` (None when not given).

    Raises:
        InputError: a value that is not ``name:d1,d2,...`` with positive dims.
    """
    from generators.inputs import InputSpecError, parse_input_shapes

    try:
        return parse_input_shapes(values) or None
    except InputSpecError as exc:
        raise InputError(str(exc)) from None


def memory_bytes(gib: float) -> int | None:
    """``--memory-limit-gib`` in bytes (None for 0: no limit)."""
    return int(gib * (1 << 30)) or None


def sandbox(timeout: float, memory_gib: float, jobs: int = 1) -> Any:
    """A :class:`fuzzer.execution.sandbox.Sandbox` with the execution options."""
    from fuzzer.execution.sandbox import Sandbox

    return Sandbox(jobs=jobs, timeout=timeout, memory_limit=memory_bytes(memory_gib))


def check_symptom(symptom: str | None) -> None:
    """Refuse a ``--symptom`` that no oracle registers.

    Raises:
        InputError: naming the known symptoms.
    """
    from oracles import symptom_names

    if symptom and symptom not in symptom_names():
        raise InputError(f"unknown symptom {symptom!r}; known: {', '.join(symptom_names())}")


@dataclass
class CampaignLimits:
    """The campaign limits: ``--hours``, ``--minutes``, ``--seconds``, ``--max-cases``."""

    hours: Hours = None
    minutes: Minutes = None
    seconds: Seconds = None
    max_cases: MaxCases = None

    def duration(self) -> float | None:
        """The time bound in seconds (None: none).

        Raises:
            InputError: more than one of ``--hours``, ``--minutes``, ``--seconds``.
        """
        limits = [v for v in (self.hours and self.hours * 3600,
                              self.minutes and self.minutes * 60, self.seconds) if v]
        if len(limits) > 1:
            raise InputError("give at most one of --hours, --minutes, --seconds")
        return limits[0] if limits else None


@dataclass
class TargetChoice:
    """The target selection: ``--target``, ``--passes``."""

    target: TargetName = None
    passes: Passes = None

    def pass_list(self) -> list[str] | None:
        """``--passes`` as a list (None when not given)."""
        return parse_list(self.passes)

    def resolve(self, base: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """:func:`target_config` of these options over ``base`` (with ``--fixed-point``
        where the group has it: :class:`TargetArgs`).

        Raises:
            InputError: an unknown target or pass.
        """
        return target_config(self.target, self.passes, getattr(self, "fixed_point", None),
                             base)


@dataclass
class TargetArgs(TargetChoice):
    """The target group: the target selection and ``--fixed-point``."""

    fixed_point: FixedPoint = None


@dataclass
class InputArgs:
    """The inputs group: ``--input-shapes``, ``--seed``."""

    input_shapes: InputShapes = None
    seed: Seed = 0

    def shapes(self) -> dict[str, list[int]] | None:
        """:func:`input_shapes` of ``--input-shapes``."""
        return input_shapes(self.input_shapes)


@dataclass
class ExecutionArgs:
    """The execution group: ``--timeout``, ``--memory-limit-gib``."""

    timeout: Timeout = DEFAULT_TIMEOUT
    memory_limit_gib: MemoryLimit = DEFAULT_MEMORY_GIB

    def sandbox(self, jobs: int = 1) -> Any:
        """:func:`sandbox` with these limits and ``jobs`` workers."""
        return sandbox(self.timeout, self.memory_limit_gib, jobs)


@dataclass
class BuildArgs:
    """The other-builds group: ``--env-cache``, ``--find-links``."""

    env_cache: EnvCache = None
    find_links: FindLinks = None

    def checks(self, execution: ExecutionArgs,
               notify: Callable[[str], None] | None = None) -> Any:
        """The :class:`fuzzer.upstream.checks.UpstreamChecks` these options and
        ``execution``'s limits (of each repro.py's child) describe.

        Raises:
            InputError: ``--find-links`` is not a folder.
        """
        from fuzzer.upstream.checks import UpstreamChecks
        from fuzzer.upstream.environments import EnvironmentCache

        if self.find_links is not None and not self.find_links.is_dir():
            raise InputError(f"--find-links {self.find_links}: not a folder")
        cache = EnvironmentCache(self.env_cache, self.find_links)
        return UpstreamChecks(cache, execution.timeout,
                              memory_bytes(execution.memory_limit_gib), notify)


#: the option groups a command parameter may take as its annotation.
GROUPS: tuple[type, ...] = (CampaignLimits, TargetChoice, TargetArgs, InputArgs, ExecutionArgs,
                            BuildArgs)


def grouped(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a command function whose parameters may be annotated with a group
    dataclass of :data:`GROUPS`: Typer sees the group's flags in the parameter's place, and
    the function gets one instance of the group, so a group's flags are declared once for
    every command."""
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function, include_extras=True)
    groups = {name: cls for name, cls in hints.items() if cls in GROUPS}
    fields = {name: [(f.name, typing.get_type_hints(cls, include_extras=True)[f.name],
                      f.default) for f in dataclasses.fields(cls)]
              for name, cls in groups.items()}
    params = []
    for param in signature.parameters.values():
        if param.name in groups:
            params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d,
                                         annotation=t) for n, t, d in fields[param.name]]
        else:
            params.append(param.replace(annotation=hints.get(param.name, param.annotation)))

    @functools.wraps(function)
    def command(**kwargs: Any) -> Any:
        for name, cls in groups.items():
            kwargs[name] = cls(**{n: kwargs.pop(n) for n, _, _ in fields[name]})
        return function(**kwargs)

    params.sort(key=lambda p: p.kind)
    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command
