"""The "Expected" and "Actual" section of an issue draft.

"Expected" is the behaviour the symptom violates, worded by its record in :mod:`oracles`.
"Actual" is what running the attached model.onnx with inputs.npz under the bundle's
configuration showed (an :class:`Observation`, made by ``optfuzz report``): its finding, and
for output mismatches the first values of each differing output from that run. A draft
rendered without such a run (as the campaign writes one when it creates a bundle) words
"Actual" from meta.json and the bundle's expected.npz / actual.npz, and says so
(:data:`RECORDED_ONLY`). Every message and problem is shown in a fenced code block of its own
(:func:`fuzzer.report.markdown.fenced`): optimizers quote code with backticks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.report.difference import error_size, recorded_line
from fuzzer.report.markdown import fenced
from fuzzer.store.meta import BundleMeta
from fuzzer.store.npz import read_npz
from oracles import symptom as symptom_record
from oracles.base import Finding

MAX_VALUES = 6
#: the words that mark an "Actual" worded from meta.json alone (no run of the attached model):
#: a refresh of report.md (:mod:`fuzzer.report.refresh`) words such a section again and keeps
#: one that a run worded. Run-worded text never contains them.
RECORDED_ONLY = "(as recorded when the bundle was made)"

Arrays = dict[str, np.ndarray]


@dataclass
class Observation:
    """What one run of the attached model showed, with the versions installed now.

    Attributes:
        versions: ``"<target> <version>"`` of the run.
        findings: the run's findings, most severe first (empty: the model no longer shows
            any symptom).
        problem: why the run gave no verdict (the original does not run here, a pass the
            installed target lacks, a worker pool that failed), else None.
        expected, actual: the run's reference and optimized outputs, where it got them.
        optimized: the serialized optimized model of the run, where the target returned one.
    """

    versions: str
    findings: list[Finding] = field(default_factory=list)
    problem: str | None = None
    expected: Arrays | None = None
    actual: Arrays | None = None
    optimized: bytes | None = None

    @classmethod
    def of_result(cls, result: Any, versions: str) -> Observation:
        """The observation of a :class:`fuzzer.execution.case.CaseResult`."""
        artifacts = result.artifacts
        return cls(versions, list(result.findings), result.unusable,
                   artifacts.expected if artifacts else None,
                   artifacts.actual if artifacts else None,
                   artifacts.optimized if artifacts else None)

    def finding_for(self, symptom: str) -> Finding | None:
        """The run's finding of ``symptom``, else its most severe one, else None."""
        same = [f for f in self.findings if f.symptom == symptom]
        return (same or self.findings or [None])[0]

    def reproduces(self, symptom: str) -> bool:
        """Whether the run showed ``symptom``."""
        return any(f.symptom == symptom for f in self.findings)


def _npz(path: Path) -> Arrays | None:
    if not path.is_file():
        return None
    try:
        return read_npz(path)
    except (OSError, ValueError):  # a damaged file: the section goes without its table
        return None


def _values(array: np.ndarray) -> str:
    flat = np.asarray(array).ravel()
    shown = [f"{x:.5g}" if isinstance(x, (float, np.floating)) else str(x)
             for x in flat[:MAX_VALUES].tolist()]
    return "[" + ", ".join(shown) + (", ..." if flat.size > MAX_VALUES else "") + "]"


def _error_cells(expected: np.ndarray, actual: np.ndarray | None) -> tuple[str, str]:
    """The max and mean abs error cells of one output (:func:`error_size`); how many places
    are NaN on one side only where any are; "-" where they cannot be compared."""
    size = error_size(expected, actual) if actual is not None else None
    if size is None:
        return "-", "-"
    if size.one_sided_nan:
        return f"NaN on one side in {size.one_sided_nan} place(s)", "-"
    if not size.values:
        return "-", "-"
    return f"{size.max:.4g}", f"{size.mean:.4g}"


def output_table(expected: Arrays, actual: Arrays) -> str:
    """A markdown table, one row per output: name, dtype[shape] and the first values on
    each side, and the max and mean abs error (or how many places are NaN on one side only)
    where both are numeric with equal shapes. A sequence output has one row per element
    and its length, an empty optional one row, named as
    :func:`fuzzer.execution.stage_driver.pack_values` names them; a row takes the actual
    value of its own name, else the one at its position."""
    from fuzzer.execution.stage_driver import pack_values

    rows = ["| output | expected | actual | max abs error | mean abs error |",
            "| --- | --- | --- | --- | --- |"]
    expected, actual = pack_values(expected), pack_values(actual)
    actual_list = list(actual.values())
    for index, (name, e) in enumerate(expected.items()):
        a = actual.get(name, actual_list[index] if index < len(actual_list) else None)
        largest, mean = _error_cells(e, a)
        right = "missing" if a is None else f"`{a.dtype}{list(a.shape)}` {_values(a)}"
        rows.append(f"| `{name}` | `{e.dtype}{list(e.shape)}` {_values(e)} | {right} | "
                    f"{largest} | {mean} |")
    return "\n".join(rows)


