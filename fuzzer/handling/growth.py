"""What a campaign does beyond the common path for a finding whose time grows with the
model's size (``slow``, :mod:`oracles.slow`, whose record names these steps ``growth``,
:data:`HANDLINGS`): scale the found model down to the smallest size that still shows the
growth before localization (every later run, localization's and the bundle's, then times the
small model at three sizes), record the timing table in meta.json, and ship the timed sizes
in the bundle's ``scaling/`` folder, which its repro.py times again.

Localization is the usual search (:mod:`fuzzer.localize.search`) with every run timed at
three sizes: a pass list reproduces where the time it adds to the no-pass baseline grows
superlinearly (``growth: passes``), the empty list where the target's own load and save
does (``growth: framework``).

Reduction here is first over the model's run of repeated blocks (:mod:`fuzzer.modelio.repeat`):
block counts of the found model divided by powers of 2, smallest first, each checked by the
reducer's own predicate (:class:`fuzzer.reduce.signature_check.SignatureCheck`: the same
symptom and key detail, i.e. still superlinear and in the same part of the target); the
first that holds is kept. Then the generic reducer removes the nodes around the run that the
growth does not need, with the same predicate: a candidate that cuts into the run has no run
to scale and fails fast, one that keeps it costs a three-size timing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.registry import Registry
from fuzzer.store.case import SCALING_DIR
from oracles import shows, symptom
from oracles.base import Finding

#: meta.json field holding the timing table and the exponents.
TIMING_FIELD = "timing"
#: fewest nodes around the run that the generic reducer is run for: each of its checks that
#: keeps the run costs a three-size timing (seconds), too much to save a single node.
TRIM_AT_LEAST = 2


def smaller_counts(run: Any) -> list[int]:
    """Block counts below ``run``'s (a :class:`fuzzer.modelio.repeat.Run`) to try, smallest
    first: its count divided by powers of 2, down to :data:`fuzzer.modelio.repeat.MIN_BLOCKS`."""
    from fuzzer.modelio.repeat import MIN_BLOCKS

    return sorted({run.count >> shift for shift in range(1, 16)
                   if run.count >> shift >= MIN_BLOCKS})


def after_timeout(sandbox: Any, case: TestCase, result: CaseResult,
                  seconds: float) -> tuple[TestCase, CaseResult] | None:
    """Where the optimizer outlived the timeout on a model with a run of repeated blocks:
    ``(case, run)`` of the smallest scaled-down form (:func:`smaller_counts`) whose
    three-size timing shows ``slow``, tried within ``seconds``; None where the finding is
    no such timeout or no smaller form shows it. A time that grows superlinearly explains a
    timeout on a large model: its table says how long the full size would take."""
    import time

    from fuzzer.modelio.load import parse_model
    from fuzzer.modelio.repeat import find_run, rescale

    first = result.findings[0] if result.findings else None
    if first is None or not shows(first, "hang") or first.stage != "optimize" or \
            case.model_bytes is None:
        return None
    model = parse_model(case.model_bytes)
    run = find_run(model.graph)
    deadline = time.monotonic() + seconds
    for count in smaller_counts(run) if run is not None else []:
        if time.monotonic() > deadline:
            break
        smaller = case.with_model(rescale(model, run, count).SerializeToString(), growth=True)
        again = sandbox.run(smaller)
        if again.findings and shows(again.findings[0], "slow"):
            return smaller, again
    return None


def scale_down(sandbox: Any, case: TestCase, result: CaseResult, finding: Finding,
               seconds: float, cutoff: Any = None) -> tuple[TestCase, CaseResult, Finding]:
    """The smallest form of the found model that still shows ``finding``, within
    ``seconds`` and before ``cutoff`` (a :class:`fuzzer.reduce.predicate.Cutoff`: a
    campaign's end of grace; None: none): first the smallest scaled form
    (:func:`smaller_counts`), then that form with the nodes around its run removed where
    the growth does not need them (the generic reducer,
    :func:`fuzzer.reduce.reducer.reduce_model`, with the same check: a candidate that
    breaks the run shows no growth and is refused at the cost of a run that finds no run
    to scale). ``(case, run, finding)`` of it, or of the found model where nothing
    smaller shows it."""
    from fuzzer.modelio.load import parse_model
    from fuzzer.modelio.repeat import find_run, rescale
    from fuzzer.reduce.candidate import Built
    from fuzzer.reduce.predicate import Budget, OutOfTime, fingerprint
    from fuzzer.reduce.signature_check import SignatureCheck

    arts = result.artifacts
    if arts is None or seconds <= 0:
        return case, result, finding
    model = parse_model(arts.model)
    run = find_run(model.graph)
    if run is None:
        return case, result, finding
    check = SignatureCheck(sandbox, case, finding.symptom, finding.message,
                           Budget(seconds, cutoff), finding.detail)
    chosen = None
    for count in smaller_counts(run):
        built = Built(rescale(model, run, count), dict(arts.feeds))
        try:
            if check(built):
                chosen = built
                break
        except OutOfTime:
            break
    if len(model.graph.node) - run.count * run.period >= TRIM_AT_LEAST:
        chosen = _trimmed(sandbox, check, chosen or Built(model, dict(arts.feeds))) or chosen
    if chosen is None:
        return case, result, finding
    smaller = check.results[fingerprint(chosen)]
    again = next((f for f in smaller.findings if f.symptom == finding.symptom), finding)
    data = chosen.model.SerializeToString()
    return case.with_model(data, feeds=chosen.feeds, input_shapes=None), \
        _with_model(smaller, data), again


def _trimmed(sandbox: Any, check: Any, built: Any) -> Any:
    """``built`` (a :class:`fuzzer.reduce.candidate.Built` that shows the growth) reduced
    by the generic reducer under ``check``; None where it removed nothing or could not run
    (out of time, a reducer error)."""
    from functools import partial

    from fuzzer.reduce.reducer import reduce_model
    from fuzzer.reduce.values import record_sandboxed

    try:
        reduction = reduce_model(built.model, built.feeds, check,
                                 record_sandboxed(sandbox, built.model, built.feeds),
                                 partial(record_sandboxed, sandbox), verified=True)
    except Exception:  # OutOfTime, NotReproducible, or a bug of the reducer
        return None
    return reduction.built if reduction.nodes[1] < reduction.nodes[0] else None


def _with_model(result: CaseResult, model: bytes) -> CaseResult:
    """``result`` whose artifacts carry ``model`` (a reducer's run keeps none of its own)."""
    if result.artifacts is None:
        return result
    return dataclasses.replace(result, artifacts=dataclasses.replace(result.artifacts,
                                                                     model=model))


def timed(case: TestCase) -> TestCase:
    """``case`` asking every run for the three-size timing (``TestCase.growth``), as every
    later run of a ``slow`` finding (confirmation, localization, reduction) must."""
    return dataclasses.replace(case, growth=True)


def timing_fields(finding: Finding) -> dict[str, Any]:
    """meta.json fields of a ``slow`` finding: its timing table and exponents."""
    keep = ("growth", "exponent", "reference_exponent", "added_exponent", "threshold",
            "margin", "repeats", "table")
    return {TIMING_FIELD: {k: finding.detail[k] for k in keep if k in finding.detail}}


def scaled_files(meta: Any, model: bytes) -> dict[str, bytes]:
    """The bundle files of the sizes its timing table lists, ``scaling/<nodes>.onnx``, made
    from ``model`` (model.onnx) by the same scaling the worker timed."""
    from fuzzer.modelio.repeat import scaled_bytes

    timing = (getattr(meta, "extra", None) or {}).get(TIMING_FIELD) or {}
    files = {}
    for row in timing.get("table", []):
        data = scaled_bytes(model, row.get("blocks") or 0) if row.get("blocks") else None
        if data is not None:
            files[f"{SCALING_DIR}/{row['nodes']}.onnx"] = data
    return files


@dataclass(frozen=True)
class Handling:
    """A symptom's own steps in a campaign's handling of its findings.

    Attributes:
        case: ``case -> case`` every later run of the finding takes (from confirmation on).
        prepare: ``(sandbox, case, result, finding, seconds, cutoff) -> (case, result,
            finding)``, run before localization (seconds: the reduction budget; cutoff:
            the :class:`fuzzer.reduce.predicate.Cutoff` that also ends it).
        meta_fields: ``finding -> {meta.json field: value}`` of the final finding.
        files: ``(meta, model.onnx bytes) -> {bundle file name: bytes}``.
        passes: ``(finding, localized passes) -> the passes its root-cause key names``.
    """

    case: Any
    prepare: Any
    meta_fields: Any
    files: Any
    passes: Any


def own_passes(finding: Finding, passes: list[str] | None) -> list[str] | None:
    """The pass list a ``slow`` finding's root cause names: none where its own timing
    says the target's load and save with no pass grows so (``growth: framework``), whatever
    pass localization named (a run of that list may have timed under the threshold on a
    loaded machine), else ``passes``; so every such finding is one root cause,
    ``(framework)``."""
    return [] if finding.detail.get("growth") == "framework" else passes


GROWTH = Handling(timed, scale_down, timing_fields, scaled_files, own_passes)

#: name -> steps beyond the common path (:class:`Handling`); a symptom's record names the
#: ones its findings take (:attr:`oracles.base.Symptom.handling`).
HANDLINGS: Registry[Handling] = Registry("handling", {"growth": GROWTH})


def handling_of(symptom_name: str) -> Handling | None:
    """The steps beyond the common path that findings of ``symptom_name`` take (its
    record's :attr:`~oracles.base.Symptom.handling`), or None.

    Raises:
        KeyError: an unknown symptom.
    """
    name = symptom(symptom_name).handling
    return HANDLINGS[name] if name is not None else None
