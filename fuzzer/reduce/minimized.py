"""What a reduction hands to the bundle: the minimized model, its feeds, and its run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Minimized:
    """A reduced form of the failing test: model bytes and feeds, plus what it cost."""

    model: bytes
    feeds: dict[str, np.ndarray]
    optimized: bytes | None = None
    expected: dict[str, np.ndarray] | None = None
    actual: dict[str, np.ndarray] | None = None
    runs: int = 0
    seconds: float = 0.0
