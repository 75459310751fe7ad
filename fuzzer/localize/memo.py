"""A campaign's memory of localizations, so that a repeat sighting costs one confirming run."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import FindingCore
from fuzzer.localize.search import Localization, Prober, localize
from oracles import symptom
from oracles.base import Finding

#: remembered answers tried on a case before its own search (each costs one run; a search
#: costs about eight on onnxoptimizer's default list).
TRIES = 3
#: answers remembered per finding (latest first).
KEPT = 8
#: answers remembered by their exact key (pass list included), least recently used dropped
#: first: a campaign draws a new pass list for most cases, so unbounded, this memory grows by
#: a key of about 0.6 KB per finding (45,000 findings in an hour-long soak on onnxoptimizer).
KNOWN = 4096


class LocalizationMemo:
    """Localizations already made in a campaign, keyed by what a finding looks like before
    localization: target, configured pass list, fixed_point, and the finding's core
    (:class:`fuzzer.findings.signature.FindingCore`).

    A finding seen again with the same key costs one confirming run (the remembered
    responsible passes alone, which also gives the run the signature's graph hash is taken
    from) instead of a full search; where the confirmation fails, the other answers below
    are tried before a search (two passes that break a model alike, met with the same list).

    A campaign draws a new pass list for most cases, so the same finding mostly comes with
    another list. Then up to :data:`TRIES` of the answers remembered for the same target,
    fixed_point and core whose passes the new list holds are each tried alone, in the new
    list's order, before a search (those the run's own evidence points to first): a known
    bug is recognised in one run. An answer that
    does not reproduce the finding's core proves nothing and the search runs; one that does
    is a responsible pass set of this case as the search defines it, the one a campaign
    already knows (where two passes fail alike on one model, the search too takes the first
    single suspect that reproduces).
    """

    def __init__(self) -> None:
        self._known: OrderedDict[tuple, list[str] | None] = OrderedDict()
        self._answers: dict[tuple, list[tuple[str, ...]]] = {}
        self.saved_searches = 0

    @classmethod
    def of_bundles(cls, metas: Iterable[Any]) -> LocalizationMemo:
        """A memo that knows the answers of a folder's bundles (``BundleMeta``: ``target``
        with its ``name`` and ``config``, ``symptom``, ``message``, ``responsible_passes``),
        so that a resumed campaign or ``optfuzz triage --pending`` recognises a known fault
        in one run. A hang's search runs each pass list that hangs up to the whole timeout,
        again until most runs agree; where a bundle's passes are tried first, a known hang
        costs the two runs that confirm them (an onnxslim hang in ``triage --pending``:
        1.9 minutes with its own confirmation, against about 2.7 with a search).

        Only bundles whose symptom keys on the message (no ``Symptom.key_detail``: a hang,
        an exception) are learnt; a key detail such as an invalid model's rule is not in
        meta.json, and those findings cost no timeouts to search anyway. A bundle without
        localized passes, or of a symptom no oracle registers, is left out."""
        memo = cls()
        for meta in metas:
            try:
                keyed_on_message = symptom(meta.symptom).key_detail is None
            except KeyError:
                continue
            if keyed_on_message and meta.responsible_passes:
                memo.learn(meta.target.name, bool(meta.target.config.get("fixed_point", False)),
                           FindingCore.of_parts(meta.symptom, meta.message),
                           meta.responsible_passes)
        return memo

    def learn(self, target: str, fixed_point: bool, core: FindingCore,
              passes: Sequence[str]) -> None:
        """Remember ``passes`` as an answer to the findings of ``core`` on ``target``
        (with ``fixed_point`` as given), to be tried before a search of a case whose pass
        list holds them."""
        self._remember((target, (), fixed_point, core), tuple(passes))

    @staticmethod
    def key(case: TestCase, finding: Finding) -> tuple:
        """The memo key of ``finding`` in ``case``."""
        return (case.target, tuple(case.config.get("passes") or ()),
                bool(case.config.get("fixed_point", False)), FindingCore.of(finding))

    def localize(self, sandbox: Any, case: TestCase, result: CaseResult,
                 finding: Finding, max_seconds: float | None = None) -> Localization:
        """Like :func:`fuzzer.localize.search.localize`, reusing earlier answers; a search
        cut short by ``max_seconds`` is not remembered."""
        key = self.key(case, finding)
        if key in self._known:
            self._known.move_to_end(key)
            if self._known[key] is None:
                self.saved_searches += 1
                return Localization(None, 0, "memo")
        for passes in self._candidates(case, result, finding, key):
            known = self._confirmed(sandbox, case, finding, key, passes)
            if known is not None:
                self._know(key, list(passes))
                self._remember(key, passes)
                return known
        where = localize(sandbox, case, result, finding, max_seconds=max_seconds)
        if where.method != "budget":
            self._know(key, where.passes)
            if where.passes is not None:
                self._remember(key, tuple(where.passes))
        return where

    def _know(self, key: tuple, passes: list[str] | None) -> None:
        """Remember ``passes`` as the answer for ``key``; past :data:`KNOWN` answers, the
        least recently used one is forgotten."""
        self._known[key] = passes
        self._known.move_to_end(key)
        while len(self._known) > KNOWN:
            self._known.popitem(last=False)

    def _confirmed(self, sandbox: Any, case: TestCase, finding: Finding, key: tuple,
                   passes: tuple[str, ...]) -> Localization | None:
        """The memo's answer ``passes`` where running them alone reproduces ``finding``."""
        probe = Prober(sandbox, case, finding, key[2])
        if not probe.test(passes):
            return None
        self.saved_searches += 1
        return Localization(list(passes), probe.runs, "memo", None, probe.result(passes))

    def _candidates(self, case: TestCase, result: CaseResult, finding: Finding,
                    key: tuple) -> list[tuple[str, ...]]:
        """Remembered answers to try on ``case``, at most :data:`TRIES`: the answer of its
        exact key first, then those of the same finding that ``case``'s pass list holds
        (each in that list's order), the ones the run's own evidence points to first
        (passes the message names, or whose anchor op types changed:
        :func:`fuzzer.localize.search.suspects`), else latest first. The empty answer (the
        finding shows with no pass: the target's own load and save) goes before all, as
        the search tries it first: where it reproduces, a remembered pass list would too,
        and would blame a pass for what no pass did (onnxslim drops a Constant's
        ``sparse_value`` on its own; a memo that tried a fusion's answer first filed it
        under that fusion, one bundle per pass that had met it)."""
        from fuzzer.localize.search import suspects
        from fuzzer.targets import get_target

        exact = self._known.get(key)
        target = get_target(case.target)
        configured = target.passes_of(case.config)
        held = set(configured)
        out = [tuple(exact)] if exact is not None else []
        for passes in self._answers.get(_loose(key), []):
            wanted = set(passes)
            ordered = tuple(p for p in configured if p in wanted)
            if wanted <= held and ordered not in out:
                out.append(ordered)
        if len(out) > 1 + (exact is not None):
            pointed = set(suspects(target.anchors(), configured, result, finding)[1])
            first = out[:1] if exact is not None else []
            rest = out[len(first):]
            out = first + sorted(rest, key=lambda passes: not set(passes) & pointed)
        if () in out:  # the target's own load and save: any other answer would not be minimal
            out.remove(())
            out.insert(0, ())
        return out[:TRIES]

    def _remember(self, key: tuple, passes: tuple[str, ...]) -> None:
        answers = self._answers.setdefault(_loose(key), [])
        if passes in answers:
            answers.remove(passes)
        answers.insert(0, passes)
        del answers[KEPT:]


def _loose(key: tuple) -> tuple:
    """A memo key without its pass list: target, fixed_point, finding core."""
    return key[0], key[2], key[3]
