"""The case ranges of a cluster campaign: which cases range ``j`` holds, the same for any
number of machines, and the record of the ranges that are done.

Cases come in ranges of :data:`RANGE_SIZE`. Generated (and mutated) cases of range ``k`` are
indices ``[k * size, (k + 1) * size)`` of the campaign's generated stream, drawn by a
:class:`fuzzer.campaign.stream.CaseStream` started at the range's first index, so a range's
cases depend only on the campaign seed and the range. Corpus cases are positions of the
corpus list (every model with every configuration) in ranges of the same size. While corpus
ranges are left, corpus and generated ranges alternate; the sequence of ranges is fixed by
the settings alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

#: cases per range: large enough that a range's round trip through Ray is a small share of
#: its time (about half a second of cases on one core), small enough that a lost range
#: costs little.
RANGE_SIZE = 64


@dataclass(frozen=True)
class CaseRange:
    """Range ``number`` of the sequence: ``count`` cases from ``start`` of one ``kind``
    (``"generated"``: generated-stream indices; ``"corpus"``: corpus-list positions)."""

    number: int
    kind: str
    start: int
    count: int


@dataclass(frozen=True)
class RangePlan:
    """The sequence of ranges of a campaign.

    Args:
        generated: the campaign draws generated or mutated cases (an endless stream).
        corpus_positions: corpus cases in all (models times configurations).
        size: cases per range.
    """

    generated: bool
    corpus_positions: int
    size: int = RANGE_SIZE

    @property
    def corpus_ranges(self) -> int:
        """How many ranges the corpus fills."""
        return -(-self.corpus_positions // self.size)

    def total(self) -> int | None:
        """Ranges in all; None for an endless (generated) campaign."""
        return None if self.generated else self.corpus_ranges

    def at(self, number: int) -> CaseRange | None:
        """Range ``number`` (None past the end of a corpus-only campaign)."""
        corpus = self.corpus_ranges
        if not self.generated:
            return self._corpus(number, number) if number < corpus else None
        if number < 2 * corpus:
            half = number // 2
            return self._corpus(number, half) if number % 2 == 0 else \
                CaseRange(number, "generated", half * self.size, self.size)
        k = number - corpus
        return CaseRange(number, "generated", k * self.size, self.size)

    def _corpus(self, number: int, k: int) -> CaseRange:
        start = k * self.size
        return CaseRange(number, "corpus", start, min(self.size,
                                                      self.corpus_positions - start))

    def pending(self, done: Iterable[int], first: int = 0) -> Iterator[CaseRange]:
        """The ranges from ``first`` on that are not in ``done``, in order."""
        finished = set(done)
        number = first
        while True:
            if number not in finished:
                case_range = self.at(number)
                if case_range is None:
                    return
                yield case_range
            elif self.at(number) is None:
                return
            number += 1


def compact(numbers: Iterable[int]) -> list[list[int]]:
    """Sorted range numbers as half-open intervals: ``{0, 1, 2, 5}`` -> ``[[0, 3], [5, 6]]``."""
    intervals: list[list[int]] = []
    for n in sorted(set(numbers)):
        if intervals and intervals[-1][1] == n:
            intervals[-1][1] = n + 1
        else:
            intervals.append([n, n + 1])
    return intervals


def expand(intervals: Iterable[Iterable[int]]) -> set[int]:
    """The inverse of :func:`compact`.

    Raises:
        ValueError: an interval is not a pair of integers ``[a, b]`` with ``a <= b``.
    """
    numbers: set[int] = set()
    for pair in intervals:
        a, b = (int(x) for x in pair)
        if a > b:
            raise ValueError(f"range interval [{a}, {b}] is reversed")
        numbers.update(range(a, b))
    return numbers
