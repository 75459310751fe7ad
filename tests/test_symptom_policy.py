"""Every symptom's policy lives in its oracle module: its :class:`oracles.base.Symptom` record
says how the rest of optfuzz treats it (handling steps, float64 checks, bundle files, report
wording, corpus column, standalone check), and code outside ``oracles/`` names a symptom only
to look it up in the registry (``symptom("hang")``, ``shows(finding, "bloat")``), never in a
table or a comparison of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from oracles import load_oracles, symptom_names
from oracles.base import SEVERITY_CLASSES

ROOT = Path(__file__).resolve().parents[1]
#: the packages searched: everything outside oracles/ and tests/.
SEARCHED = ("fuzzer", "generators")
#: the registry's lookups by name (:func:`oracles.symptom`, :func:`oracles.shows`).
LOOKUPS = frozenset({"symptom", "shows"})
#: ``(file, name)``: the keys of the dict literal assigned to ``name`` in ``file`` (or given
#: to the :class:`fuzzer.registry.Registry` assigned to it) are no symptom names, or not yet
#: ones this rule reaches.
EXEMPT_KEYS = {
    # the fake target's passes, each named after the bug it plants ("hang", "bloat")
    ("fuzzer/targets/fake.py", "PASSES"),
}


def _exempt(tree: ast.AST, file: str) -> set[int]:
    """``id``\\ s of the key nodes :data:`EXEMPT_KEYS` exempts in ``tree`` (from ``file``)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        value = node.value
        if isinstance(value, ast.Call):  # Registry(kind, {...})
            value = next((a for a in value.args if isinstance(a, ast.Dict)), None)
        if isinstance(value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and (file, t.id) in EXEMPT_KEYS for t in targets):
                found |= {id(key) for key in value.keys if key is not None}
    return found


def _lookup_arguments(tree: ast.AST) -> set[int]:
    """``id``\\ s of the string arguments of calls to one of :data:`LOOKUPS`."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else ""
            if name in LOOKUPS:
                found |= {id(arg) for arg in node.args}
    return found


def named_symptoms(source: str, file: str) -> list[tuple[int, str]]:
    """``(line, name)``, in order, of every string literal in ``source`` (the text of
    ``file``, relative to the repository) that equals a registered symptom name and is
    neither an argument of a registry lookup nor exempt. Comments are no literals, and a
    docstring equals no symptom name."""
    names = set(symptom_names())
    tree = ast.parse(source)
    allowed = _lookup_arguments(tree) | _exempt(tree, file)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value in names
                  and id(node) not in allowed)


def test_symptom_names_outside_oracles_are_registry_lookups():
    found = [f"{path.relative_to(ROOT)}:{line}: {name!r}"
             for package in SEARCHED for path in sorted((ROOT / package).rglob("*.py"))
             for line, name in named_symptoms(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


def test_the_search_finds_tables_and_comparisons_but_not_lookups_or_docstrings():
    source = '''
"""Handles "slow" findings."""
TABLE = {"slow": 1, "size": 2}  # "hang" in a comment
PASSES = {"hang": None}
def f(finding):
    if finding.symptom in ("bloat", "hang") or shows(finding, "bloat"):
        return symptom("output-mismatch").title
    return finding.symptom == "invalid-model"
'''
    assert named_symptoms(source, "fuzzer/example.py") == [
        (3, "slow"), (4, "hang"), (6, "bloat"), (6, "hang"), (8, "invalid-model")]
    assert (4, "hang") not in named_symptoms(source, "fuzzer/targets/fake.py")


def test_every_record_names_policies_that_exist():
    from fuzzer.corpus.report import COLUMNS
    from fuzzer.handling.growth import HANDLINGS
    from fuzzer.report.snippet import CHECKS

    for record in load_oracles().values():
        assert record.severity_class in SEVERITY_CLASSES, record.name
        assert record.handling is None or record.handling in HANDLINGS, record.name
        assert record.corpus_column in ("", *COLUMNS), record.name
        assert record.check in ("", *CHECKS), record.name
        assert bool(record.check) == bool(record.reproduced), record.name
        assert record.seen_as("a message"), record.name
