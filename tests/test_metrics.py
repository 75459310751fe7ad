"""The metric-drift oracle on hand-made outputs with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from oracles.base import Outcome
from oracles.metrics import (
    classification_agreement,
    ctc_greedy,
    detection_f1,
    kendall_tau,
    metric_drift,
    pixel_agreement,
)


def _judge(task: str | None, expected: np.ndarray, actual: np.ndarray) -> list:
    return metric_drift(Outcome("ok", "compare", expected={"y": expected},
                                actual={"y": actual}, task=task))


def test_kendall_tau_known_values() -> None:
    e = np.array([4.0, 3.0, 2.0, 1.0])
    assert kendall_tau(e, e, 0.0) == 1.0
    assert kendall_tau(e, -e, 0.0) == -1.0
    # one adjacent swap out of 6 pairs: (5 - 1) / 6
    assert kendall_tau(e, np.array([3.0, 4.0, 2.0, 1.0]), 0.0) == pytest.approx(4 / 6)
    # pairs tied within the tolerance are not counted
    assert kendall_tau(np.array([1.0, 1.0]), np.array([0.0, 1.0]), 1e-3) == 1.0


def test_classification_identical_scores_agree() -> None:
    scores = np.linspace(0, 1, 20, dtype=np.float32).reshape(1, 20)
    assert classification_agreement(scores, scores.copy()) == \
        {"top1": 1.0, "top5": 1.0, "tau": 1.0, "rows": 1}
    assert _judge("classification", scores, scores.copy()) == []


def test_classification_top1_swap() -> None:
    e = np.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.9, 0.8]], dtype=np.float32)
    a = e.copy()
    a[0, 6], a[0, 7] = 0.8, 0.9  # the two best classes trade places
    scores = classification_agreement(e, a)
    assert scores["top1"] == 0.0 and scores["top5"] == 1.0
    assert scores["tau"] == pytest.approx((27 - 1) / 28)  # top-8 of 8 classes: 28 pairs
    (finding,) = _judge("classification", e, a)
    assert finding.symptom == "metric-drift" and "top-1 agreement 0.000" in finding.message


def test_classification_top5_change_in_second_row() -> None:
    e = np.tile(np.arange(10, dtype=np.float32), (2, 1))
    a = e.copy()
    a[1, 0] = 20.0  # the worst class of row 1 jumps to the top
    scores = classification_agreement(e, a)
    assert scores["top1"] == 0.5 and scores["top5"] == 0.5
    # row 1: class 0 now outranks the 9 others: 9 discordant of 45 pairs
    assert scores["tau"] == pytest.approx((1.0 + (36 - 9) / 45) / 2)


def test_classification_near_tie_is_not_drift() -> None:
    e = np.array([[0.5, 0.5000001, 0.1]], dtype=np.float32)
    a = np.array([[0.5000001, 0.5, 0.1]], dtype=np.float32)
    assert _judge("classification", e, a) == []


def test_classification_integer_labels() -> None:
    (finding,) = _judge("classification", np.array([3, 1, 2]), np.array([3, 0, 2]))
    assert "1 of 3 labels differ" in finding.message


def test_no_task_no_finding() -> None:
    e = np.array([[0.0, 1.0]], dtype=np.float32)
    assert _judge(None, e, e[:, ::-1].copy()) == []
    assert _judge("unknown-task", e, e[:, ::-1].copy()) == []


def _yolo(boxes: list[tuple[float, float, float, float, float, float]]) -> np.ndarray:
    """(1, 4 + 2 classes, 120 anchors): the given boxes first, then empty anchors."""
    rows = np.zeros((120, 6), dtype=np.float32)
    rows[:, 2:4] = 1.0
    rows[:len(boxes)] = np.array(boxes, dtype=np.float32)
    return rows.T[None].copy()


def test_detection_f1_known_values() -> None:
    e = _yolo([(10, 10, 4, 4, 0.9, 0.0), (50, 50, 10, 10, 0.0, 0.8)])
    assert detection_f1(e, e.copy())["f1"] == 1.0
    raw = _yolo([(10, 10, -0.5, 0.0, 0.9, 0.0)])  # raw regressions: negative or zero sizes
    assert detection_f1(raw, raw + 1e-7)["f1"] == 1.0
    moved = _yolo([(10, 10, 4, 4, 0.9, 0.0), (58, 50, 10, 10, 0.0, 0.8)])  # IoU 2/18
    scores = detection_f1(e, moved)
    assert scores["agree"] == 1 and scores["f1"] == pytest.approx(0.5)
    dropped = _yolo([(10, 10, 4, 4, 0.9, 0.0), (50, 50, 10, 10, 0.0, 0.1)])
    scores = detection_f1(e, dropped)  # 1 agrees, 1 missed: F1 = 2 / 3
    assert scores["f1"] == pytest.approx(2 / 3) and scores["kept_actual"] == 1
    (finding,) = _judge("detection", e, dropped)
    assert "detection F1 0.667" in finding.message


def test_detection_undecodable_output_uses_elementwise_agreement() -> None:
    e = np.zeros((2, 3), dtype=np.float32)
    a = e.copy()
    a[0, 0] = 1.0
    (finding,) = _judge("detection", e, a)
    assert "element-wise agreement 0.8333" in finding.message


def test_segmentation_pixel_agreement() -> None:
    e = np.zeros((1, 3, 2, 2), dtype=np.float32)
    e[0, 1] = 1.0  # every pixel is class 1
    a = e.copy()
    a[0, 2, 0, 0] = 2.0  # one pixel becomes class 2
    assert pixel_agreement(e, a) == 0.75
    prob = np.full((1, 1, 2, 2), 0.9, dtype=np.float32)
    flipped = prob.copy()
    flipped[0, 0, 1, 1] = 0.1
    assert pixel_agreement(prob, flipped) == 0.75
    (finding,) = _judge("segmentation", prob, flipped)
    assert "pixel agreement 0.7500" in finding.message


def test_ctc_greedy_decoding_and_text_drift() -> None:
    steps = [1, 1, 0, 2, 2, 0, 2]  # -> [1, 2, 2]
    e = np.eye(4, dtype=np.float32)[steps][None]  # (1, 7 steps, 4 labels)
    assert ctc_greedy(e) == [[1, 2, 2]]
    a = e.copy()
    a[0, 5] = np.eye(4, dtype=np.float32)[2]  # the blank between the 2s disappears
    assert ctc_greedy(a) == [[1, 2]]
    (finding,) = _judge("text", e, a)
    assert "decoded sequences differ in 1 of 1" in finding.message


def test_audio_decisions() -> None:
    e = np.array([[0.1, 0.9, 0.7]], dtype=np.float32)
    assert _judge("audio", e, e + 0.05) == []
    (finding,) = _judge("audio", e, np.array([[0.1, 0.2, 0.7]], dtype=np.float32))
    assert "1 of 3 decisions" in finding.message


def test_failed_stage_or_shape_change_is_left_to_other_oracles() -> None:
    e = np.array([[0.0, 1.0]], dtype=np.float32)
    assert metric_drift(Outcome("error", "execute", task="classification",
                                expected={"y": e})) == []
    assert _judge("classification", e, np.zeros((1, 3), np.float32)) == []
