"""Imports run downward only: every module of the three import packages (fuzzer, generators,
oracles) imports only its own package and the packages of the layers below its own, and no
module imports itself through others.

A package of ``fuzzer`` is a layer unit of its own (``fuzzer.execution``, with everything
under it); the top-level modules ``fuzzer.registry``, ``fuzzer.errors``, ``fuzzer.cache`` and
``fuzzer.pipdownload`` and the ``fuzzer`` package itself (``__version__``) are units too;
``generators`` and ``oracles`` are one unit each. Units of one layer do not import each
other. Every import counts, the ones inside functions too (a lazy import is still a
dependency, and a cycle through one only shows when the import runs), but for the ones under
``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fuzzer", "generators", "oracles")

#: the layers, lowest first: a unit imports only its own modules and the units of lower
#: layers. The registry mechanism, which every registry owner uses, is below all. The order
#: follows the data flow of design.md: the oracles and generators know nothing of the
#: campaign; targets are adapters over a model; builds and edges are a target's instrumented
#: builds and the measure of its own code; execution runs a case through a target in a
#: worker and judges it; corpus and store feed and keep cases; findings, localization,
#: reduction and reports work on one finding; handling strings them together for a campaign;
#: the commands and the CLI sit on top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("fuzzer.registry",),
    ("oracles", "generators"),
    ("fuzzer", "fuzzer.errors", "fuzzer.cache", "fuzzer.delta"),
    ("fuzzer.modelio", "fuzzer.pipdownload"),
    ("fuzzer.targets",),
    ("fuzzer.builds",),
    ("fuzzer.edges",),
    ("fuzzer.execution",),
    ("fuzzer.corpus", "fuzzer.store"),
    ("fuzzer.findings",),
    ("fuzzer.localize", "fuzzer.reduce", "fuzzer.report"),
    ("fuzzer.handling", "fuzzer.upstream"),
    ("fuzzer.triage",),
    ("fuzzer.campaign",),
    ("fuzzer.cluster",),
    ("fuzzer.commands",),
    ("fuzzer.cli",),
    ("fuzzer.__main__",),
)
LEVEL = {unit: level for level, units in enumerate(LAYERS) for unit in units}


@cache
def modules() -> dict[str, Path]:
    """Dotted module name -> its file, for every module of :data:`PACKAGES` (a package is
    its ``__init__.py``)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def unit(module: str) -> str:
    """The layer unit of a dotted module name: ``fuzzer.<package or module>``, or the
    top-level package (``fuzzer`` for the ``fuzzer`` package itself)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "fuzzer" else parts[0]


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` but those inside an ``if TYPE_CHECKING:`` body (its
    ``else`` counts)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _statements(other)
            continue
        yield child
        yield from _statements(child)


def _known(name: str) -> str | None:
    """The longest prefix of dotted ``name`` that is one of :func:`modules`, or None (a
    third-party or standard module)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules():
        parts.pop()
    return ".".join(parts) if parts else None


def imported(source: str, package: str) -> list[tuple[str, int]]:
    """``(imported module, line)`` of every import in ``source`` (the text of a module of
    ``package``) of a module of :data:`PACKAGES`; ``from package import name`` counts as an
    import of the submodule ``package.name`` where there is one."""
    found = []
    for node in _statements(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base
                     for alias in node.names]
        else:
            continue
        found += [(known, node.lineno) for name in dict.fromkeys(names)
                  if (known := _known(name))]
    return found


@cache
def imports(module: str) -> list[tuple[str, int]]:
    """:func:`imported` of the module called ``module``."""
    path = modules()[module]
    return imported(path.read_text(), module if path.name == "__init__.py"
                    else module.rpartition(".")[0])


def test_every_unit_has_a_layer():
    undeclared = sorted({unit(m) for m in modules()} - set(LEVEL))
    assert undeclared == [], f"declare the layer of {undeclared} in LAYERS"


def test_no_module_imports_a_unit_of_its_own_layer_or_above():
    upward = [f"{modules()[m].relative_to(ROOT)}:{line} imports {target} "
              f"({unit(m)}, layer {LEVEL[unit(m)]} -> {unit(target)}, layer "
              f"{LEVEL[unit(target)]})"
              for m in sorted(modules()) for target, line in imports(m)
              if unit(target) != unit(m) and LEVEL[unit(target)] >= LEVEL[unit(m)]]
    assert upward == []


def test_no_import_cycle_among_modules():
    graph = nx.DiGraph()
    graph.add_edges_from((m, target) for m in modules() for target, _ in imports(m)
                         if target != m)
    cycles = [" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph)]
    assert cycles == []


def test_the_import_reader_counts_lazy_and_relative_imports_but_not_type_checking_ones():
    source = """
from typing import TYPE_CHECKING
import numpy
if TYPE_CHECKING:
    from fuzzer.campaign.run import CampaignRun
else:
    import fuzzer.errors
def later():
    from fuzzer.cache import cache_root
from . import slots
from .case import TestCase
"""
    assert imported(source, "fuzzer.execution") == [
        ("fuzzer.errors", 7), ("fuzzer.cache", 9), ("fuzzer.execution.slots", 10),
        ("fuzzer.execution.case", 11)]
