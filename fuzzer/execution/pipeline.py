"""One differential test, as a worker runs it (design.md, "Data flow").

materialize -> target.optimize -> reference run of the original -> validate -> load the
optimized model -> run it -> compare (the oracles). Each stage is announced through a
callback so that the sandbox knows where a worker was when it died or hung.

The target runs before the reference run, so that a model the target returns unchanged
(a tenth to a quarter of a campaign's cases) costs no onnxruntime session: its original runs
only where a finding needs it usable. A worker that dies in that later reference run may
have had its heap broken by the target: the sandbox runs the case again with
``TestCase.reference_first``, the reference run before the target, and only a death there
makes the seed unusable (:mod:`fuzzer.execution.sandbox`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from fuzzer.execution.case import Artifacts, CaseResult, Materialized, TestCase, materializer
from fuzzer.execution.reference import make_session, run_session
from oracles import judge
from oracles.base import STAGES, Outcome, first_line
from oracles.slow import SUSPECT_SECONDS

StageHook = Callable[[str], None]


def _no_hook(stage: str) -> None:
    pass


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


def error_text(exc: BaseException) -> str:
    """``"<ExceptionType>: <first line of the message>"`` (repro.py carries this function)."""
    return f"{type(exc).__name__}: {first_line(str(exc)) or '(no message)'}"


def validate(model: Any) -> str | None:
    """None when the model (an ``onnx.ModelProto`` or its serialized bytes, which spares
    the checker a serialization) passes checker full_check, else the error (repro.py
    carries this function). ``full_check`` runs strict, type-checking shape inference
    (onnx's checker.cc: ``ShapeInferenceOptions{check_type=true, error_mode=1}``), so a
    second call of ``infer_shapes(check_type=True, strict_mode=True)`` could not fail where
    it passed."""
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        return error_text(exc)
    return None


def interface_feeds(original: Any, optimized: Any, feeds: dict[str, Any]) -> dict[str, Any]:
    """The original's ``feeds`` for ``optimized`` (``onnx.ModelProto`` both), a model whose
    configuration renames or retypes the graph inputs on purpose (onnxoptimizer's
    ``rename_input_output``, ``rewrite_input_dtype``): matched by position among the inputs
    that are not initializers, each cast to the element type the optimized input declares.
    ``feeds`` as they are where the input counts differ."""
    from onnx import helper

    def runtime_inputs(graph: Any) -> list[Any]:
        inits = {t.name for t in graph.initializer}
        return [v for v in graph.input if v.name not in inits]

    before, after = runtime_inputs(original.graph), runtime_inputs(optimized.graph)
    if len(before) != len(after) or any(v.name not in feeds for v in before):
        return feeds
    adapted = {}
    for old, new in zip(before, after, strict=True):
        value = feeds[old.name]
        elem = new.type.tensor_type.elem_type
        if elem and hasattr(value, "astype"):
            value = value.astype(helper.tensor_dtype_to_np_dtype(elem), copy=False)
        adapted[new.name] = value
    return adapted


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


def run_case(case: TestCase, hook: StageHook = _no_hook,
             timeout: float | None = None) -> CaseResult:
    """Run one differential test and judge it with every oracle.

    Never raises for a problem of the model or the target: those become findings or an
    ``unusable`` reason. Signals and hangs cannot be caught here; the sandbox turns them into
    outcomes. ``timeout`` is the case's time limit in seconds (None: unknown), which bounds
    the scaling probe of a suspiciously slow optimizer run (:func:`growth_extra`).
    """
    from fuzzer.targets import get_target

    timings: dict[str, float] = {}
    clock = started = time.perf_counter()

    def enter(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[current[0]] = timings.get(current[0], 0.0) + now - clock
        clock, current[0] = now, stage
        hook(stage)

    current = ["materialize"]
    hook("materialize")
    source = dict(case.source)
    try:
        model, feeds, mat = materialize_case(case)
    except Exception as exc:
        return CaseResult([], f"materialize: {error_text(exc)}", "materialize", source)
    source.update(mat.provenance)
    task = case.task or mat.task
    model_bytes = case.model_bytes or model.SerializeToString()

    target = get_target(case.target)

    def result(findings: list, stage: str, optimized_bytes: bytes | None = None,
               expected: Any = None, actual: Any = None, optimized: Any = None,
               changed: bool | None = None) -> CaseResult:
        enter("done")
        explained = target.documented(findings[0], case.config) if findings else None
        arts = None
        if (findings and explained is None) or case.keep:
            arts = Artifacts(model_bytes, optimized_bytes, feeds, expected, actual)
        n_opt = len(optimized.graph.node) if optimized is not None else None
        return CaseResult(findings, None, stage, source, (len(model.graph.node), n_opt),
                          changed, timings, arts,
                          documented=explained.name if explained is not None else None)

    if case.require_valid:
        import onnx

        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception as exc:
            return CaseResult([], f"materialize: invalid original: {error_text(exc)}",
                              "materialize", source, (len(model.graph.node), None))

    expected: dict[str, Any] | None = None

    def reference() -> CaseResult | None:
        """Run the original once (stage ``reference``); the unusable result where
        onnxruntime cannot run it."""
        nonlocal expected
        if expected is not None:
            return None
        enter("reference")
        try:
            expected = run_session(make_session(model_bytes), feeds)
        except Exception as exc:
            return CaseResult([], f"reference: {error_text(exc)}", "reference", source,
                              (len(model.graph.node), None), None, timings)
        return None

    if case.reference_first and (unusable := reference()) is not None:
        return unusable
    enter("optimize")
    optimize_start = time.perf_counter()
    try:
        optimized = target.optimize(model, case.config)
    except Exception as exc:
        outcome = Outcome("error", "optimize", error=error_text(exc),
                          traceback=traceback.format_exc(), original=model, task=task)
        return reference() or result(judge(outcome), "optimize")
    optimize_s = time.perf_counter() - optimize_start
    if (case.growth or optimize_s >= SUSPECT_SECONDS) and (unusable := reference()) is not None:
        return unusable  # the slow oracle weighs the optimizer's time against the reference
    left = None if timeout is None else timeout - (time.perf_counter() - started)
    timed = growth_extra(case, target, model, feeds, optimize_s, timings.get("reference"), left)
    optimized_bytes = optimized.SerializeToString()
    changed = optimized_bytes != model_bytes

    documented: list = []  # findings of the target's documented behaviour, passed over
    context = case_extra(target, case)
    until = STAGES.index(context.get("judge_until", "compare"))

    def findings_of(outcome: Outcome) -> list:
        outcome.original, outcome.optimized, outcome.task = model, optimized, task
        outcome.extra.update(context)
        outcome.extra.update(timed)
        return judge(outcome)

    def judged(outcome: Outcome) -> CaseResult:
        return result(findings_of(outcome) + documented, outcome.stage, optimized_bytes,
                      outcome.expected, outcome.actual, optimized, changed)

    if not changed:  # the target returned the model as it was: nothing to run twice, and
        # the original runs only where a finding (or the caller) needs it usable; its outputs
        # would be compared with themselves
        findings = findings_of(Outcome("ok", "compare"))
        if (case.keep or findings) and (unusable := reference()) is not None:
            return unusable
        return result(findings, "compare", optimized_bytes, expected, expected, optimized,
                      changed)
    if (unusable := reference()) is not None:
        return unusable
    if until < STAGES.index("validate"):  # the target documents a non-conforming output
        return judged(Outcome("ok", "optimize"))

    enter("validate")
    problem = validate(optimized_bytes)
    if problem is not None and validate(model_bytes) is None:
        judged_here = findings_of(Outcome("error", "validate", error=problem))
        invalid = [f for f in judged_here if f.stage == "validate"]  # not the optimizer's time
        if any(target.documented(f, case.config) is None for f in invalid):
            return result(judged_here, "validate", optimized_bytes, optimized=optimized,
                          changed=changed)
        # an invalid model the target documents (its own ops in the ONNX domain) still runs
        # in onnxruntime: its outputs are compared, the documented finding comes last
        documented = invalid

    enter("load")
    try:
        session = make_session(optimized_bytes)
    except Exception as exc:
        return judged(Outcome("error", "load", error=error_text(exc), expected=expected))

    if until < STAGES.index("execute"):  # the outputs are not the model's (a cut graph)
        return judged(Outcome("ok", "load"))
    # the optimized model's own feeds; the artifacts keep the original's (repro.py and the
    # determinism rerun run the original on them)
    run_feeds = interface_feeds(model, optimized, feeds) \
        if context.get("interface_may_change") else feeds

    enter("execute")
    try:
        actual = run_session(session, run_feeds)
    except Exception as exc:
        return judged(Outcome("error", "execute", error=error_text(exc), expected=expected))

    enter("compare")
    return judged(Outcome("ok", "compare", expected=expected, actual=actual))