#: lines of a sanitizer's report quoted under "Actual".
REPORT_LINES = 30


def undocumented(meta: BundleMeta) -> bool:
    """Whether the bundle's ``verified`` record says the behaviour is not one the target
    documents (``{"documented": false, ...}``)."""
    return isinstance(meta.verified, dict) and meta.verified.get("documented") is False


def expected_line(meta: BundleMeta) -> str:
    """The "Expected" paragraph: the symptom record's sentence; for a symptom that may
    claim a promise of the target (:attr:`oracles.base.Symptom.promise`: bloat,
    metadata-change), naming the promise only where ``verified`` says the behaviour is
    undocumented (a claim the target's documentation backs)."""
    record = symptom_record(meta.symptom)
    text = record.expected
    if record.promise and undocumented(meta):
        text = f"{text.rstrip('.')} (as {meta.target.name} promises for this configuration)."
    return f"**Expected:** {text}\n"


def _where(symptom_name: str, stage: str) -> str:
    return f"`{symptom_name}` at stage `{stage}`"


def message_block(message: str) -> str:
    """A finding's message as its own fenced code block, with the blank line that ends the
    paragraph above it and the newline after it (messages quote code with backticks)."""
    return f"\n{fenced(message)}\n"


def _recorded(meta: BundleMeta) -> str:
    return (f"{_where(meta.symptom, meta.stage)} with {meta.target.name} "
            f"{meta.target.version}:\n{message_block(meta.message)}")


def actual_lines(meta: BundleMeta, observed: Observation) -> list[str]:
    """The "Actual" paragraphs from a run of the attached model: its finding of the
    bundle's symptom, another symptom, no symptom at all, or no verdict, said plainly.
    Every message and problem is a fenced code block of its own."""
    run = f"running the attached model.onnx with inputs.npz under {observed.versions}"
    finding = observed.finding_for(meta.symptom)
    if observed.problem:
        return [f"**Actual:** the attached model could not be tested here ({run}):\n"
                f"{message_block(observed.problem)}",
                f"When the bundle was made it showed {_recorded(meta)}"]
    if finding is None:
        return [f"**Actual:** the attached model no longer reproduces the bug ({run}: no "
                "symptom); this release may have fixed it.\n",
                f"When the bundle was made it showed {_recorded(meta)}"]
    shown = f"{_where(finding.symptom, finding.stage)} ({run}):\n{message_block(finding.message)}"
    lines = [f"**Actual:** {shown}"]
    if finding.symptom != meta.symptom:
        lines = [f"**Actual:** the attached model now shows {shown}",
                 f"That is not the recorded {_recorded(meta)}"]
    record = symptom_record(finding.symptom)
    if record.outputs and observed.expected and observed.actual:
        lines.append(output_table(observed.expected, observed.actual) + "\n")
    report = finding.detail.get(record.quote) if record.quote else None
    if report:
        head = "\n".join(report.splitlines()[:REPORT_LINES])
        lines.append(f"The sanitizer's report (its first {REPORT_LINES} lines; repro.py runs "
                     "the target's sanitize build from `$OPTFUZZ_SANITIZE_SITE`):\n\n"
                     f"{fenced(head)}\n")
    return lines


def expected_actual_section(meta: BundleMeta, folder: Path | None = None,
                            observed: Observation | None = None) -> str:
    """Markdown for "Expected" and "Actual" of a bundle.

    Args:
        meta: the bundle's meta.
        folder: the bundle folder; without ``observed`` it supplies expected.npz /
            actual.npz where they exist and are readable.
        observed: the run of the attached model that "Actual" is worded from; None words it
            from meta.json (the campaign's record) instead.
    """
    parts = [expected_line(meta)]
    if observed is not None:
        return "\n".join(parts + actual_lines(meta, observed))
    parts.append(f"**Actual:** {_where(meta.symptom, meta.stage)} {RECORDED_ONLY}:\n"
                 f"{message_block(meta.message)}")
    expected, actual = (_npz(folder / "expected.npz"), _npz(folder / "actual.npz")) \
        if folder is not None else (None, None)
    if expected and actual:
        parts.append(output_table(expected, actual) + "\n")
    elif symptom_record(meta.symptom).outputs and (recorded := recorded_line(meta.message)):
        parts.append(f"{recorded}\n")
    return "\n".join(parts)
