"""One differential test, as a worker runs it (design.md, "Data flow").

materialize -> target.optimize -> reference run of the original -> validate -> load the
optimized model -> run it -> compare (the oracles). The stages are those of the one
:class:`fuzzer.execution.stage_driver.StageDriver`, which every bundle's repro.py carries
verbatim; here they are ordered for a campaign, and their outcome becomes a
:class:`fuzzer.execution.case.CaseResult`. Each stage is announced through a callback so that
the sandbox knows where a worker was when it died or hung.

The target runs before the reference run, so that a model the target returns unchanged
(a tenth to a quarter of a campaign's cases) costs no onnxruntime session: its original runs
only where a finding needs it usable. A worker that dies in that later reference run may
have had its heap broken by the target: the sandbox runs the case again with
``TestCase.reference_first``, the reference run before the target, and only a death there
makes the seed unusable (:mod:`fuzzer.execution.sandbox`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from fuzzer.execution.case import Artifacts, CaseResult, Materialized, TestCase, materializer
from fuzzer.execution.stage_driver import StageDriver, error_text
from oracles import judge
from oracles.base import STAGES, Finding, Outcome
from oracles.slow import SUSPECT_SECONDS

StageHook = Callable[[str], None]


def materialize_case(case: TestCase) -> tuple[Any, dict[str, Any], Materialized]:
    """Build the model and feeds of ``case`` in this process (no optimizer runs here).

    Returns ``(model, feeds, materialized)``.

    Raises:
        fuzzer.errors.InputError, generators.inputs.InputSpecError: unusable model or inputs.
    """
    from fuzzer.modelio.load import check_sizes, parse_model
    from generators.inputs import synthesize_inputs

    if case.model_bytes is not None:
        mat = Materialized(model=parse_model(case.model_bytes))
        check_sizes(mat.model)
    elif case.source.get("kind") == "file":
        from fuzzer.modelio.load import load_model

        mat = Materialized(model=load_model(case.source["path"]))
    else:
        mat = materializer(case.source["kind"])(case.source, case.input_seed, case.input_shapes)
    feeds = case.feeds if case.feeds is not None else mat.feeds
    if feeds is None:
        shapes = dict(mat.input_shapes or {})
        shapes.update(case.input_shapes or {})
        feeds = synthesize_inputs(mat.model, case.input_seed, shapes)
    return mat.model, feeds, mat


def oracle_extra(target: Any, config: dict[str, Any]) -> dict[str, Any]:
    """``Outcome.extra`` for a run of ``target`` with ``config``: the configuration and the
    target's oracle context (:meth:`fuzzer.targets.base.Target.oracle_context`)."""
    return {"config": config, **target.oracle_context(config)}


def case_extra(target: Any, case: TestCase) -> dict[str, Any]:
    """``Outcome.extra`` for ``case`` run on ``target``: :func:`oracle_extra` of its
    configuration, with what the case sets itself over it (``TestCase.oracle_overrides``)."""
    return {**oracle_extra(target, case.config), **(case.oracle_overrides or {})}


def growth_extra(case: TestCase, target: Any, model: Any, feeds: dict[str, Any],
                 optimize_s: float, reference_s: float | None,
                 left: float | None) -> dict[str, Any]:
    """``Outcome.extra`` facts of the ``slow`` oracle (:mod:`oracles.slow`): the single
    optimizer and reference times (seconds; the reference None where it has not run, which
    :func:`run_case` allows only for an optimizer run shorter than
    :data:`oracles.slow.SUSPECT_SECONDS`) and, where that run is suspicious or the case
    asks for it (``TestCase.growth``), the scaling series (:mod:`fuzzer.execution.scaling`)
    within :data:`fuzzer.execution.scaling.PROBE_SECONDS` and half of ``left``, the seconds
    the case has left (None: unknown), and within the share of the worker's time that
    unasked probes may take. A scaled model the target fails on gives no series."""
    from fuzzer.execution.scaling import PROBE_SECONDS, may_probe, scaling_series
    from oracles.slow import OPTIMIZE_S, REFERENCE_S, SCALING, suspicious

    extra: dict[str, Any] = {OPTIMIZE_S: optimize_s, REFERENCE_S: reference_s}
    if not (case.growth or suspicious(optimize_s, reference_s or 0.0)) or \
            not may_probe(case.growth):
        return extra
    budget = PROBE_SECONDS if left is None else min(PROBE_SECONDS, left / 2)
    try:
        series = scaling_series(target, case.config, model, feeds, budget, case.growth,
                                case.growth_nodes)
    except Exception:
        series = None
    if series:
        extra[SCALING] = series
    return extra


