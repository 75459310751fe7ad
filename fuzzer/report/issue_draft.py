"""report.md of a bundle: an issue draft a maintainer can paste into the upstream tracker
as it is: a distinct title naming the culprit and its fault (:mod:`fuzzer.report.title`), the
culprit and what it damaged (where a later pass only exposed it), the trigger, a standalone
repro of a few lines that parses the minimized model from its ONNX text
(:mod:`fuzzer.report.snippet`), the minimized graph and the optimized graph as ONNX text,
expected vs actual with the size of a difference (every message in a fenced code block
that nothing inside can close), the environment (:mod:`fuzzer.report.environment`), the
picture of the graph before and after, the bundle's id, state, regression range, versions
checked and the ``gh issue create`` line (:mod:`fuzzer.report.tracker`), and optfuzz's keys,
seeds and counts in a collapsed block at the end.

``render_issue_draft(meta, repro)`` alone words everything from meta.json (the repro shown
is then the target's call alone); with the minimized model (as the campaign passes it when
it creates a bundle) the draft carries the standalone repro, its inputs written out from
``feeds`` or the bundle's inputs.npz (drawn with a fixed seed where neither is at hand);
``optfuzz report`` adds the run of the attached model that "Actual" is worded from, the
picture and the attachment's name. A bundle without a root-cause key gets the title of its
breaking pass, responsible passes or pass list; one without ``exposed_by`` and ``damage``
(written before the culprit search) opens without the culprit's damage.
:mod:`fuzzer.report.refresh` words report.md again from meta.json as hits grow, keeping the
parts an earlier run of the model worded (:class:`EarlierRun`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzer.report.environment import environment_section
from fuzzer.report.expected_actual import Observation, expected_actual_section
from fuzzer.report.fault import listed
from fuzzer.report.markdown import code_span, fenced, plain
from fuzzer.report.repro import repro_context, trigger_snippet
from fuzzer.report.snippet import StandaloneRepro, standalone_repro
from fuzzer.report.timing import timing_markdown
from fuzzer.report.title import breaking_pass, issue_title, pass_phrase, trigger_clause
from fuzzer.report.tracker import status_section
from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import read_npz
from oracles import load_oracles
from oracles import symptom as symptom_record
from oracles.base import count_nodes

#: lines of ONNX text shown inline; the rest is cut with a note.
MAX_TEXT_LINES = 120
#: characters per line of ONNX text (long initializer values are cut).
MAX_TEXT_WIDTH = 160
#: heading of the optimized model's section (:mod:`fuzzer.report.refresh` finds it by it).
OPTIMIZED_HEADING = "## The optimized model"


def trigger_sentence(meta: BundleMeta) -> str:
    """The trigger as a sentence for the body: the trigger probes' ``needs ...`` and
    ``survives ...`` (:mod:`fuzzer.reduce.probes`) get a subject; any other text is
    capitalized and ends with a period."""
    text = " ".join((meta.trigger or "").split()).rstrip(".")
    for prefix, template in (("needs ", "The model needs {} to show the bug."),
                             ("survives ", "The bug still shows with {}.")):
        if text.startswith(prefix):
            return template.format(text[len(prefix):])
    return text[:1].upper() + text[1:] + "." if text else ""


def _names(passes: list[str]) -> str:
    return listed([f"`{p}`" for p in passes])


def enabling_sentence(meta: BundleMeta) -> str:
    """``"It needs `a` to run before it and `b` to run after it."`` for the breaking pass's
    enabling passes (their side taken from the minimal pass list's order); empty without
    enabling passes."""
    breaking = breaking_pass(meta)
    enabling = [p for p in meta.enabling_passes or [] if p != breaking]
    if not breaking or not enabling:
        return ""
    order = meta.responsible_passes or meta.target.passes
    if breaking not in order or not set(enabling) <= set(order):
        return f"It needs {_names(enabling)} to run too."
    at = order.index(breaking)
    before = [p for p in enabling if order.index(p) < at]
    after = [p for p in enabling if order.index(p) > at]
    sides = [f"{_names(ps)} to run {side} it" for ps, side in
             ((before, "before"), (after, "after")) if ps]
    return f"It needs {' and '.join(sides)}."


def config_passes(meta: BundleMeta) -> list[str] | None:
    """The pass list repro.py and the report run (:func:`fuzzer.report.repro.repro_context`),
    or None where the configuration names none (the target's default)."""
    passes = repro_context(meta)["config"].get("passes")
    return None if passes is None else list(passes)


def pass_list_line(meta: BundleMeta) -> str:
    """Which pass list the repro runs, and why that one."""
    passes = config_passes(meta)
    shown = "the target's default pass list" if passes is None else f"`{passes}`"
    if meta.localized:
        return (f"Pass list: {shown}, the minimal part of the configuration the bug was found "
                "with that still shows it.")
    return f"Pass list: {shown}, the configuration the bug was found with (not localized)."


def model_text(model: Any, file: str = "model.onnx") -> str:
    """The ONNX text of ``model`` (a ModelProto or its bytes; ``onnx.printer.to_text``),
    at most :data:`MAX_TEXT_LINES` lines of at most :data:`MAX_TEXT_WIDTH` characters, with
    a note where it was cut (naming ``file``, which holds the whole graph); a note alone
    where onnx cannot print it."""
    import onnx

    model = _parsed(model)
    if model is None:
        return f"(not an ONNX model: {file} does not parse)"
    try:
        lines = onnx.printer.to_text(model).rstrip("\n").splitlines()
    except Exception as exc:  # a model the printer does not handle: the attachment has it
        return f"(onnx cannot print this model as text: {' '.join(str(exc).split())})"
    shown = [ln if len(ln) <= MAX_TEXT_WIDTH else ln[:MAX_TEXT_WIDTH] + " ..."
             for ln in lines[:MAX_TEXT_LINES]]
    if len(lines) > MAX_TEXT_LINES:
        shown.append(f"... ({len(lines) - MAX_TEXT_LINES} more lines; the whole graph is in "
                     f"{file})")
    elif len(shown) != len(lines) or any(s != ln for s, ln in zip(shown, lines, strict=True)):
        shown.append(f"... (long lines cut; the whole graph is in {file})")
    return "\n".join(shown)


def _nodes(count: int) -> str:
    return f"{count} node" + "s" * (count != 1)


def _hits(count: int) -> str:
    return f"{count} hit" + "s" * (count != 1)


def _sentence(value: Any) -> str | None:
    """A one-line text field (``exposed_by``, ``damage``), or None where it is unset or not
    a string."""
    if not isinstance(value, str) or not value.strip():
        return None
    return " ".join(value.split())


def symptom_hits(meta: BundleMeta) -> dict[str, int]:
    """The symptoms the bundle's fault was seen with and their hits (meta.json's
    ``symptoms``), most hits first."""
    return dict(sorted(meta.symptoms.items(), key=lambda item: (-item[1], item[0])))


def symptoms_line(meta: BundleMeta) -> str:
    """One line: the hits in all (meta.json's ``hits``), when, and each symptom seen with its
    hits."""
    seen = ", ".join(f"`{name}` ({_hits(count)})" for name, count in symptom_hits(meta).items())
    return (f"{_hits(meta.hits)} between {meta.first_seen} and {meta.last_seen}; symptoms "
            f"seen: {seen}")


def culprit_sentence(meta: BundleMeta) -> str:
    """The opening sentence of a bundle whose meta.json names what the culprit (the breaking
    pass) already damaged (``damage``) or the later pass that only exposed it
    (``exposed_by``): ``"`<breaking>` <damage, a sentence that starts with its verb>.
    `<exposed_by>` then <what the symptom is>, tripping over that damage."``; where the
    target cannot stage its configuration (``culprit_staging`` is ``not staged``) and other
    passes were needed, a sentence that says so; empty otherwise."""
    breaking = meta.breaking_pass
    exposed = _sentence(meta.exposed_by)
    damage = _sentence(meta.damage)
    if exposed == breaking:
        exposed = None
    if breaking and not (exposed or damage) and \
            meta.extra.get("culprit_staging") == "not staged" and meta.enabling_passes:
        return (f"{meta.target.name} cannot run a prefix of its configuration on its own, so "
                f"the models between the passes were not judged: `{breaking}` is named as "
                "the last pass of the minimal list, and an earlier one may be at fault.")
    if not breaking or not (exposed or damage):
        return ""
    wrong = f"`{breaking}` {damage.rstrip('.')}." if damage else \
        f"`{breaking}` leaves the model wrong."
    if not exposed:
        return wrong
    return (f"{wrong} `{exposed}` then {symptom_record(meta.symptom).title} "
            f"(`{meta.symptom}`), tripping over that damage.")


def _details(meta: BundleMeta, nodes: tuple[int, int]) -> str:
    """The collapsed block of optfuzz's own record: the configuration found with, the
    source and its seed, the hits and symptoms, the reduction, the variants and the keys."""
    origin = ", ".join(f"{k}={v}" for k, v in meta.source.items() if k != "path")
    lines = [
        f"- configuration found with: {code_span(str(meta.target.config))}",
        f"- found by optfuzz ({origin or 'unknown source'}); {symptoms_line(meta)}",
        f"- reduced from {nodes[0]} to {_nodes(nodes[1])} (subgraphs included)",
    ]
    if meta.variants:
        lines.append(f"- {len(meta.variants)} other model(s) of the same root cause in the "
                     "bundle's variants/ folder")
    keys = [f"signature: {meta.signature}"]
    if meta.root_cause:
        keys.append(f"root cause: {meta.root_cause}")
    return (f"<details><summary>optfuzz's keys, seeds and counts for this bug</summary>\n\n"
            f"{chr(10).join(lines)}\n\n{fenced(chr(10).join(keys))}\n\n</details>")


def observed_note(meta: BundleMeta, observed: Observation | None) -> str | None:
    """The note that the attached model no longer shows the bundle's symptom in the run
    ``observed``, or None."""
    if observed is None or observed.reproduces(meta.symptom):
        return None
    target = meta.target
    return (f"> **Note:** the attached model does not show `{meta.symptom}` with "
            f"{observed.versions} (see \"Actual\" below); it did with "
            f"{target.name} {target.version}.")


def _intro(meta: BundleMeta, nodes: int, note: str | None) -> list[str]:
    """The lines above the first heading: the culprit and its damage (where meta.json says
    what a later pass only exposed), the trigger (where the title does not carry it), a plain
    note when the attached model no longer reproduces, and what goes wrong."""
    target = meta.target
    parts = []
    culprit = culprit_sentence(meta)
    if culprit:
        parts.append(culprit + "\n")
    breaking = breaking_pass(meta)
    if meta.trigger and not (breaking and trigger_clause(meta)):
        parts.append(trigger_sentence(meta) + "\n")
    if note:
        parts.append(note.rstrip("\n") + "\n")
    passes = config_passes(meta)
    who = breaking or pass_phrase(meta)
    if breaking and passes and passes != [breaking]:
        who = ", ".join(passes)
    adapter = _adapter(meta)
    config = repro_context(meta)["config"]
    where = adapter.config_phrase(config) if adapter is not None else ""
    sentence = (f"Running {who} of {target.name} {target.version}{' ' + where if where else ''}"
                f" on the attached {nodes}-node model {symptom_record(meta.symptom).title}.")
    enabling = enabling_sentence(meta)
    ablation = adapter.ablation_line(config, breaking, meta.symptom) \
        if adapter is not None and breaking and breaking in (passes or ()) else ""
    others = [name for name in symptom_hits(meta) if name != meta.symptom]
    also = f"optfuzz also saw this fault as {_names(others)} (see Details)." if others else ""
    parts.append(" ".join(p for p in (sentence, enabling, ablation, also) if p) + "\n")
    return parts


def _adapter(meta: BundleMeta) -> Any:
    """The installed target adapter of ``meta`` (None where it cannot be loaded here: the
    draft then words what meta.json says)."""
    from fuzzer.targets import get_target

    try:
        return get_target(meta.target.name)
    except (KeyError, ImportError, RuntimeError):
        return None


def _parsed(model: Any) -> Any | None:
    """``model`` as a ModelProto (bytes are parsed), None where the bytes are no model."""
    import onnx
    from google.protobuf.message import DecodeError

    if not isinstance(model, bytes):
        return model
    try:
        return onnx.load_from_string(model)
    except (DecodeError, ValueError):
        return None


def no_optimized_reason(meta: BundleMeta, observed: Observation | None = None,
                        folder: Path | None = None) -> str | None:
    """One line saying why a report shows no optimized model: the target raised, crashed or
    hung (in the run ``observed``, else as meta.json records: the symptom record's
    :attr:`~oracles.base.Symptom.no_model_because`), the run gave no verdict, or
    the bundle ``folder`` holds no optimized.onnx; None where none of these is known (a
    draft rendered without the bundle's files)."""
    finding = observed.finding_for(meta.symptom) if observed is not None else None
    name = finding.symptom if finding is not None else meta.symptom
    record = load_oracles().get(name, None)
    if record is not None and record.no_model_because:
        return f"No optimized model: {record.no_model_because} (`{name}`)."
    if observed is not None and observed.problem:
        return "No optimized model: the run of the attached model gave no verdict (see " \
               "\"Actual\")."
    if folder is not None:
        return "No optimized model: the bundle holds no optimized.onnx."
    return None


def optimized_section(meta: BundleMeta, optimized: Any, reason: str | None) -> str | None:
    """The section with the optimized model (a ModelProto or its bytes) as ONNX text, the
    evidence of what the target rewrote; where ``optimized`` is None, the section holds the
    one line ``reason`` (None: no section)."""
    if optimized is None:
        return f"{OPTIMIZED_HEADING}\n\n{reason}\n" if reason else None
    model = _parsed(optimized)
    if model is None:
        return f"{OPTIMIZED_HEADING}\n\nThe target's output is not an ONNX model (it does " \
               "not parse).\n"
    nodes = _nodes(count_nodes(model.graph))
    return (f"{OPTIMIZED_HEADING} ({nodes})\n\nWhat the target made of model.onnx "
            f"(`{meta.symptom}`):\n\n{fenced(model_text(model, 'optimized.onnx'))}\n")


def _optimized_file(folder: Path | None) -> bytes | None:
    """The bytes of the bundle's optimized.onnx, None where there is none or it is
    unreadable."""
    if folder is None:
        return None
    try:
        return (folder / "optimized.onnx").read_bytes()
    except OSError:
        return None


@dataclass(frozen=True)
class EarlierRun:
    """Parts of an earlier report.md that a run of the attached model worded (``optfuzz
    report``, or the campaign's run when it made the bundle); a refresh
    (:mod:`fuzzer.report.refresh`) keeps them verbatim instead of running the model again.

    Attributes:
        note: the "> **Note:** the attached model does not show ..." paragraph, or None.
        actual: the body of the "Expected and actual" section, or None (worded from
            meta.json and the bundle's expected.npz / actual.npz then).
        optimized: the whole optimized-model section (heading included) of the same run,
            or None (worded from the bundle's optimized.onnx then).
    """

    note: str | None = None
    actual: str | None = None
    optimized: str | None = None


def _feeds(feeds: dict[str, Any] | None, folder: Path | None) -> dict[str, Any] | None:
    """``feeds``, else the bundle folder's inputs.npz, else None (none at hand, or a
    damaged file)."""
    if feeds is not None or folder is None:
        return feeds
    try:
        return read_npz(folder / "inputs.npz")
    except (OSError, ValueError):
        return None


def standalone_intro(meta: BundleMeta, standalone: StandaloneRepro) -> str:
    """The paragraph above the standalone repro: what it needs, what its exit status says,
    the pass list it runs, and how it carries the model and the inputs."""
    return " ".join([
        f"This script shows the bug on its own (it needs {listed(standalone.packages)}): it "
        f"exits 1 and prints `reproduced: ...` while {standalone.what}, and 0 once the "
        "bug is fixed.",
        pass_list_line(meta), *standalone.notes])


def crash_state_section(meta: BundleMeta, state: dict) -> str:
    """What the sanitize build said of a native crash (meta.json's ``crash_state``,
    :mod:`fuzzer.handling.crash_state`): the tool, the crash type, the top frames and the
    first line of the report, in a fenced block."""
    lines = [f"#{i} {frame}" for i, frame in enumerate(state.get("frames") or [])]
    lines += ["", str(state.get("headline", ""))]
    newline = "\n"
    where = f" at {code_span(state['location'])}" if state.get("location") else ""
    return (f"On {meta.target.name}'s sanitize build (AddressSanitizer and "
            f"UndefinedBehaviorSanitizer; `optfuzz target build {meta.target.name} "
            f"--sanitize`) the same model and passes give {state.get('tool', 'a sanitizer')}"
            f"'s {code_span(str(state.get('kind', '')))}{where}. Top frames:\n\n"
            f"{fenced(newline.join(lines))}\n")


def reproduce_section(meta: BundleMeta, model: Any = None, feeds: dict[str, Any] | None = None,
                      attachment: str | None = None) -> str:
    """The "Reproduce" section: the standalone repro (:mod:`fuzzer.report.snippet`) where
    the minimized ``model`` (a ModelProto or its bytes) is at hand and the symptom has a
    check, else the target's call alone; then what to attach for the bundle's repro.py
    (``attachment``: the zip's file name, where there is one).

    Raises:
        KeyError: meta names an unknown target.
    """
    attach = (f"`{attachment}` (model.onnx, inputs.npz, repro.py)" if attachment
              else "`model.onnx`, `inputs.npz` and `repro.py`")
    bundle_test = (f"Attach {attach}. `python repro.py` next to model.onnx and inputs.npz "
                   "runs optfuzz's own test in a child process (crashes and hangs included), "
                   "exits 1 while the bug reproduces and 0 once it is fixed.")
    parsed = _parsed(model) if model is not None else None
    standalone = standalone_repro(meta, parsed, feeds) if parsed is not None else None
    if standalone is None:
        return (f"## Reproduce\n\n{bundle_test} {pass_list_line(meta)} The call it makes:\n\n"
                f"{fenced(trigger_snippet(meta), 'python')}\n")
    return (f"## Reproduce\n\n{standalone_intro(meta, standalone)}\n\n"
            f"{fenced(standalone.text, 'python')}\n\n{bundle_test}\n")


def render_issue_draft(meta: BundleMeta, repro: str | None = None, *,
                       folder: Path | None = None, picture: str | None = None,
                       attachment: str | None = None, observed: Observation | None = None,
                       model: Any = None, nodes: tuple[int, int] | None = None,
                       optimized: Any = None, earlier: EarlierRun | None = None,
                       feeds: dict[str, Any] | None = None) -> str:
    """The markdown issue draft of a bundle.

    Args:
        meta: the bundle's meta.
        repro: text of the repro.py that ships with the draft (its test is optfuzz's; the
            draft words its own standalone repro).
        folder: the bundle folder, for expected.npz / actual.npz where there is no
            ``observed`` run, for optimized.onnx where no optimized model is given, and for
            inputs.npz where no ``feeds`` are.
        picture: file name of the before/after picture, relative to report.md.
        attachment: file name of the zip to attach, relative to report.md.
        observed: the run of the attached model that "Actual" is worded from.
        model: model.onnx (a ModelProto or its bytes), shown inline as ONNX text and parsed
            from it by the standalone repro; without it the draft shows the target's call
            alone.
        nodes: node counts (original, minimized), subgraphs included; default meta.json's.
        optimized: the target's output for model.onnx (a ModelProto or its bytes), shown
            inline as ONNX text after the model; default the run's (``observed``), else the
            folder's optimized.onnx. Where there is none, the section says why in one line.
        earlier: parts of an earlier draft that a run worded, kept where there is no
            ``observed`` run (:func:`fuzzer.report.refresh.refresh_report`).
        feeds: model.onnx's inputs (name -> array), written into the standalone repro;
            default the folder's inputs.npz, else drawn with a fixed seed.

    Raises:
        KeyError: meta names an unknown target.
    """
    counts = nodes or (meta.nodes.original, meta.nodes.minimized)
    kept = earlier if observed is None and earlier is not None else EarlierRun()
    title = issue_title(meta)
    parts = [
        f"# {plain(title)}\n",
        *_intro(meta, counts[1], observed_note(meta, observed) or kept.note),
        reproduce_section(meta, model, _feeds(feeds, folder), attachment),
    ]
    if model is not None:
        parts.append(f"## The minimized model (model.onnx, {_nodes(counts[1])})\n\n"
                     f"{fenced(model_text(model))}\n")
    if kept.optimized:
        parts.append(kept.optimized.rstrip("\n") + "\n")
    else:
        shown = optimized
        if shown is None and observed is not None:
            shown = observed.optimized
        if shown is None:
            shown = _optimized_file(folder)
        section = optimized_section(meta, shown, no_optimized_reason(meta, observed, folder))
        if section and (model is not None or shown is not None):
            parts.append(section)
    actual = kept.actual.rstrip("\n") + "\n" if kept.actual else \
        expected_actual_section(meta, folder, observed)
    parts.append(f"## Expected and actual\n\n{actual}")
    state = meta.extra.get("crash_state")
    if isinstance(state, dict):
        parts.append(f"## Crash state\n\n{crash_state_section(meta, state)}")
    parts.append(f"## Environment\n\n{environment_section(meta)}")
    timing = meta.extra.get("timing")
    if isinstance(timing, dict) and timing.get("table"):
        parts.append("## Timing\n\nThe attached model at each size timed (scaling/ holds "
                     f"them; repro.py times them again):\n\n{timing_markdown(timing)}")
    if picture:
        parts.append(
            "## Graph before and after\n\n"
            f"![minimized model (left) and its optimized form (right)]({picture})\n\n"
            "Left: the minimized model; right: the target's output. Dashed red: nodes the "
            "target removed or rewrote; solid red: nodes it added; edges carry "
            "dtype[shape].\n")
    parts.append(f"## Status\n\n{status_section(meta, title)}")
    parts.append(f"## Details\n\n{_details(meta, counts)}\n")
    return "\n".join(parts)
