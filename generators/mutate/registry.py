"""The registry of mutators: every family module of :data:`FAMILIES` exports ``MUTATORS``, a
tuple of :class:`~generators.mutate.spec.Mutator`; :data:`MUTATORS` maps each name to its
mutator, built once at import.
"""

from __future__ import annotations

import importlib

from fuzzer.registry import Registry, registry_of
from generators.mutate.spec import Mutator

#: Family modules, each exporting ``MUTATORS``.
FAMILIES: tuple[str, ...] = ("attributes", "dtypes", "ranks", "names", "constants",
                             "initializers", "splice", "control", "functions", "consumers",
                             "feeds", "repeat")


#: name -> Mutator, built once at import (two mutators of one name: ValueError).
MUTATORS: Registry[Mutator] = registry_of(
    "mutator", ((m.name, m) for fam in FAMILIES
                for m in importlib.import_module(f"generators.mutate.{fam}").MUTATORS))