def run_case(case: TestCase, hook: StageHook | None = None,
             timeout: float | None = None) -> CaseResult:
    """Run one differential test and judge it with every oracle.

    Never raises for a problem of the model or the target: those become findings or an
    ``unusable`` reason. Signals and hangs cannot be caught here; the sandbox turns them into
    outcomes. ``hook`` is told the name of each stage entered (:data:`oracles.base.STAGES`).
    ``timeout`` is the case's time limit in seconds (None: unknown), which bounds the scaling
    probe of a suspiciously slow optimizer run (:func:`growth_extra`).
    """
    from fuzzer.targets import get_target

    driver = StageDriver(judge, Outcome, STAGES, hook)
    source = dict(case.source)
    try:
        model, feeds, mat = materialize_case(case)
    except Exception as exc:
        return CaseResult([], f"materialize: {error_text(exc)}", "materialize", source)
    source.update(mat.provenance)
    target = get_target(case.target)
    invalid = driver.load_original(model, feeds, case.model_bytes, task=case.task or mat.task,
                                   extra=case_extra(target, case), check=case.require_valid)
    if invalid is not None:
        return CaseResult([], f"materialize: invalid original: {invalid}", "materialize",
                          source, (len(model.graph.node), None))

    if case.reference_first and (unusable := _reference(driver, source)) is not None:
        return unusable
    failed = driver.checked_optimize(lambda original: target.optimize(original, case.config))
    if failed is not None:
        return _reference(driver, source) or \
            _result(driver, case, target, source, failed, judge(failed))
    if (case.growth or driver.optimize_s >= SUSPECT_SECONDS) and \
            (unusable := _reference(driver, source)) is not None:
        return unusable  # the slow oracle weighs the optimizer's time against the reference
    left = None if timeout is None else timeout - driver.elapsed()
    driver.extra.update(growth_extra(case, target, model, feeds, driver.optimize_s,
                                     driver.seconds_in("reference"), left))
    if driver.changed and (unusable := _reference(driver, source)) is not None:
        return unusable
    outcome, findings = driver.verify(partial(_documented_only, target, case.config))
    if not driver.changed:  # the original runs only where a finding (or the caller) needs it
        # usable; its outputs stand for the optimized model's too
        if (case.keep or findings) and (unusable := _reference(driver, source)) is not None:
            return unusable
        outcome.expected = outcome.actual = driver.expected
    return _result(driver, case, target, source, outcome, findings)


def _documented_only(target: Any, config: dict[str, Any], found: list[Finding]) -> bool:
    """Whether every finding of stage ``validate`` in ``found`` shows behaviour that
    ``target`` documents for ``config``: an invalid model the target documents (its own ops
    in the ONNX domain) still runs in onnxruntime, and its outputs are compared."""
    return all(target.documented(f, config) is not None for f in found if f.stage == "validate")


def _reference(driver: StageDriver, source: dict[str, Any]) -> CaseResult | None:
    """Run the original once (:meth:`StageDriver.run_reference`); the unusable result where
    onnxruntime cannot run it, else None."""
    try:
        driver.run_reference()
    except Exception as exc:
        return CaseResult([], f"reference: {error_text(exc)}", "reference", source,
                          (len(driver.model.graph.node), None), None, driver.timings)
    return None


def _result(driver: StageDriver, case: TestCase, target: Any, source: dict[str, Any],
            outcome: Outcome, findings: list[Finding]) -> CaseResult:
    """The CaseResult of ``case`` whose last judged stage made ``outcome`` with ``findings``:
    artifacts for an undocumented finding (or ``keep``), the name of the target's documented
    behaviour the primary finding shows, and the driver's timings once stage ``done`` is
    entered."""
    driver.enter("done")
    explained = target.documented(findings[0], case.config) if findings else None
    arts = None
    if (findings and explained is None) or case.keep:
        arts = Artifacts(driver.model_bytes, driver.optimized_bytes, driver.feeds,
                         outcome.expected, outcome.actual)
    optimized = driver.optimized
    return CaseResult(findings, None, outcome.stage, source,
                      (len(driver.model.graph.node),
                       len(optimized.graph.node) if optimized is not None else None),
                      driver.changed, driver.timings, arts,
                      documented=explained.name if explained is not None else None)
