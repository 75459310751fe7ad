"""The root-cause key of a finding (:func:`key_and_culprit`): target, culprit pass, kind of
fault, crash site or footprint, so that one fault reached through many graphs, names and
symptoms is one bundle. :func:`key_of` takes it in the quick mode on the model as found: the
preliminary key that screening looks bundles up by.
"""

from __future__ import annotations

from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.rootcause import (
    REWRITE,
    breaking_and_enabling,
    fault_kind,
    model_names_of,
    root_cause_key,
    shared_cause_key,
)
from fuzzer.handling.growth import handling_of
from fuzzer.localize.culprit import Culprit, find_culprit
from fuzzer.targets import get_target
from oracles.base import Finding


def cuts_the_graph(target: Any, config: dict[str, Any], breaking: str) -> bool:
    """Whether the pass ``breaking`` alone is judged short of comparing outputs
    (``judge_until`` in the target's oracle context: a pass that cuts the graph, or whose
    output the target documents as non-conforming), so that the op types it removes or
    adds are the model's, not a rewrite's."""
    if breaking not in target.passes_of(config):
        return False
    alone = target.oracle_context(target.with_passes(config, [breaking]))
    return alone.get("judge_until", "compare") != "compare"


def key_of(sandbox: Sandbox, case: TestCase, finding: Finding, passes: list[str] | None,
           run: CaseResult, trigger: str | None = None) -> tuple[str, str, list[str]]:
    """``(root-cause key, culprit, enabling passes)`` of ``finding`` as
    :func:`key_and_culprit` takes it in the quick mode (each prefix judged by the oracles
    alone): the preliminary key of a finding on the model as found."""
    key, culprit = key_and_culprit(sandbox, case, finding, passes, run, trigger, deep=False)
    return key, culprit.culprit, culprit.enabling


def key_and_culprit(sandbox: Sandbox, case: TestCase, finding: Finding,
                    passes: list[str] | None, run: CaseResult, trigger: str | None = None,
                    deep: bool = True) -> tuple[str, Culprit]:
    """The root-cause key of ``finding`` whose minimal passes are ``passes`` and whose run
    with only those passes is ``run``, and its :class:`fuzzer.localize.culprit.Culprit`
    (:func:`fuzzer.localize.culprit.find_culprit`, runs through ``sandbox``; ``deep``
    judges declared shapes and stages a typed copy too), except for a finding the target
    explains by a cause outside any pass (:meth:`fuzzer.targets.base.Target.shared_cause`),
    keyed by that cause instead; the steps its symptom's record names
    (:attr:`oracles.base.Symptom.handling`) may replace ``passes`` (a ``slow`` finding
    whose growth is the target's own load and save names none);
    ``trigger`` is the trigger probes' sentence where they ran. Names the model and its
    optimized form give tensors, nodes and graphs are kept out of a message's core
    (:func:`fuzzer.findings.rootcause.model_names`)."""
    target = get_target(case.target)
    handling = handling_of(finding.symptom)
    if handling is not None:
        passes = handling.passes(finding, passes)
    cause = target.shared_cause(finding)
    if cause is not None:  # one cause whatever pass shows it: no blame runs, no footprint
        breaking, enabling = breaking_and_enabling(passes)
        return shared_cause_key(case.target, cause, finding), Culprit(breaking, enabling)
    culprit = find_culprit(sandbox, case, finding, passes, run, deep=deep)
    footprint = culprit.footprint
    if footprint and cuts_the_graph(target, case.config, culprit.culprit):
        footprint = ""  # it removes whole regions by design: the ops it removed are the model's
    exposed = culprit.exposed_by is not None
    arts = run.artifacts  # names matter only where a message is keyed: parse only then
    names = model_names_of(arts.model, arts.optimized) \
        if arts is not None and fault_kind(finding, exposed) != REWRITE else ()
    key = root_cause_key(case.target, culprit.culprit, finding, footprint,
                         target.anchors().get(culprit.culprit, ()), trigger, names,
                         exposed=exposed)
    return key, culprit
