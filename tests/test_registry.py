"""The registry mechanism (:mod:`fuzzer.registry`): lookups, registration, the mapping
protocol, and plugins read from an entry-point group (a fake ``entry_points``)."""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from typing import Any

import pytest

from fuzzer.registry import Registry, UnknownName

GROUP = "optfuzz.test-registry"


@dataclass(frozen=True)
class FakePoint:
    """The part of an ``importlib.metadata.EntryPoint`` a registry reads."""

    name: str
    value: str
    items: dict[str, Any]

    def load(self) -> Any:
        if self.value not in self.items:
            raise ModuleNotFoundError(f"No module named {self.value!r}\nsecond line")
        return self.items[self.value]


def _plugins(monkeypatch: pytest.MonkeyPatch, points: list[FakePoint]) -> list[str]:
    """Make ``importlib.metadata.entry_points`` answer ``points`` for :data:`GROUP`; returns
    the list the groups asked for are appended to."""
    asked: list[str] = []

    def entry_points(group: str) -> list[FakePoint]:
        asked.append(group)
        return points if group == GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return asked


def test_register_as_call_and_as_decorator_keeps_order() -> None:
    colours: Registry[int] = Registry("colour", {"red": 1})
    assert colours.register("green", 2) == 2

    @colours.register("blue")
    def blue() -> int:
        return 3

    assert colours["blue"] is blue
    assert colours.names() == ["red", "green", "blue"] == list(colours)
    assert len(colours) == 3 and "green" in colours and "black" not in colours
    assert dict(colours.items())["red"] == 1


def test_a_name_registered_twice_is_refused() -> None:
    colours: Registry[int] = Registry("colour", {"red": 1})
    with pytest.raises(ValueError, match="colour 'red' registered twice"):
        colours.register("red", 2)


def test_unknown_name_lists_the_known_names() -> None:
    colours: Registry[int] = Registry("colour", {"red": 1, "blue": 2})
    with pytest.raises(UnknownName) as info:
        colours.get("black")
    assert str(info.value) == "unknown colour 'black'; known: blue, red"
    assert isinstance(info.value, KeyError)
    with pytest.raises(KeyError):
        colours["black"]
    assert colours.get("black", None) is None
    assert colours.pop("black", 7) == 7


def test_entry_points_join_lazily_after_the_builtin_items(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _plugins(monkeypatch, [FakePoint("violet", "mod:violet", {"mod:violet": 9})])
    colours: Registry[int] = Registry("colour", {"red": 1}, group=GROUP)
    assert asked == []
    assert colours.names() == ["red", "violet"] and colours["violet"] == 9
    assert colours.plugin("violet").value == "mod:violet"
    assert colours.plugin("red") is None
    colours.names()
    assert asked == [GROUP]
    colours.rediscover()
    assert "violet" in colours and asked == [GROUP, GROUP]


def test_a_broken_plugin_is_left_out_with_one_warning(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _plugins(monkeypatch, [FakePoint("broken", "missing:thing", {}),
                           FakePoint("red", "shadow:red", {"shadow:red": 5}),
                           FakePoint("violet", "mod:violet", {"mod:violet": 9})])
    colours: Registry[int] = Registry("colour", {"red": 1}, group=GROUP)
    assert colours.names() == ["red", "violet"] and colours["red"] == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "warning: colour plugin 'broken' (missing:thing) is left out: ModuleNotFoundError: "
        "No module named 'missing:thing'",
        "warning: colour plugin 'red' (shadow:red) is left out: a built-in colour has that "
        "name"]
    with pytest.raises(UnknownName, match="unknown colour 'broken'; known: red, violet"):
        colours.get("broken")


def test_a_custom_load_and_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, [FakePoint("odd", "not a pair", {})])
    warned: list[str] = []

    def load(point: FakePoint) -> str:
        if ":" not in point.value:
            raise ValueError("its value is not 'module:Class'")
        return point.value

    colours: Registry[str] = Registry("colour", group=GROUP, load=load, warn=warned.append)
    assert len(colours) == 0
    assert warned == ["colour plugin 'odd' (not a pair) is left out: ValueError: its value "
                      "is not 'module:Class'"]


#: every registry of optfuzz: "module:attribute".
REGISTRIES = (
    "fuzzer.targets.base:TARGETS", "oracles.base:REGISTRY", "oracles.metrics:TASK_METRICS",
    "generators.motifs:MOTIFS", "generators.motifs:PLUGIN_FAMILIES",
    "generators.mutate.registry:MUTATORS", "generators.recipe:RECIPES",
    "generators.names:STYLES", "generators.edge_values:EDGE_KINDS",
    "fuzzer.corpus:SOURCES", "fuzzer.corpus.feeds:FILLS", "fuzzer.corpus.report:COLUMNS",
    "fuzzer.reduce.edits:EDITS", "fuzzer.reduce.reducer:STEPS", "fuzzer.targets.fake:PASSES",
    "fuzzer.edges.kinds:EDGE_KINDS", "fuzzer.builds.kinds:KINDS",
    "fuzzer.targets.onnxscript.rules:RULE_SETS", "fuzzer.cli:COMMANDS",
    "fuzzer.handling.growth:HANDLINGS", "fuzzer.reduce.probes:PROBES",
    "fuzzer.report.snippet:CHECKS", "generators.mutate.feeds:POLICIES",
    "generators.mutate.names:STYLES", "generators.mutate.constants:FORMS",
    "fuzzer.targets.onnxruntime_transformers.fusions:FUSIONS",
)


@pytest.mark.parametrize("where", REGISTRIES)
def test_every_registry_is_a_registry(where: str) -> None:
    module, _, attr = where.partition(":")
    found = getattr(importlib.import_module(module), attr)
    assert isinstance(found, Registry)
