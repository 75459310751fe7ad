"""The culprit: of a finding's minimal pass subsequence, the first pass whose output is already
wrong (design.md, "Root causes").

Localization (:mod:`fuzzer.localize.search`) finds the minimal pass subsequence whose run
shows the finding; the symptom shows in its last pass, but that pass may only trip over what
an earlier one broke (onnxoptimizer 0.4.2: ``eliminate_consecutive_idempotent_ops`` writes an
unknown shape as rank 0 into value_info, and ``eliminate_nop_split`` then copies it onto a
graph input). So the subsequence runs one prefix at a time and every intermediate model is
judged:

1. by the campaign's own oracles on the prefix's run: checker and strict shape inference,
   loading and running in onnxruntime, outputs against the original (only the symptoms of a
   wrong rewrite count: a prefix may leave dead nodes that a later pass removes);
2. by the declared shapes of its tensors against the shapes onnxruntime computes
   (:func:`fuzzer.localize.intermediate.declared_shape_damage`), less what the input model
   itself declares wrongly;
3. where neither shows damage with the model as it is, all over again on a *typed copy*
   (:func:`fuzzer.localize.intermediate.typed_copy`), because a serialization may drop the
   damage (onnx IR writes no value_info for a value of unknown element type);
4. where still no saved intermediate is wrong and the target's run is nothing but its passes
   applied in turn (:attr:`fuzzer.targets.base.Target.splits_at_saved_models`), by splitting
   the run: the rest of the passes run on each saved intermediate in a run of their own. Where
   that shows nothing, the damage lived only in what the whole run handed from one pass to the
   next in memory (onnxoptimizer 0.4.2's ``eliminate_if_with_const_cond`` inlines a branch
   whose nodes still read the branch's captured value, which saves under the graph input's
   name, and ``rename_input_output`` then renames the input and not that value).

A fixed-point configuration is staged running its list once through: a pass whose single run
already leaves a wrong model is at fault whatever repeating the list adds; it is split only
where the list run once through shows the damage too. A crash with no site of its own (an out-
of-bounds read that crashes in one run and not the next) is never split. The culprit is the
first pass after which an intermediate is wrong; the last pass then only exposed the damage
(:attr:`Culprit.exposed_by`). A prefix that itself crashes (a pass that reads what it should
not may crash or not from one run to the next, and localization then keeps a later pass it did
not need) names its last pass as the culprit of that crash. Where no intermediate is wrong,
the last pass is the culprit and the others enabled it. Each prefix costs one sandbox run and,
in the deep mode, one call of each judgement; a target that cannot run a prefix of its
configuration (:meth:`fuzzer.targets.base.Target.stages`) is not staged and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.rootcause import (
    CRASH,
    REWRITE,
    SITELESS,
    breaking_and_enabling,
    footprint_of,
)
from fuzzer.localize.intermediate import declared_shape_damage, typed_copy
from fuzzer.targets import get_target
from oracles import symptom
from oracles.base import Finding

#: how the intermediates were staged (:attr:`Culprit.staging`).
PLAIN, TYPED, SPLIT, NOT_STAGED, ONE_PASS = ("plain", "typed", "split", "not staged",
                                             "one pass")


@dataclass
class Culprit:
    """The pass at fault for a finding and what it did.

    Attributes:
        culprit: the pass at fault (``(framework)`` or ``(unlocalized)`` where no pass is).
        enabling: the rest of the minimal pass subsequence, in order.
        footprint: the culprit's own change on the minimized model
            (:func:`fuzzer.findings.rootcause.op_footprint`: its input against its output),
            where one was taken; None where the finding has no model to compare.
        exposed_by: the pass the symptom showed in, where that is not the culprit (it
            tripped over the culprit's damage); None otherwise.
        damage: what was wrong right after the culprit (one sentence), where a judged
            intermediate showed it.
        staging: how the intermediates were staged: ``plain``, ``typed`` (only a copy
            whose values declare their element types showed the damage), ``split`` (no
            saved intermediate was wrong, but the later passes run on a saved one showed
            nothing: the damage was handed over in memory), ``one pass`` (nothing to
            stage), ``not staged`` (the target cannot run a prefix).
        runs: sandbox runs and calls spent.
    """

    culprit: str
    enabling: list[str]
    footprint: str | None = None
    exposed_by: str | None = None
    damage: str | None = None
    staging: str = PLAIN
    runs: int = 0

    def to_json(self) -> dict[str, Any]:
        """The meta.json fields of this judgement (``exposed_by``, ``damage``,
        ``culprit_staging``)."""
        return {"exposed_by": self.exposed_by, "damage": self.damage,
                "culprit_staging": self.staging}


def _footprint(case: TestCase, culprit: str, before: bytes | None,
               after: bytes | None) -> str | None:
    """The op footprint of ``culprit`` from ``before`` to ``after`` with its anchors
    (:func:`fuzzer.findings.rootcause.footprint_of`)."""
    return footprint_of(before, after, get_target(case.target).anchors().get(culprit, ()))


def run_with_passes(sandbox: Any, case: TestCase, passes: list[str] | None) -> CaseResult:
    """Run ``case`` (its ``model_bytes`` set) through ``sandbox`` with only ``passes``
    (None: its own configuration), artifacts kept."""
    config = case.config if passes is None else \
        get_target(case.target).with_passes(case.config, passes)
    return sandbox.run(case.with_config(config).with_model(case.model_bytes, keep=True))


def _judged(case: TestCase, passes: list[str], result: CaseResult) -> tuple[str, str] | None:
    """``(kind, sentence)`` of the first finding of ``result`` (a prefix's run) that the
    target does not document and that is a wrong rewrite (kind ``rewrite``) or a crash
    (kind ``crash``: the prefix itself crashed, so its last pass is at fault and the later
    ones never ran); None where there is none."""
    target = get_target(case.target)
    config = target.with_passes(case.config, passes)
    for found in result.findings:
        kind = symptom(found.symptom).fault
        if kind in (REWRITE, CRASH) and target.documented(found, config) is None:
            return kind, f"gives a model with {found.symptom}: {found.message}"
    return None


def _shape_damage(sandbox: Any, model: bytes | None, feeds: dict[str, Any]) -> list[str]:
    """:func:`declared_shape_damage` of ``model`` in a worker; [] where it cannot run."""
    if model is None:
        return []
    try:
        return sandbox.call(declared_shape_damage, model, dict(feeds))
    except Exception:  # the worker died or timed out: nothing shown
        return []


def find_culprit(sandbox: Any, case: TestCase, finding: Finding, passes: list[str] | None,
                 run: CaseResult, deep: bool = True) -> Culprit:
    """The culprit of ``finding``, whose minimal pass subsequence is ``passes`` and whose
    run with only those passes is ``run`` (see the module docstring).

    Args:
        sandbox: the :class:`fuzzer.execution.sandbox.Sandbox` every run and judgement goes
            through.
        case: the case (its configuration; the model is ``run``'s).
        finding: the finding; its symptom decides whether footprints are taken.
        passes: the minimal pass subsequence (None: not localized; []: no pass needed).
        run: the run of the model with ``passes`` only, artifacts kept.
        deep: judge declared shapes and stage a typed copy (a new root cause's final key);
            False judges each prefix by the oracles alone (a preliminary key, taken per
            finding).

    Raises:
        SandboxError: the worker pool stopped.
    """
    culprit, enabling = breaking_and_enabling(passes)
    record = symptom(finding.symptom)
    arts = run.artifacts
    if arts is None:
        return Culprit(culprit, enabling, staging=NOT_STAGED)
    target = get_target(case.target)
    wants = record.fault == REWRITE or record.footprint
    if not passes or not record.reducible or \
            (len(passes) == 1 and not target.saves_its_own_form):
        footprint = _footprint(case, culprit, arts.model, arts.optimized) if wants else None
        return Culprit(culprit, enabling, footprint, staging=ONE_PASS)
    once = target.relaxations(case.config).get("fixed_point")  # the list run once through
    base = case.with_model(arts.model, feeds=arts.feeds, input_shapes=None)
    if once is not None:
        base = base.with_config(once)
    verdict = Culprit(culprit, enabling, staging=PLAIN)
    start = arts.model
    if target.saves_its_own_form:  # what no pass at all makes of it
        empty = run_with_passes(sandbox, base, [])
        verdict.runs += 1
        if empty.artifacts is not None and empty.artifacts.optimized is not None:
            start = empty.artifacts.optimized
    if len(passes) == 1 or not target.stages(case.config):
        verdict.footprint = _footprint(case, culprit, start, arts.optimized) if wants else None
        verdict.staging = ONE_PASS if len(passes) == 1 else NOT_STAGED
        return verdict
    plain = _stage(sandbox, base, passes, start, arts.feeds, deep, verdict)
    if verdict.culprit == passes[-1] and deep:  # no prefix judged wrong as it was saved
        typed = _typed(sandbox, arts.model, verdict)
        if typed is not None:
            _stage(sandbox, base.with_model(typed, feeds=arts.feeds), passes, typed,
                   arts.feeds, deep, verdict, TYPED)
    if verdict.culprit == passes[-1] and deep and target.splits_at_saved_models and \
            not SITELESS.search(finding.message) and \
            (once is None or _shows_once(sandbox, base, passes, verdict)):
        _split(sandbox, base, passes, plain, arts.feeds, verdict)  # no saved one was wrong
    if verdict.culprit == passes[-1]:
        verdict.footprint = _footprint(case, culprit, plain[-1], arts.optimized) \
            if wants else None
    return verdict


def _split(sandbox: Any, base: TestCase, passes: list[str], after: list[bytes],
           feeds: dict[str, Any], verdict: Culprit) -> None:
    """Run the rest of ``passes`` on each saved intermediate (``after[k]``, the model after
    ``passes[:k]``) in a run of its own; at the first split whose run shows nothing wrong,
    the damage lived only in the state the whole run handed from ``passes[k - 1]`` to the
    next pass in memory, provided the whole run, once more, still shows it (a control: a
    pass that reads out of bounds crashes in one run and not the next): set ``verdict``'s
    culprit to ``passes[k - 1]``."""
    for k in range(1, len(passes)):
        if after[k] is after[k - 1]:  # that prefix saved no model of its own
            continue
        rest = run_with_passes(sandbox, base.with_model(after[k], feeds=feeds), passes[k:])
        verdict.runs += 1
        if rest.unusable or _judged(base, passes[k:], rest) is not None:
            continue
        if not _shows_once(sandbox, base, passes, verdict):
            return  # the whole run no longer shows it either: a flaky finding, not a split
        verdict.culprit, verdict.exposed_by = passes[k - 1], passes[-1]
        verdict.enabling = passes[:k - 1] + passes[k:]
        verdict.damage = ("hands the next pass a graph whose damage saving hides: run on its "
                          f"saved model in a call of their own, {', '.join(passes[k:])} "
                          "show nothing wrong")
        verdict.staging = SPLIT
        verdict.footprint = _footprint(base, verdict.culprit, after[k - 1], after[k])
        return


def _shows_once(sandbox: Any, base: TestCase, passes: list[str], verdict: Culprit) -> bool:
    """Whether ``passes`` run once more through ``base``'s configuration (a fixed-point one
    run once through) show a wrong rewrite or a crash: the condition to split a
    fixed-point finding like a single run, and the control run of a split."""
    verdict.runs += 1
    return _judged(base, passes, run_with_passes(sandbox, base, passes)) is not None


def _typed(sandbox: Any, model: bytes, verdict: Culprit) -> bytes | None:
    """The typed copy of ``model`` made in a worker, or None."""
    verdict.runs += 1
    try:
        return sandbox.call(typed_copy, model)
    except Exception:  # the worker died on shape inference: no typed staging
        return None


def _stage(sandbox: Any, base: TestCase, passes: list[str], start: bytes,
           feeds: dict[str, Any], deep: bool, verdict: Culprit,
           staging: str = PLAIN) -> list[bytes]:
    """Run every proper prefix of ``passes`` on ``base``'s model, shortest first, and judge
    each intermediate; at the first wrong one set ``verdict``'s culprit, enabling passes,
    exposing pass, damage, footprint and ``staging``, and stop. Returns the models after
    each prefix run, ``start`` (the model before any pass) first."""
    already = set(_shape_damage(sandbox, base.model_bytes, feeds)) if deep else set()
    verdict.runs += deep
    after = [start]
    for length in range(1, len(passes)):
        prefix = passes[:length]
        prepared = run_with_passes(sandbox, base, prefix)
        verdict.runs += 1
        made = prepared.artifacts.optimized if prepared.artifacts is not None else None
        after.append(made if made is not None else after[-1])
        judged = _judged(base, prefix, prepared)
        if judged is not None and judged[0] == CRASH:  # a crash of this pass's own
            # (a proper prefix: the culprit is never the last pass, so find_culprit knows)
            verdict.culprit, verdict.enabling = passes[length - 1], passes[:length - 1]
            verdict.staging = staging
            break
        damage = judged[1] if judged is not None else None
        if damage is None and deep and made is not None:
            verdict.runs += 1
            shapes = [d for d in _shape_damage(sandbox, made, feeds) if d not in already]
            damage = f"writes a wrong shape: {shapes[0]}" if shapes else None
        if damage is not None:
            verdict.culprit = passes[length - 1]
            verdict.enabling = passes[:length - 1] + passes[length:]
            verdict.exposed_by = passes[-1]
            verdict.damage = damage
            verdict.staging = staging
            verdict.footprint = _footprint(base, verdict.culprit, after[-2], after[-1])
            break
    return after
