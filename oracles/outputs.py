"""Output oracle: the optimized model's outputs differ from the original's in count, shape,
dtype, or values beyond the tolerance of :mod:`oracles.tolerance`."""

from __future__ import annotations

import re

from oracles.base import Finding, Outcome, Symptom, register
from oracles.tolerance import TOLERANCE, compare_values, computed_in, value_dtype

#: kind of difference -> the class a root cause is keyed by: wrong numbers (values, NaN or
#: infinities in other places: one wrong rewrite shows either, depending on the data) or a
#: structural change (shape, dtype).
MISMATCH_CLASS = {"shape": "shape", "dtype": "dtype"}
#: how a message of :func:`output_mismatch` starts, per kind of difference, -> what a user
#: sees (:func:`mismatch_words`).
_MISMATCH_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^output count "), "wrong number of outputs"),
    (re.compile(r"^output \d+ .*?: shape "), "wrong output shape"),
    (re.compile(r"^output \d+ .*?: dtype "), "wrong output type"),
    (re.compile(r"^output \d+ .*?: NaN "), "NaN in the outputs"),
)


def output_mismatch(outcome: Outcome) -> list[Finding]:
    """Compare outputs position by position (the graph's output order), within the test's
    own tolerance where ``outcome.extra`` has one (:data:`oracles.tolerance.TOLERANCE`);
    sequence outputs element by element, optional ones as present or empty
    (:func:`oracles.tolerance.compare_values`)."""
    if outcome.status != "ok" or outcome.expected is None or outcome.actual is None:
        return []
    expected, actual = list(outcome.expected.items()), list(outcome.actual.items())
    if len(expected) != len(actual):
        return [Finding("output-mismatch", "compare",
                        f"output count {len(expected)} became {len(actual)}",
                        {"expected": [n for n, _ in expected], "actual": [n for n, _ in actual]})]
    tolerance = outcome.extra.get(TOLERANCE)
    for index, ((name, e), (_, a)) in enumerate(zip(expected, actual, strict=True)):
        diff = compare_values(e, a, tolerance=tolerance)
        if diff is not None and diff.kind == "values" and outcome.original is not None:
            # the looser tolerance of a less precise type the model computes in: walked
            # only for a difference, never on the common path of equal outputs
            diff = compare_values(e, a, computed_in(outcome.original), tolerance)
        if diff is not None:
            return [Finding("output-mismatch", "compare",
                            f"output {index} '{name}': {diff.summary}",
                            {"output": name, "index": index, "kind": diff.kind,
                             "dtype": value_dtype(e),
                             "class": MISMATCH_CLASS.get(diff.kind, "values"),
                             "mismatched": diff.mismatched, "max_abs_error": diff.max_abs_error,
                             "tolerance": diff.tolerance})]
    return []


def mismatch_words(message: str) -> str:
    """What a user sees of an output mismatch whose message is ``message``: a wrong
    number of outputs, a wrong shape or type, NaN, else wrong values."""
    return next((words for pattern, words in _MISMATCH_WORDS if pattern.search(message)),
                "wrong output values")


register(Symptom(
    "output-mismatch", 70, ("compare",), output_mismatch, "changes the model's outputs",
    "The optimized model computes the same outputs as the input model (same count, dtypes and "
    "shapes; values within tolerance).", footprint=True, key_detail="class", fault="rewrite",
    severity_class="wrong-output", exactness=True, outputs=True,
    corpus_column="output_discrepancy", words=mismatch_words, check="outputs",
    reproduced="onnxruntime's outputs of the two models differ beyond optfuzz's tolerance"))
