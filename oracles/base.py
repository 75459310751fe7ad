"""Types shared by every oracle: what a worker observed (Outcome) and what an oracle reports
(Finding), plus the registry that maps a symptom to the function that detects it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fuzzer.registry import Registry

#: Stages a test passes through, in order; ``Outcome.stage`` names the last one entered.
STAGES: tuple[str, ...] = (
    "materialize",
    "reference",
    "optimize",
    "validate",
    "load",
    "execute",
    "compare",
    "done",
)


@dataclass
class Outcome:
    """Everything one differential test observed, handed to the oracles.

    Attributes:
        status: ``"ok"`` (every stage ran), ``"error"`` (an exception at ``stage``),
            ``"signal"`` (the worker died by signal ``signal`` during ``stage``),
            ``"sanitizer"`` (a sanitizer halted the worker during ``stage``; its report is
            ``extra["sanitizer_report"]``) or ``"timeout"`` (``stage`` outlived the
            per-case timeout, ``timeout`` seconds).
        stage: last stage entered, one of :data:`STAGES`.
        error: ``"<ExceptionType>: <message>"`` when status is ``"error"``.
        traceback: the formatted traceback text, where one exists.
        signal: the POSIX signal number that killed the worker.
        timeout: the per-case timeout in seconds.
        original: the input model (``onnx.ModelProto``), when the worker got that far.
        optimized: the target's output model, when it returned one.
        expected: reference outputs of the original, ``{output name: ndarray}`` in graph order.
        actual: outputs of the optimized model, same layout.
        task: task category of the model (``"classification"``, ``"detection"``,
            ``"segmentation"``, ``"text"``, ``"audio"``) or ``None``; task oracles use it.
        extra: free-form facts an oracle may need (JSON-able).
    """

    status: str
    stage: str
    error: str | None = None
    traceback: str | None = None
    signal: int | None = None
    timeout: float | None = None
    original: Any = None
    optimized: Any = None
    expected: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None
    task: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Finding:
    """One symptom observed in one test.

    Attributes:
        symptom: a registered symptom name (:data:`REGISTRY`).
        stage: the stage where it showed (one of :data:`STAGES`).
        message: one line: the first line of the error, or the comparison summary.
        detail: JSON-able facts behind the message (e.g. the output name and max abs error).
    """

    symptom: str
    stage: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the finding as a JSON-able dict."""
        return {"symptom": self.symptom, "stage": self.stage, "message": self.message,
                "detail": self.detail}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """Inverse of :meth:`to_json`."""
        return cls(data["symptom"], data["stage"], data["message"], dict(data.get("detail", {})))


Oracle = Callable[[Outcome], list[Finding]]

#: the classes a maintainer ranks symptoms by (:attr:`Symptom.severity_class`), most
#: severe first.
SEVERITY_CLASSES: tuple[str, ...] = ("wrong-output", "invalid-model", "crash", "hang", "size",
                                     "interface")


