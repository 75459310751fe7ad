"""The motif library: every :class:`~generators.motifs.spec.Motif`, by name and by pass.

A *family* is a module that exports ``MOTIFS``; the library discovers them: every module of
this package and of its subpackages (one subpackage per target whose knowledge a family is:
``onnxruntime/``, ``onnxslim/``, ``onnxsim/``, ``onnxscript/``, ``version_converter/``,
``onnxruntime_transformers/``; the shared families, onnxoptimizer's among them, at the top),
and the modules an installed distribution names in the :data:`ENTRY_POINT_GROUP` entry-point
group (its value a module or package; a package's modules are walked the same way). A new
motif is one new entry in a family's ``MOTIFS``; a new family is one new module.

A family may set ``ORDER`` (its place in the draw order, which a model of a fixed seed
depends on; families without one come last, by module name) and ``HINTED_ONLY = True`` (its
motifs are drawn only for a pass hint that names one of their passes: the forms of one
target, such as model-local functions, onnxscript's rewrite rules or the version converter's
adapters; a model generated without such a hint is what it was without them).
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections.abc import Iterator
from types import ModuleType

from fuzzer.registry import Registry, registry_of
from generators.motifs.spec import Motif

#: Entry-point group through which another distribution adds motif families (the entry
#: point's value is a module or package name).
ENTRY_POINT_GROUP = "optfuzz.motifs"
#: names of the motifs of ``HINTED_ONLY`` families (filled by :func:`_load`).
HINTED_ONLY_MOTIFS: set[str] = set()


def _walk(module: ModuleType) -> Iterator[ModuleType]:
    """``module`` and, for a package, every module below it."""
    yield module
    for info in pkgutil.walk_packages(getattr(module, "__path__", ()), f"{module.__name__}."):
        yield importlib.import_module(info.name)


def _warn(text: str) -> None:
    warnings.warn(text, stacklevel=4)


#: the family modules that installed distributions name in :data:`ENTRY_POINT_GROUP`,
#: imported on first use; one that fails to import is left out with one warning.
PLUGIN_FAMILIES: Registry[ModuleType] = Registry(
    "motif family", group=ENTRY_POINT_GROUP,
    load=lambda point: importlib.import_module(point.value), warn=_warn)


def families() -> list[ModuleType]:
    """Every family module, in draw order (``ORDER``, then module name): this package's and
    the plugins' (:data:`PLUGIN_FAMILIES`, read once; :func:`reload` reads them again)."""
    seen: dict[str, ModuleType] = {}
    for root in (importlib.import_module(__name__), *PLUGIN_FAMILIES.values()):
        for mod in _walk(root):
            if hasattr(mod, "MOTIFS") and mod.__name__ != __name__:
                seen.setdefault(mod.__name__, mod)
    return sorted(seen.values(), key=lambda m: (getattr(m, "ORDER", float("inf")), m.__name__))


def _load() -> Registry[Motif]:
    """Every motif of :func:`families`, in draw order.

    Raises:
        ValueError: two motifs share a name.
    """
    found = families()
    HINTED_ONLY_MOTIFS.clear()
    HINTED_ONLY_MOTIFS.update(m.name for mod in found if getattr(mod, "HINTED_ONLY", False)
                              for m in mod.MOTIFS)
    return registry_of("motif", ((m.name, m) for mod in found for m in mod.MOTIFS))


#: name -> Motif, built once at import (:func:`reload` builds it again).
MOTIFS: Registry[Motif] = Registry("motif")


def reload() -> Registry[Motif]:
    """Discovers the families again (after a plugin was installed) and refills
    :data:`MOTIFS` in place; what was drawn from the old library (the generator's cached
    motif pools, ``generators.generate._motif_pool``) is the caller's to clear."""
    PLUGIN_FAMILIES.rediscover()
    fresh = _load()
    MOTIFS.clear()
    MOTIFS.update(fresh)
    return MOTIFS


reload()


def motifs_for_pass(name: str) -> list[Motif]:
    """Motifs that target pass ``name`` (empty if none)."""
    return [m for m in MOTIFS.values() if name in m.passes]


def covered_passes() -> set[str]:
    """Every pass some motif targets."""
    return {p for m in MOTIFS.values() for p in m.passes}
