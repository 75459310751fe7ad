"""Binary search over a target's releases for the first that shows a bug and the first that
no longer does.

The search only calls a probe: ``probe(version) -> (outcome, reason)`` with outcome
:data:`GOOD` (the bug does not show), :data:`BAD` (it shows), :data:`SKIP` (no verdict
there: the version cannot be installed, cannot run the model, or shows another symptom;
``reason`` says which) or :data:`TOO_OLD` (no verdict: the release lacks what the test
needs, a pass or a module of its own that optfuzz drives). A skipped version is stepped around, as
``git bisect skip`` does: the search takes the middle of the versions left untried. Below a
release too old for the test, the older releases of the range searched are taken to be too
old as well and are not tried (passes and modules appear over time), so a long run of old
releases costs one probe, not one each.

The newest release is probed first (the newest that gives a verdict). Where it is bad, the
search looks below it for the first bad release. Where it is good, the bug was fixed in a
release: the newest release no newer than the one the bundle was found with is probed as
the bad anchor, then the search finds the first fixed release above the anchor and the
first bad one below it. The bug is taken to show in one run of releases (introduced once,
fixed once); a release before the oldest one checked counts as good.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

GOOD, BAD, SKIP, TOO_OLD = "good", "bad", "skip", "too-old"
Probe = Callable[[str], tuple[str, str | None]]


@dataclass
class Regression:
    """What the search found (``None`` where it found nothing).

    Attributes:
        last_good: the newest good release before the first bad one.
        first_bad: the oldest bad release of the run of bad ones.
        first_fixed: the oldest good release after the run of bad ones.
        newest_checked: the newest release that gave a verdict.
        checked: the releases that gave a verdict, oldest first.
        skipped: release -> why it gave none.
        outcomes: release -> :data:`GOOD` or :data:`BAD`, for those checked.
    """

    last_good: str | None = None
    first_bad: str | None = None
    first_fixed: str | None = None
    newest_checked: str | None = None
    checked: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)

    def to_json(self, time: str) -> dict[str, Any]:
        """meta.json's ``regression`` object, stamped with ``time`` (ISO UTC)."""
        return {"last_good": self.last_good, "first_bad": self.first_bad,
                "first_fixed": self.first_fixed, "newest_checked": self.newest_checked,
                "checked": list(self.checked), "skipped": dict(self.skipped), "time": time}

    def summary(self) -> str:
        """One phrase saying what the search found."""
        counts = f"{len(self.checked)} checked, {len(self.skipped)} skipped"
        if self.newest_checked is None:
            return f"no release could be checked ({counts})"
        since = f"last good {self.last_good}" if self.last_good else \
            "bad since the oldest release checked"
        if self.first_fixed:
            return (f"fixed in {self.first_fixed}; first bad {self.first_bad} ({since}); "
                    f"{counts}")
        if self.first_bad:
            return (f"still fails in {self.newest_checked}; first bad {self.first_bad} "
                    f"({since}); {counts}")
        return f"no release checked shows it (newest {self.newest_checked}); {counts}"


class _Search:
    def __init__(self, versions: Sequence[str], probe: Probe) -> None:
        self.versions = list(versions)
        self.probe = probe
        self.outcomes: dict[int, str] = {}
        self.skipped: dict[int, str] = {}

    def verdict(self, index: int, low: int | None = None) -> str:
        """The outcome at ``index`` (probed once); a release too old for the test makes
        the untried ones from ``low`` (exclusive) up to it skipped too."""
        if index not in self.outcomes and index not in self.skipped:
            outcome, reason = self.probe(self.versions[index])
            if outcome in (SKIP, TOO_OLD):
                self.skipped[index] = reason or "no verdict"
            else:
                self.outcomes[index] = outcome
            if outcome == TOO_OLD and low is not None:
                why = f"not tried: older than {self.versions[index]}, which is too old " \
                      "for the test"
                for older in range(low + 1, index):
                    if older not in self.outcomes:
                        self.skipped.setdefault(older, why)
        return self.outcomes.get(index, SKIP)

    def first_with_verdict(self, order: Iterable[int]) -> int | None:
        return next((i for i in order if self.verdict(i) != SKIP), None)

    def boundary(self, low: int, high: int, low_outcome: str) -> tuple[int, int]:
        """Narrow ``(low, high)`` (``low`` has ``low_outcome``, ``high`` the other; -1 is a
        release before the first, of ``low_outcome``) to the closest such pair."""
        while True:
            left = [i for i in range(low + 1, high) if i not in self.skipped]
            if not left:
                return low, high
            middle = left[len(left) // 2]
            outcome = self.verdict(middle, low)
            if outcome == low_outcome:
                low = middle
            elif outcome != SKIP:
                high = middle

    def at(self, index: int | None) -> str | None:
        return self.versions[index] if index is not None and index >= 0 else None


def bisect(versions: Sequence[str], probe: Probe, found: str | None = None,
           left_out: Mapping[str, str] | None = None) -> Regression:
    """Search ``versions`` (oldest first) with ``probe`` (see the module docstring);
    ``found`` is the version the bundle was found with (the bad anchor where the newest
    release is good; None: the release just below the newest). ``left_out`` (release -> why
    it cannot be probed here) joins the result's ``skipped``."""
    search = _Search(versions, probe)
    count = len(search.versions)
    newest = search.first_with_verdict(range(count - 1, -1, -1))
    first_fixed = None
    if newest is None:
        bad = None
    elif search.outcomes[newest] == BAD:
        bad = newest
    else:
        anchor = search.first_with_verdict(i for i in range(newest - 1, -1, -1)
                                           if _not_newer(search.versions[i], found))
        bad = anchor if anchor is not None and search.outcomes[anchor] == BAD else None
        if bad is not None:
            first_fixed = search.boundary(bad, newest, BAD)[1]
    last_good = first_bad = None
    if bad is not None:
        last_good, first_bad = search.boundary(-1, bad, GOOD)
    order = sorted(search.outcomes)
    skipped = {**(left_out or {}),
               **{search.versions[i]: why for i, why in search.skipped.items()}}
    return Regression(
        last_good=search.at(last_good), first_bad=search.at(first_bad),
        first_fixed=search.at(first_fixed), newest_checked=search.at(newest),
        checked=[search.versions[i] for i in order],
        skipped=dict(sorted(skipped.items(), key=lambda item: _order(item[0]))),
        outcomes={search.versions[i]: search.outcomes[i] for i in order})


def _order(version: str) -> tuple[int, Any]:
    """A sort key of release names: versions in their order, other names after them."""
    try:
        return 0, Version(version)
    except InvalidVersion:
        return 1, version


def _not_newer(version: str, found: str | None) -> bool:
    """Whether ``version`` is no newer than ``found`` (True where either is no version)."""
    if found is None:
        return True
    try:
        return Version(version) <= Version(found)
    except InvalidVersion:
        return True
