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


def _plugin_roots() -> Iterator[ModuleType]:
    """The modules the :data:`ENTRY_POINT_GROUP` entry points name; one that fails to import
    is one warning."""
    from importlib.metadata import entry_points
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            yield importlib.import_module(point.value)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the library
            warnings.warn(f"motif family plugin {point.name!r} ({point.value}) failed to "
                          f"import: {exc}", stacklevel=2)


def families() -> list[ModuleType]:
    """Every family module, in draw order (``ORDER``, then module name)."""
    seen: dict[str, ModuleType] = {}
    for root in (importlib.import_module(__name__), *_plugin_roots()):
        for mod in _walk(root):
            if hasattr(mod, "MOTIFS") and mod.__name__ != __name__:
                seen.setdefault(mod.__name__, mod)
    return sorted(seen.values(), key=lambda m: (getattr(m, "ORDER", float("inf")), m.__name__))


def _load() -> dict[str, Motif]:
    out: dict[str, Motif] = {}
    HINTED_ONLY_MOTIFS.clear()
    for mod in families():
        for m in mod.MOTIFS:
            if m.name in out:
                raise ValueError(f"duplicate motif name {m.name!r}")
            out[m.name] = m
            if getattr(mod, "HINTED_ONLY", False):
                HINTED_ONLY_MOTIFS.add(m.name)
    return out


#: name -> Motif, built once at import (:func:`reload` builds it again).
MOTIFS: dict[str, Motif] = {}


def reload() -> dict[str, Motif]:
    """Discovers the families again (after a plugin was installed) and refills
    :data:`MOTIFS` in place; what was drawn from the old library (the generator's cached
    motif pools, ``generators.generate._motif_pool``) is the caller's to clear."""
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
