"""TestCase (what a worker is asked to run) and CaseResult (what it sends back).

A TestCase is light: for generated and corpus models it carries the provenance, and the
worker materializes the model itself (a generated model is rebuilt from its seed, a corpus
model read from its path), so the campaign ships a few hundred bytes per case. Materializers
are registered per ``source["kind"]`` in :data:`SOURCE_KINDS`.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from generators.materialize import Materialized
from oracles.base import Finding

__all__ = ["Artifacts", "CaseResult", "Materialized", "TestCase", "full_limit", "materializer"]

#: source kind -> "module:function" with signature
#: ``(source: dict, input_seed: int, input_shapes: dict | None) -> Materialized``.
SOURCE_KINDS: dict[str, str] = {
    "generated": "generators.materialize:materialize",
    "corpus": "fuzzer.corpus.materialize:materialize",
    "mutated": "fuzzer.execution.mutated:materialize",
}


@dataclass
class TestCase:
    """One differential test.

    Attributes:
        target: registry name of the system under test (``fuzzer.targets``).
        config: the target configuration, e.g. ``{"passes": [...], "fixed_point": False}``.
        source: JSON-able provenance. ``{"kind": "generated", "seed": int, "generator": str}``
            or ``{"kind": "corpus", "model": id, "sha256": hex, "path": str, ...}`` or
            ``{"kind": "mutated", "seed": int, "parent": <generated or corpus source>}`` or
            ``{"kind": "file", "path": str}``.
        model_bytes: the serialized model; ``None`` lets the worker materialize it from
            ``source``.
        feeds: input feeds ``{name: ndarray}``; ``None`` means synthesize them in the worker.
        input_seed: seed of input synthesis.
        input_shapes: sizes for dynamic dims ``{input name: [dims]}``.
        task: task category for task-level oracles, or ``None``.
        keep: send artifacts back even when no finding was made.
        require_valid: treat an original that fails onnx.checker (full_check) as unusable,
            as a reducer needs of its candidates (the check runs in the worker).
        growth: time the target on the model at three sizes whatever its single timing
            (:mod:`fuzzer.execution.scaling`), as localization and reduction of a ``slow``
            finding need; else only a suspicious single timing is followed up.
        growth_nodes: with ``growth``, the main-graph node count the probe's sizes may
            reach (a generated model's short run of blocks is scaled up to it); None: four
            times the model's own size.
        reference_first: run the original in onnxruntime before the target, not after it
            (:mod:`fuzzer.execution.pipeline`): a death in the reference run then makes the
            seed unusable instead of being run again this way.
        oracle_overrides: facts for the oracles that this test sets itself, over the
            target's (``Outcome.extra``), e.g. ``{"tolerance": {"atol": 1e-3}}``
            (:data:`oracles.tolerance.TOLERANCE`); None for a campaign's cases.
        timeout: this case's time limit in seconds where it is below the sandbox's per-case
            timeout (a campaign's calibrated limit of generated cases:
            :mod:`fuzzer.campaign.calibration`); None: the sandbox's timeout.
    """

    __test__ = False  # not a pytest class

    target: str
    config: dict[str, Any]
    source: dict[str, Any]
    model_bytes: bytes | None = None
    feeds: dict[str, np.ndarray] | None = None
    input_seed: int = 0
    input_shapes: dict[str, list[int]] | None = None
    task: str | None = None
    keep: bool = False
    require_valid: bool = False
    growth: bool = False
    growth_nodes: int | None = None
    reference_first: bool = False
    oracle_overrides: dict[str, Any] | None = None
    timeout: float | None = None

    def with_model(self, model_bytes: bytes, **changes: Any) -> TestCase:
        """A copy that carries ``model_bytes`` (and any other field changes)."""
        data = dict(self.__dict__, model_bytes=model_bytes)
        data.update(changes)
        return TestCase(**data)

    def with_config(self, config: dict[str, Any]) -> TestCase:
        """A copy with another target configuration."""
        return TestCase(**dict(self.__dict__, config=config))


def full_limit(case: TestCase) -> TestCase:
    """``case`` without a limit of its own (``TestCase.timeout``): the sandbox's per-case
    timeout applies again, as a rerun that must tell a hang from a slow case needs."""
    return case if case.timeout is None else dataclasses.replace(case, timeout=None)


def materializer(kind: str) -> Any:
    """Return the materializer function registered for ``kind``.

    Raises:
        KeyError: unknown source kind.
    """
    module, attr = SOURCE_KINDS[kind].split(":")
    return getattr(importlib.import_module(module), attr)


@dataclass
class Artifacts:
    """Bytes and arrays a bundle needs; sent back only for findings (or ``keep``).

    Attributes:
        model: serialized input model (bytes).
        optimized: serialized optimized model (bytes) or ``None``.
        feeds: input feeds ``{name: ndarray}``.
        expected: reference outputs of the original, or ``None``.
        actual: outputs of the optimized model, or ``None``.
    """

    model: bytes
    optimized: bytes | None
    feeds: dict[str, np.ndarray]
    expected: dict[str, np.ndarray] | None = None
    actual: dict[str, np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes the models and arrays hold (the memory a queued finding keeps)."""
        from fuzzer.execution.stage_driver import pack_values

        arrays = [*pack_values(self.feeds).values(), *pack_values(self.expected or {}).values(),
                  *pack_values(self.actual or {}).values()]
        return len(self.model) + len(self.optimized or b"") + \
            sum(getattr(a, "nbytes", 0) for a in arrays)


@dataclass
class CaseResult:
    """What one TestCase produced.

    Attributes:
        findings: oracle findings, most severe first (empty when clean).
        unusable: why the original model is unusable as a seed (fails to load/run in the
            reference), else ``None``. An unusable case never has findings.
        stage: last stage entered (``oracles.base.STAGES``).
        source: the case's provenance with materializer facts merged in (e.g. motifs).
        nodes: ``(original, optimized)`` node counts of the main graph; optimized is ``None``
            where the target returned nothing.
        changed: whether the optimized graph differs from the original (``None`` if unknown).
        timings: seconds spent per stage.
        artifacts: see :class:`Artifacts`; present when findings exist or ``keep`` was set.
        edges: the edge features of the target's own code the case took
            (:func:`fuzzer.edges.collector.features`), where its sandbox collects them.
        documented: the name of the target's documented behaviour that the primary finding
            shows (:meth:`fuzzer.targets.base.Target.documented`), judged in the worker: such
            a result is counted, never bundled, so its artifacts stay there (unless ``keep``).
    """

    findings: list[Finding]
    unusable: str | None
    stage: str
    source: dict[str, Any]
    nodes: tuple[int | None, int | None] = (None, None)
    changed: bool | None = None
    timings: dict[str, float] = field(default_factory=dict)
    artifacts: Artifacts | None = None
    edges: frozenset[int] | None = None
    documented: str | None = None

    def unrecordable(self) -> str | None:
        """Why this result's finding cannot be recorded (no artifacts to bundle: the model
        of a case whose worker died could not be rebuilt, ``source["artifacts_lost"]``), as
        one line for the campaign's list of findings not recorded; None where it can be, or
        where there is no undocumented finding."""
        if not self.findings or self.documented or self.artifacts is not None:
            return None
        why = self.source.get("artifacts_lost", "no artifacts")
        return f"{self.findings[0].symptom}: {self.findings[0].message[:120]}: its model " \
               f"could not be rebuilt ({why})"
