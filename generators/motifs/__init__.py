"""The motif library: every :class:`~generators.motifs.spec.Motif`, by name and by pass.

A new motif is one new entry in a family module's ``MOTIFS`` tuple.
"""

from __future__ import annotations

import importlib

from generators.motifs.spec import Motif

#: Family modules, each exporting ``MOTIFS``.
FAMILIES: tuple[str, ...] = ("weights", "fusion", "elimination", "shape", "subgraph",
                             "interface", "ort_fusion", "ort_matmul", "ort_transformer",
                             "ort_shape", "ort_qdq", "transformer_blocks", "functions",
                             "onnxscript_rules", "opset_changes", "onnxslim_conv",
                             "onnxslim_matmul",
                             "onnxslim_shape", "onnxslim_cleanup",
                             "onnxsim_fold", "onnxsim_fusion", "runs")


#: Families whose motifs are drawn only for a pass hint that names one of their passes (the
#: forms of one target: model-local functions, onnxscript's rewrite rules, the version
#: converter's adapters); a model generated without such a hint is what it was without them.
HINTED_ONLY: tuple[str, ...] = ("functions", "onnxscript_rules", "opset_changes")
#: names of the motifs of :data:`HINTED_ONLY` families (filled by :func:`_load`).
HINTED_ONLY_MOTIFS: set[str] = set()


def _load() -> dict[str, Motif]:
    out: dict[str, Motif] = {}
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"generators.motifs.{fam}")
        except ModuleNotFoundError as exc:
            if exc.name != f"generators.motifs.{fam}":
                raise
            continue
        for m in mod.MOTIFS:
            if m.name in out:
                raise ValueError(f"duplicate motif name {m.name!r}")
            out[m.name] = m
            if fam in HINTED_ONLY:
                HINTED_ONLY_MOTIFS.add(m.name)
    return out


#: name -> Motif, built once at import.
MOTIFS: dict[str, Motif] = _load()


def motifs_for_pass(name: str) -> list[Motif]:
    """Motifs that target pass ``name`` (empty if none)."""
    return [m for m in MOTIFS.values() if name in m.passes]


def covered_passes() -> set[str]:
    """Every pass some motif targets."""
    return {p for m in MOTIFS.values() for p in m.passes}
