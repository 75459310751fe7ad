"""Search for the boundary of a monotone predicate over ``0..count-1``, several probes at once.

:func:`first_true` is k-ary search (binary search with ``width`` probes per round instead
of one): each round tests ``width`` evenly spaced indices of the open interval together and
keeps the part between the last passing probe and the first failing one. ``width`` 1 is plain
bisection (``ceil(log2 count)`` rounds); ``width`` 2 needs ``log3 count`` rounds, about 0.63
of them, when the probes run in parallel.

The predicate need not be monotone (a reducer's rarely is): the answer is then some index
that tested True, never an untested one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: ``test_many(indices) -> verdicts`` (same order); the indices are ascending.
TestMany = Callable[[Sequence[int]], Sequence[bool]]


def probes(low: int, high: int, width: int) -> list[int]:
    """Up to ``width`` distinct indices splitting ``low..high-1`` (``high > low``) into
    nearly equal parts, ascending; ``width`` 1 gives the midpoint ``(low + high - 1) // 2``."""
    size = high - low
    if size <= width:
        return list(range(low, high))
    return sorted({low + (size * (k + 1) - 1) // (width + 1) for k in range(width)})


def first_true(count: int, test_many: TestMany, width: Callable[[], int] | int = 1,
               guess: int | None = None,
               enough: Callable[[int], bool] | None = None) -> int | None:
    """The smallest index in ``0..count-1`` whose test is True, assuming the tests are False
    up to some index and True from there on.

    Args:
        count: number of indices.
        test_many: tests a batch of indices (run together where the caller can).
        width: probes per round, or a function returning it before each round (e.g. the
            checks that could start now); at least 1 is used.
        guess: an index tested alone first (the caller's bet on the answer): True narrows
            the search to the indices below it, False to those above.
        enough: stop as soon as an index that tested True satisfies it (the caller can
            finish more cheaply from there).

    Returns:
        An index that tested True, the smallest under the assumption; None when no tested
        index was True.
    """
    low, high, found = 0, count, None
    if guess is not None:
        if test_many([guess])[0]:
            found = high = guess
        else:
            low = guess + 1
    while low < high and not (found is not None and enough is not None and enough(found)):
        wanted = width() if callable(width) else width
        indices = probes(low, high, max(1, wanted))
        verdicts = list(test_many(indices))
        failing = [i for i, failed in zip(indices, verdicts, strict=True) if failed]
        if failing:
            found = high = failing[0]
        below = [i for i, failed in zip(indices, verdicts, strict=True)
                 if not failed and i < high]
        if below:
            low = max(below) + 1
    return found
