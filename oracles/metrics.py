"""Task-level oracle ``metric-drift``: the optimized model's decisions differ from the original's.

Fires only when the task category of the model is known (``Outcome.task``), and judges the
*decisions* a user of the model would read off its outputs, as DiTOX did (Louloudakis et al.,
"DiTOX: Fault Detection and Localization in the ONNX Optimizer", 2025: top-1 and top-5
agreement and Kendall's tau over the top-10 classes):

- classification: per row of scores (last axis = classes): top-1 agreement, top-5 agreement
  (same set) and Kendall tau over the original's top-10; integer outputs (labels) must agree;
- detection: YOLO-style ``(batch, boxes, 4 + scores)`` outputs (either axis order) are decoded
  (cx, cy, w, h, class = argmax of scores, kept when the best score >= 0.25) and compared box
  by box: F1 of kept boxes that agree in class and overlap with IoU >= 0.5; other outputs by
  element-wise agreement;
- segmentation: ``(batch, classes, H, W)`` maps: per-pixel argmax over classes, or a 0.5
  threshold for a single-channel probability map; pixel agreement;
- text: CTC-style ``(..., steps, vocabulary)`` scores: per-step argmax, greedy decoding
  (repeats collapsed, blank 0 dropped); the decoded sequences must agree;
- audio: outputs with values in [0, 1] (speech or note probabilities): decisions at 0.5 must
  agree.

A decision whose margin in the original output is within the comparison tolerance of
:mod:`oracles.tolerance` (a near tie) is not counted: float noise must not make a finding.
Metrics are a registry (:data:`TASK_METRICS`): a new task is one new function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fuzzer.registry import Registry
from oracles.base import Finding, Outcome, Symptom, register
from oracles.tolerance import DEFAULT_TOLERANCE, TOLERANCES

#: Detection: a decoded box is kept when its best class score is at least this.
SCORE_THRESHOLD = 0.25
#: Detection: boxes agree when their IoU is at least this.
IOU_THRESHOLD = 0.5
#: Segmentation and audio: probability threshold of a single-channel map.
PROB_THRESHOLD = 0.5


def margin(expected: np.ndarray) -> float:
    """The tolerance of a decision on ``expected`` scores: ``atol * scale + rtol * scale``
    with ``scale = max(1, max |expected|)`` (dtype tolerances of :mod:`oracles.tolerance`)."""
    rtol, atol = TOLERANCES.get(expected.dtype, DEFAULT_TOLERANCE)
    finite = expected[np.isfinite(expected)]
    scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    return (atol + rtol) * scale


def _rows(array: np.ndarray) -> np.ndarray:
    """Scores as ``(rows, classes)``: trailing singleton axes dropped, leading axes merged."""
    shape = list(array.shape)
    while len(shape) > 1 and shape[-1] == 1:
        shape.pop()
    return array.reshape(-1, shape[-1] if shape else 1)


def kendall_tau(expected: np.ndarray, actual: np.ndarray, tol: float) -> float:
    """Kendall's tau-a between the orders of ``expected`` and ``actual`` (1-D, same length),
    over the pairs whose ``expected`` scores differ by more than ``tol``; 1.0 when none do."""
    concordant = discordant = 0
    for i in range(len(expected)):
        for j in range(i + 1, len(expected)):
            de = float(expected[i] - expected[j])
            if abs(de) <= tol:
                continue
            da = float(actual[i] - actual[j])
            if de * da > 0:
                concordant += 1
            else:
                discordant += 1
    total = concordant + discordant
    return 1.0 if total == 0 else (concordant - discordant) / total


def classification_agreement(expected: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    """Top-1 agreement, top-5 agreement and mean Kendall tau over the top-10 (DiTOX).

    Args:
        expected, actual: scores of the same shape, classes on the last axis (float).

    Returns:
        ``{"top1": fraction of rows, "top5": fraction of rows, "tau": mean tau, "rows": n}``;
        agreement fractions are in [0, 1], tau in [-1, 1].
    """
    e_rows = _rows(expected.astype(np.float64))
    a_rows = _rows(actual.astype(np.float64))
    tol = margin(expected)
    top1 = top5 = 0
    taus = []
    for e, a in zip(e_rows, a_rows, strict=True):
        best = float(np.max(e))
        top1 += float(e[int(np.argmax(a))]) >= best - tol
        k = min(5, e.size)
        kth = float(np.sort(e)[-k])
        top5 += all(float(e[c]) >= kth - tol for c in np.argsort(-a, kind="stable")[:k])
        order = np.argsort(-e, kind="stable")[:min(10, e.size)]
        taus.append(kendall_tau(e[order], a[order], tol))
    n = len(e_rows)
    return {"top1": top1 / n, "top5": top5 / n, "tau": float(np.mean(taus)), "rows": n}


def _classification(expected: np.ndarray, actual: np.ndarray) -> tuple[str, dict] | None:
    if expected.dtype.kind in "iub":
        differ = int(np.count_nonzero(expected != actual))
        return (f"{differ} of {expected.size} labels differ", {"labels_differ": differ}) \
            if differ else None
    if expected.dtype.kind != "f" or _rows(expected).shape[1] < 2:
        return None
    scores = classification_agreement(expected, actual)
    if scores["top1"] == 1 and scores["top5"] == 1 and scores["tau"] == 1:
        return None
    return (f"top-1 agreement {scores['top1']:.3f}, top-5 agreement {scores['top5']:.3f}, "
            f"Kendall tau (top-10) {scores['tau']:.3f}", scores)


def decode_boxes(output: np.ndarray) -> np.ndarray | None:
    """YOLO-style rows ``(batch, boxes, 4 + scores)``, or ``(batch, 4 + scores, boxes)``
    transposed; ``None`` when the output has another layout (5 to 100 values per box, more
    boxes than values)."""
    if output.ndim != 3 or output.dtype.kind != "f":
        return None
    _, first, second = output.shape
    if 5 <= second <= 100 < first:
        return output
    if 5 <= first <= 100 < second:
        return output.transpose(0, 2, 1)
    return None


def _iou(a: np.ndarray, b: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """IoU of paired cx, cy, w, h boxes, shapes ``(n, 4)``; sizes are taken as absolute
    values (raw regressions may be negative) and boxes equal within ``tol`` have IoU 1."""
    a, b = a.copy(), b.copy()
    a[:, 2:], b[:, 2:] = np.abs(a[:, 2:]), np.abs(b[:, 2:])
    equal = np.all(np.abs(a - b) <= tol, axis=1)
    ax0, ay0, ax1, ay1 = a[:, 0] - a[:, 2] / 2, a[:, 1] - a[:, 3] / 2, \
        a[:, 0] + a[:, 2] / 2, a[:, 1] + a[:, 3] / 2
    bx0, by0, bx1, by1 = b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2, \
        b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2
    iw = np.clip(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), 0, None)
    ih = np.clip(np.minimum(ay1, by1) - np.maximum(ay0, by0), 0, None)
    inter = iw * ih
    union = np.abs(a[:, 2] * a[:, 3]) + np.abs(b[:, 2] * b[:, 3]) - inter
    iou = np.where(union > 0, inter / np.where(union > 0, union, 1), 1.0)
    return np.where(equal, 1.0, iou)


def detection_f1(expected: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    """Box-by-box agreement of decoded detections (see :func:`decode_boxes`).

    Returns ``{"f1", "kept_expected", "kept_actual", "agree"}``: F1 in [0, 1] of the boxes
    kept on both sides that agree in class and IoU; boxes whose best expected score lies within
    the tolerance of the threshold are left out. F1 is 1.0 when no box is kept on either side.

    Raises:
        ValueError: an output that :func:`decode_boxes` cannot decode.
    """
    e_dec, a_dec = decode_boxes(expected), decode_boxes(actual)
    if e_dec is None or a_dec is None:
        raise ValueError(f"not a YOLO-style detection output: shape {expected.shape}")
    e_rows = e_dec.reshape(-1, e_dec.shape[-1]).astype(np.float64)
    a_rows = a_dec.reshape(-1, a_dec.shape[-1]).astype(np.float64)
    tol = margin(expected)
    e_best, a_best = e_rows[:, 4:].max(axis=1), a_rows[:, 4:].max(axis=1)
    clear = np.abs(e_best - SCORE_THRESHOLD) > tol
    e_keep = (e_best >= SCORE_THRESHOLD) & clear
    a_keep = (a_best >= SCORE_THRESHOLD) & clear
    both = e_keep & a_keep
    same_class = np.argmax(e_rows[:, 4:], axis=1) == np.argmax(a_rows[:, 4:], axis=1)
    overlap = _iou(e_rows[:, :4], a_rows[:, :4], tol)
    agree = int(np.count_nonzero(both & same_class & (overlap >= IOU_THRESHOLD)))
    false = int(np.count_nonzero(e_keep)) + int(np.count_nonzero(a_keep)) - 2 * agree
    denom = 2 * agree + false
    return {"f1": 1.0 if denom == 0 else 2 * agree / denom,
            "kept_expected": int(np.count_nonzero(e_keep)),
            "kept_actual": int(np.count_nonzero(a_keep)), "agree": agree}


def elementwise_agreement(expected: np.ndarray, actual: np.ndarray) -> float:
    """Fraction of elements equal within the tolerance of :mod:`oracles.tolerance`."""
    if expected.dtype.kind != "f":
        return float(np.mean(expected == actual)) if expected.size else 1.0
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    rtol, atol = TOLERANCES.get(expected.dtype, DEFAULT_TOLERANCE)
    finite = e[np.isfinite(e)]
    scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    ok = (np.abs(a - e) <= atol * scale + rtol * np.abs(e)) | (np.isnan(e) & np.isnan(a)) \
        | (e == a)
    return float(np.mean(ok)) if ok.size else 1.0


def _elementwise(expected: np.ndarray, actual: np.ndarray) -> tuple[str, dict] | None:
    agreement = elementwise_agreement(expected, actual)
    if agreement == 1.0:
        return None
    return f"element-wise agreement {agreement:.4f}", {"elementwise": agreement}


def _detection(expected: np.ndarray, actual: np.ndarray) -> tuple[str, dict] | None:
    if decode_boxes(expected) is None:
        return _elementwise(expected, actual)
    scores = detection_f1(expected, actual)
    if scores["f1"] == 1.0:
        return None
    return (f"detection F1 {scores['f1']:.3f} ({scores['agree']} boxes agree; kept "
            f"{scores['kept_expected']} before, {scores['kept_actual']} after)", scores)


def pixel_agreement(expected: np.ndarray, actual: np.ndarray) -> float:
    """Per-pixel label agreement of ``(batch, classes, H, W)`` maps: argmax over classes, or
    the 0.5 threshold for one class; pixels with a near tie in ``expected`` are left out."""
    tol = margin(expected)
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    if e.shape[1] == 1:
        clear = np.abs(e[:, 0] - PROB_THRESHOLD) > tol
        same = (e[:, 0] >= PROB_THRESHOLD) == (a[:, 0] >= PROB_THRESHOLD)
    else:
        top2 = np.sort(e, axis=1)[:, -2:]
        clear = (top2[:, 1] - top2[:, 0]) > tol
        same = np.argmax(e, axis=1) == np.argmax(a, axis=1)
    counted = int(np.count_nonzero(clear))
    return 1.0 if counted == 0 else float(np.count_nonzero(same & clear)) / counted


def _segmentation(expected: np.ndarray, actual: np.ndarray) -> tuple[str, dict] | None:
    if expected.ndim != 4 or expected.dtype.kind != "f":
        return _elementwise(expected, actual)
    agreement = pixel_agreement(expected, actual)
    if agreement == 1.0:
        return None
    return f"pixel agreement {agreement:.4f}", {"pixels": agreement}


def ctc_greedy(scores: np.ndarray) -> list[list[int]]:
    """Greedy CTC decoding of ``(..., steps, vocabulary)`` scores: per-step argmax, repeats
    collapsed, blank (index 0) dropped; one label list per leading index."""
    rows = scores.reshape(-1, scores.shape[-2], scores.shape[-1]).argmax(axis=-1)
    decoded = []
    for row in rows:
        labels, previous = [], -1
        for label in row.tolist():
            if label != previous and label != 0:
                labels.append(label)
            previous = label
        decoded.append(labels)
    return decoded


def _text(expected: np.ndarray, actual: np.ndarray) -> tuple[str, dict] | None:
    if expected.ndim < 2 or expected.dtype.kind != "f" or expected.shape[-1] < 2:
        return None
    e_rows, a_rows = _rows(expected), _rows(actual)
    tol = margin(expected)
    top2 = np.sort(e_rows, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > tol
    steps_differ = int(np.count_nonzero(clear & (e_rows.argmax(1) != a_rows.argmax(1))))
    if not steps_differ:
        return None
    e_text, a_text = ctc_greedy(expected), ctc_greedy(actual)
    differ = sum(x != y for x, y in zip(e_text, a_text, strict=True))
    return (f"decoded sequences differ in {differ} of {len(e_text)} ({steps_differ} steps "
            "changed their label)", {"sequences_differ": differ, "steps_differ": steps_differ})


def _audio(expected: np.ndarray, actual: np.ndarray) -> tuple[str, dict] | None:
    if expected.dtype.kind != "f" or expected.size == 0:
        return None
    finite = expected[np.isfinite(expected)]
    if finite.size == 0 or finite.min() < 0 or finite.max() > 1:
        return None
    tol = margin(expected)
    clear = np.abs(expected - PROB_THRESHOLD) > tol
    flips = int(np.count_nonzero(clear & ((expected >= PROB_THRESHOLD)
                                          != (actual >= PROB_THRESHOLD))))
    if not flips:
        return None
    return (f"{flips} of {expected.size} decisions at {PROB_THRESHOLD} flipped",
            {"decisions_flipped": flips})


Metric = Callable[[np.ndarray, np.ndarray], "tuple[str, dict] | None"]

#: task category -> metric on one output pair (same shape and dtype), returning
#: ``(message, detail)`` on drift, else ``None``.
TASK_METRICS: Registry[Metric] = Registry("task", {
    "classification": _classification,
    "detection": _detection,
    "segmentation": _segmentation,
    "text": _text,
    "audio": _audio,
})


def metric_drift(outcome: Outcome) -> list[Finding]:
    """One ``metric-drift`` finding for the first output whose task metric drifted.

    Silent when the task is unknown, a stage failed, or the outputs differ in count, shape or
    dtype (``output-mismatch`` reports those).
    """
    metric = TASK_METRICS.get(outcome.task or "", None)
    if (metric is None or outcome.status != "ok" or outcome.expected is None
            or outcome.actual is None or len(outcome.expected) != len(outcome.actual)):
        return []
    pairs = zip(outcome.expected.items(), outcome.actual.values(), strict=True)
    for index, ((name, e), a) in enumerate(pairs):
        e, a = np.asarray(e), np.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype or e.size == 0:
            continue
        drift = metric(e, a)
        if drift is not None:
            message, detail = drift
            detail: dict[str, Any] = dict(detail, output=name, index=index, task=outcome.task)
            return [Finding("metric-drift", "compare",
                            f"{outcome.task}: output {index} '{name}': {message}", detail)]
    return []


register(Symptom(
    "metric-drift", 80, ("compare",), metric_drift, "changes the model's predictions",
    "The optimized model's task-level predictions match the input model's.", footprint=True,
    key_detail="task", fault="rewrite",
    severity_class="wrong-output", exactness=True, corpus_column="metric_drift",
    words="changed predictions"))
