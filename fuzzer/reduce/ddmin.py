"""Delta debugging (ddmin), Zeller & Hildebrandt, "Simplifying and Isolating Failure-Inducing
Input", IEEE TSE 28(2), 2002: shrink a list to a 1-minimal sublist that still fails."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def split(items: Sequence[T], parts: int) -> list[list[T]]:
    """``items`` cut into ``parts`` contiguous chunks of near-equal length (order kept)."""
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        chunks.append(list(items[start:end]))
        start = end
    return [c for c in chunks if c]


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal sublist of ``items`` for which ``fails`` holds (``fails(items)`` is
    assumed). Tries each chunk, then each complement, doubling the granularity when neither
    fails. Exceptions raised by ``fails`` (e.g. an exhausted time budget) propagate; the
    caller keeps its last accepted candidate.
    """
    current = list(items)
    parts = 2
    while len(current) >= 2:
        chunks = split(current, parts)
        reduced = False
        for chunk in chunks:
            if len(chunk) < len(current) and fails(chunk):
                current, parts, reduced = chunk, 2, True
                break
        if not reduced:
            for index in range(len(chunks)):
                complement = [x for i, c in enumerate(chunks) if i != index for x in c]
                if complement and fails(complement):
                    current, parts, reduced = complement, max(parts - 1, 2), True
                    break
        if not reduced:
            if parts >= len(current):
                break
            parts = min(len(current), parts * 2)
    return current
