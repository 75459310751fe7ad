"""Types shared by every oracle: what a worker observed (Outcome) and what an oracle reports
(Finding), plus the registry that maps a symptom to the function that detects it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The closed symptom list of design.md, in order of severity.
SYMPTOMS: tuple[str, ...] = (
    "optimizer-abort",
    "optimizer-error",
    "hang",
    "invalid-model",
    "load-failure",
    "runtime-failure",
    "output-mismatch",
    "metric-drift",
    "bloat",
    "metadata-change",
)

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
            ``"signal"`` (the worker died by signal ``signal`` during ``stage``) or
            ``"timeout"`` (``stage`` outlived the per-case timeout, ``timeout`` seconds).
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
        symptom: one of :data:`SYMPTOMS`.
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

#: symptom name -> oracle function; filled by :func:`oracle`.
ORACLES: dict[str, Oracle] = {}


def oracle(name: str) -> Callable[[Oracle], Oracle]:
    """Decorator registering ``fn`` as the oracle called ``name``.

    Raises:
        ValueError: if ``name`` is already registered.
    """

    def register(fn: Oracle) -> Oracle:
        if name in ORACLES:
            raise ValueError(f"oracle {name!r} registered twice")
        ORACLES[name] = fn
        return fn

    return register


def first_line(text: str | None, limit: int = 300) -> str:
    """Return the first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
