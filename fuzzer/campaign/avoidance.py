"""Known-fault avoidance: generator features that a frequent known fault absorbs are left out
of most of a campaign's generated cases, so those cases go to the faults behind it.

A fault that an optimizer meets on most models of one generator feature masks every other
fault those models hold: the run ends in the known crash or invalid model, and the case is
only a hit. In a 10-minute onnxslim campaign, two faults took 18% of all cases this way: the
exporter's ``UnboundLocalError`` on every ``optional(tensor)`` graph output, and the IR 3
initializers that are no longer listed as graph inputs after onnxslim, on every model of
opsets 7 and 8. Swarm testing (Groce, Zhang, Eide, Chen and Regehr, "Swarm Testing", ISSTA
2012) counters such masking by leaving random features out of each test; compiler fuzzing
campaigns also turn off, by hand, the features of bugs already reported. Here the campaign
learns them from its own cases:

- A feature is a generator choice a case can be made without (:data:`generators.hints.
  FEATURE_KINDS`): a motif, an interface form, IR 3 for opsets 7 and 8.
- Each usable generated case counts once for each of its features, with what it ended in
  (its *ending*): the documented behaviour it showed, or its first finding before
  localization, as its symptom and the finer of its root-cause core
  (:class:`fuzzer.findings.signature.FindingCore`) and its normalized message. A core that
  is a rule's sentence (``ValidationError: <name> in initializer but not in graph input``)
  is finer than the message, which names the initializer; a core of a word or two (an
  inference error's category, ``InferenceError: ShapeInferenceError``, that many faults
  share) is coarser, and then the message stands.
- Once :data:`MIN_CASES` cases had a feature and one such ending took at least :data:`SHARE` of
  them, the feature is avoided: the generated cases drawn from then on name it in their
  source's ``avoid`` (:attr:`generators.hints.GenerationHints.avoid`), and the generator
  draws another motif, no interface form of it, or IR 4.
- One case in :data:`EXPLORE_ONE_IN` (by its seed: :func:`exploring`) keeps every
  feature, so that a fault behind the
  known one stays reachable, and the share stays measured: a feature whose share drops below
  :data:`SHARE` (the known fault fixed, say, within a resumed campaign) is drawn again.

A case records what it avoided, so it regenerates the same model. The order of the stream
depends on the campaign's findings, as guided mode's does.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.signature import FindingCore, normalize_message

#: cases a feature must have had before it can be avoided.
MIN_CASES = 40
#: share of a feature's cases one ending must take for the feature to be avoided.
SHARE = 0.8
#: one generated case in this many keeps every feature.
EXPLORE_ONE_IN = 10
#: distinct endings counted per feature; past it the rarest are dropped (a feature's share
#: only needs its most frequent ending).
MAX_ENDINGS = 64
#: words from which a finding's root-cause core is a rule's sentence, finer than its message.
RULE_WORDS = 4


def exploring(source: dict[str, Any]) -> bool:
    """Whether a generated case keeps every feature whatever is avoided: one seed in
    :data:`EXPLORE_ONE_IN`, by the seed's top bits (the case seed is a sha256 digest,
    :func:`fuzzer.campaign.stream.case_seed`), so that any process decides alike."""
    return (int(source.get("seed", 0)) >> 40) % EXPLORE_ONE_IN == 0


def drawn_freely(source: dict[str, Any]) -> bool:
    """Whether a case's source is a generated model whose features were drawn, not named
    (``with_motifs``: exactly these motifs): the cases avoidance counts and edits."""
    return source.get("kind") == "generated" and not source.get("with_motifs")


def avoiding(case: TestCase, avoid: list[str]) -> TestCase:
    """``case`` with ``avoid`` (feature names, sorted) in its source where it is drawn
    freely (:func:`drawn_freely`) and not an exploring one (:func:`exploring`); else
    ``case`` itself."""
    source = case.source
    if not avoid or not drawn_freely(source) or exploring(source):
        return case
    return dataclasses.replace(case, source={**source, "avoid": list(avoid)})


def features(source: dict[str, Any]) -> list[str]:
    """The avoidable features of a generated case's model, from its result's provenance
    (``{"motifs", "interfaces", "ir_version", ...}``,
    :func:`generators.materialize.materialize`): ``motif:<name>``, ``interface:<name>``,
    and ``ir:3``."""
    out = [f"motif:{m}" for m in dict.fromkeys(source.get("motifs") or ())]
    out += [f"interface:{f}" for f in source.get("interfaces") or ()]
    if source.get("ir_version") == 3:
        out.append("ir:3")
    return out


@dataclasses.dataclass(frozen=True)
class Avoided:
    """One avoided feature: its name, the cases that had it, and the ending that took
    ``share`` of them (its text, cut to 200 characters)."""

    feature: str
    cases: int
    share: float
    ending: str


class KnownFaultAvoidance:
    """The features a campaign's generated cases leave out (module docstring).

    Thread-safe: results are observed and cases drawn on different threads.
    """

    def __init__(self) -> None:
        self._cases: Counter[str] = Counter()
        self._endings: dict[str, Counter[str]] = {}
        self._avoided: dict[str, Avoided] = {}
        self._lock = threading.Lock()

    @property
    def avoided(self) -> list[Avoided]:
        """The features avoided now, by name."""
        with self._lock:
            return sorted(self._avoided.values(), key=lambda a: a.feature)

    def names(self) -> list[str]:
        """The names of the features avoided now, sorted."""
        with self._lock:
            return sorted(self._avoided)

    def apply(self, case: TestCase) -> TestCase:
        """``case`` avoiding the features avoided now (:func:`avoiding`)."""
        return avoiding(case, self.names())

    def observe(self, case: TestCase, result: CaseResult) -> list[str]:
        """Count a finished generated case under each of its features, with its ending
        (module docstring); the features whose avoidance this changed, each as
        ``"+feature"`` (now avoided) or ``"-feature"`` (drawn again)."""
        if not drawn_freely(case.source) or result.unusable:
            return []
        ending = _ending(result)
        changed = []
        with self._lock:
            for feature in features(result.source or {}):
                self._cases[feature] += 1
                endings = self._endings.setdefault(feature, Counter())
                if ending is not None:
                    endings[ending] += 1
                    if len(endings) > MAX_ENDINGS:
                        endings.pop(min(endings, key=endings.__getitem__))
                change = self._judge(feature)
                if change:
                    changed.append(change)
        return changed

    def _judge(self, feature: str) -> str:
        cases = self._cases[feature]
        if cases < MIN_CASES:
            return ""
        top = self._endings[feature].most_common(1)
        share = top[0][1] / cases if top else 0.0
        if share >= SHARE:
            known = feature in self._avoided
            self._avoided[feature] = Avoided(feature, cases, round(share, 3), top[0][0][:200])
            return "" if known else f"+{feature}"
        if feature in self._avoided:
            del self._avoided[feature]
            return f"-{feature}"
        return ""

    def to_json(self) -> list[dict[str, Any]]:
        """The avoided features, for campaign.json (``feature``, ``cases``, ``share``,
        ``ending``)."""
        return [dataclasses.asdict(a) for a in self.avoided]


def _ending(result: CaseResult) -> str | None:
    """What a case ended in (module docstring): its documented behaviour, the symptom and
    the core or the normalized message of its first finding, or None (no finding)."""
    if result.documented:
        return f"documented: {result.documented}"
    if result.findings:
        finding = result.findings[0]
        core = FindingCore.of(finding)
        if core.detail is not None and len(core.core.split()) >= RULE_WORDS:
            return f"{finding.symptom}: {core.core}"
        return f"{finding.symptom}: {normalize_message(finding.message)}"
    return None
