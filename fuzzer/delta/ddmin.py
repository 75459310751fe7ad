"""Search for a minimal failure-inducing subsequence of an ordered list (pass lists).

Two strategies over a predicate ``test(subsequence) -> bool`` ("still reproduces"):

* :func:`bisect_single`: binary search under the hypothesis that one element alone is the
  cause. It tests one half per level and moves to the other half *without testing it* when
  the first does not reproduce, then verifies its answer with one run: about
  ``ceil(log2 n) + 1`` tests for ``n`` elements (7 for 39). It returns None when the
  hypothesis is refuted (an interaction, or a flaky predicate).
* :func:`ddmin`: Zeller & Hildebrandt's delta debugging minimization ("Simplifying and
  Isolating Failure-Inducing Input", IEEE TSE 28(2), 2002): a 1-minimal subsequence, i.e.
  removing any single element makes the failure disappear. It finds causes that need several
  elements together (pass interactions), at ``O(n^2)`` tests in the worst case.

Both keep the original order of the elements and never test the full list (it is known to
reproduce). Callers cache ``test`` results: both strategies may ask for the same subsequence
twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
Test = Callable[[tuple[T, ...]], bool]


def split(items: Sequence[T], parts: int) -> list[tuple[T, ...]]:
    """``items`` cut into ``parts`` contiguous, nearly equal, non-empty chunks (in order)."""
    parts = max(1, min(parts, len(items)))
    out, start = [], 0
    for index in range(parts):
        end = start + (len(items) - start) // (parts - index)
        out.append(tuple(items[start:end]))
        start = end
    return out


def bisect_single(items: Sequence[T], test: Test) -> tuple[T, ...] | None:
    """The single element that reproduces alone, found by binary search, or None.

    Args:
        items: the ordered elements; the whole list is assumed to reproduce.
        test: predicate on a subsequence (a tuple in the order of ``items``).

    Returns:
        A 1-tuple verified by ``test`` (or ``items`` itself when it has one element), or None
        when no single element reproduces along the search path.
    """
    current = tuple(items)
    verified = True
    while len(current) > 1:
        first, second = split(current, 2)
        if test(first):
            current, verified = first, True
        else:
            current, verified = second, False
    if not current:
        return None
    return current if verified or test(current) else None


def ddmin(items: Sequence[T], test: Test) -> tuple[T, ...]:
    """A 1-minimal subsequence of ``items`` that still reproduces (Zeller & Hildebrandt 2002).

    Args:
        items: the ordered elements; the whole list is assumed to reproduce.
        test: predicate on a subsequence (a tuple in the order of ``items``).

    Returns:
        A subsequence of ``items`` for which ``test`` held (``items`` itself if nothing
        smaller does) and from which no single element can be removed.
    """
    current, n = tuple(items), 2
    while len(current) >= 2:
        chunks = split(current, n)
        reduced = False
        for chunk in chunks:
            if test(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced and n > 2:  # for n == 2 the complements are the chunks themselves
            for index in range(len(chunks)):
                complement = tuple(x for j, c in enumerate(chunks) if j != index for x in c)
                if test(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return current
