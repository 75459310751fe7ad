"""The registry of mutators: every family module of :data:`FAMILIES` exports ``MUTATORS``, a
tuple of :class:`~generators.mutate.spec.Mutator`; :data:`MUTATORS` maps each name to its
mutator, built once at import.
"""

from __future__ import annotations

import importlib

from generators.mutate.spec import Mutator

#: Family modules, each exporting ``MUTATORS``.
FAMILIES: tuple[str, ...] = ("attributes", "dtypes", "ranks", "names", "constants",
                             "initializers", "splice", "control", "functions", "consumers",
                             "feeds", "repeat")


def _load() -> dict[str, Mutator]:
    out: dict[str, Mutator] = {}
    for fam in FAMILIES:
        for m in importlib.import_module(f"generators.mutate.{fam}").MUTATORS:
            if m.name in out:
                raise ValueError(f"duplicate mutator name {m.name!r}")
            out[m.name] = m
    return out


#: name -> Mutator, built once at import.
MUTATORS: dict[str, Mutator] = _load()