@dataclass(frozen=True)
class Symptom:
    """Everything optfuzz knows about one symptom (design.md, "Symptoms"): the one record
    that the oracles, signatures, localization, reduction, repro.py, replay, triage and the
    report all ask, so that they cannot disagree.

    Attributes:
        name: the symptom's name, e.g. ``"output-mismatch"``.
        severity: rank, lower is more severe (a crash hides the comparisons that could not
            run); :func:`symptom_names` and ``judge`` order by it.
        stages: the stages (:data:`STAGES`) at which it can show.
        detect: the oracle, a pure function ``Outcome -> list[Finding]``. repro.py carries
            the source of its module verbatim and calls it, so the bundle's own verdict is
            the campaign's.
        title: what the target does wrong, as the report's title says it after the pass
            name ("raises an exception").
        expected: the behaviour a maintainer should expect instead (one sentence).
        footprint: whether its root-cause key carries the footprint of the rewrite (the op
            types the breaking pass removed and added), because its message alone does not
            tell one wrong rewrite from another.
        key_detail: the ``Finding.detail`` field that stands for the message in the
            root-cause key, for a symptom whose message names values, not causes ("3 of 8
            values differ"); None keeps the message's core.
        confirm: whether it depends on timing or load, so that every verdict on it (it
            recurs, a pass list shows it, repro.py reproduces it) is the majority of
            :data:`VOTES` runs (:func:`by_majority`; AFL confirms a hang by a second run).
        reducible: whether reduction may run its candidates (a hang would cost the whole
            per-case timeout per candidate).
        severity_class: the class a maintainer ranks by, one of :data:`SEVERITY_CLASSES`
            (``wrong-output``, ``invalid-model``, ``crash``, ``hang``, ``size``,
            ``interface``).
        build: the instrumented build of the target the symptom needs to show
            (``"sanitize"``), or None where the installed target shows it.
        fault: the kind of fault it shows, which decides its root-cause key
            (design.md, "Root causes"): ``"rewrite"`` (a wrong rewrite, keyed by what the
            culprit pass did, whatever the consumers of its result show: every symptom of
            this kind is a variant of one bundle), ``"crash"`` (keyed by the crash site of
            the pass that raised or died) or ``""`` (a kind of its own, keyed with the
            symptom's name: size, interface, time).
        handling: the name of the steps beyond the common path that a campaign takes for
            its findings (an entry of :data:`fuzzer.handling.growth.HANDLINGS`:
            ``"growth"`` times every later run at three sizes, scales the model down
            before localization and ships the timed sizes in the bundle), or None.
        exactness: whether float64 runs may explain its finding as no bug (the optimized
            model is the float64 answer and the original is not, or float64 runs of both
            models agree: float32 rounding), so that a campaign runs them before keying it.
        outputs: whether its finding is about output values: its bundle ships the
            reference and the optimized outputs (``expected.npz``, ``actual.npz``) and its
            issue draft tabulates them.
        promise: whether its issue draft's "Expected" may name a promise of the target
            (where the bundle's ``verified`` says the behaviour is not one the target
            documents).
        quote: the ``Finding.detail`` field holding the report of the tool that saw it (a
            sanitizer's), which an issue draft quotes; None where there is none.
        corpus_column: the column of the corpus report (DiTOX's table,
            :data:`fuzzer.corpus.report.COLUMNS`) that counts a model showing it:
            ``crash_or_invalid``, ``output_discrepancy`` or ``metric_drift``; "" for none.
        words: what a user of the target sees, in a few words (the parenthesis that ends an
            issue draft's title), or a function of the finding's message that words it;
            "" shows the name (:meth:`seen_as`).
        no_model_because: why the target returns no optimized model, for a symptom that
            stops it before it returns ("the target raised an exception"); "" where it
            returns one.
        check: the kind of check by which the standalone repro of an issue draft tells
            that it shows (:data:`fuzzer.report.snippet.CHECKS`: ``crash``, ``timeout``,
            ``checker``, ``onnxruntime``, ``outputs``); "" where only the bundle's repro.py
            tests it.
        reproduced: what that check's ``reproduced`` means, for the draft's sentence ("the
            call does not finish").
        reduce_options: the options ``optfuzz reduce`` needs for it beyond the defaults,
            for a symptom a campaign does not reduce (not :attr:`reducible`) but the command
            does: a hanging candidate costs the whole per-case timeout, so a short one; ()
            where the command takes the defaults or does not reduce it either.
        observer: for a symptom that one run of model.onnx cannot show, the Python source
            of the ``observe()`` that a bundle's repro.py runs in place of its own (``slow``
            times the target on the sizes of ``scaling/``); "" for the others.
    """

    name: str
    severity: int
    stages: tuple[str, ...]
    detect: Oracle
    title: str
    expected: str
    footprint: bool = False
    key_detail: str | None = None
    confirm: bool = False
    reducible: bool = True
    severity_class: str = "crash"
    build: str | None = None
    fault: str = ""
    handling: str | None = None
    exactness: bool = False
    outputs: bool = False
    promise: bool = False
    quote: str | None = None
    corpus_column: str = ""
    words: str | Callable[[str], str] = ""
    no_model_because: str = ""
    check: str = ""
    reproduced: str = ""
    reduce_options: tuple[str, ...] = ()
    observer: str = ""

    def seen_as(self, message: str) -> str:
        """What a user of the target sees of a finding whose message is ``message``, in
        a few words (:attr:`words`, else the symptom's name)."""
        words = self.words(message) if callable(self.words) else self.words
        return words or self.name


#: symptom name -> its record; filled by :func:`register` when an oracle module is imported.
REGISTRY: Registry[Symptom] = Registry("symptom")


#: runs whose majority decides a verdict on a symptom that depends on timing or load
#: (``Symptom.confirm``): on a shared machine one disturbed or quiet run decides wrongly.
VOTES = 3


def by_majority(first: bool, again: Callable[[], bool], votes: int = VOTES) -> bool:
    """Whether most of ``votes`` runs show a thing: ``first`` is the first run's verdict,
    ``again()`` runs one more and gives its verdict; runs stop once a majority is reached
    (two agreeing runs of three decide, a third runs only where they disagree)."""
    need = votes // 2 + 1
    shown, hidden = int(first), int(not first)
    while shown < need and hidden < need:
        if again():
            shown += 1
        else:
            hidden += 1
    return shown >= need


def register(symptom: Symptom) -> Symptom:
    """Add ``symptom`` to the registry and return it.

    Raises:
        ValueError: a symptom of that name is already registered.
    """
    return REGISTRY.register(symptom.name, symptom)


def first_line(text: str | None, limit: int = 300) -> str:
    """Return the first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


#: ``AttributeProto.type`` values: UNDEFINED, GRAPH, GRAPHS.
_UNDEFINED, _GRAPH, _GRAPHS = 0, 5, 10


def subgraphs(node: Any) -> list[Any]:
    """GraphProtos held by ``node``'s attributes (If branches, Loop and Scan bodies). An
    attribute's declared type says whether it holds any (reading the type is a fraction of
    looking for the fields, and every oracle walks every node); an attribute without a type
    is searched."""
    found = []
    for attr in node.attribute:
        kind = attr.type
        if kind == _GRAPH or (kind == _UNDEFINED and attr.HasField("g")):
            found.append(attr.g)
        if kind == _GRAPHS or kind == _UNDEFINED:
            found.extend(attr.graphs)
    return found


def iter_graphs(graph: Any) -> Iterator[Any]:
    """Yield ``graph`` (a GraphProto) and every graph nested in it, depth first."""
    yield graph
    for node in graph.node:
        for sub in subgraphs(node):
            yield from iter_graphs(sub)


def count_nodes(graph: Any) -> int:
    """Nodes of ``graph`` (a GraphProto) including every subgraph's nodes."""
    return sum(len(g.node) for g in iter_graphs(graph))


def op_counts(graph: Any) -> Counter[str]:
    """How many nodes of each op type ``graph`` (a GraphProto) holds, subgraphs included."""
    return Counter(n.op_type for g in iter_graphs(graph) for n in g.node)
