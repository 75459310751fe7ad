"""What a reduction hands to the bundle: the minimized model, its feeds, and its run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Minimized:
    """A reduced form of the failing test: model bytes and feeds, plus what it cost.

    ``complete``: the reduction ran to its end, so no edit of the model kept the finding
    (it is minimal for the reducer's edits); ``reduced`` is False where that model is the
    one it started from (already minimal).
    """

    model: bytes
    feeds: dict[str, np.ndarray]
    optimized: bytes | None = None
    expected: dict[str, np.ndarray] | None = None
    actual: dict[str, np.ndarray] | None = None
    runs: int = 0
    seconds: float = 0.0
    reduced: bool = True
    complete: bool = False
