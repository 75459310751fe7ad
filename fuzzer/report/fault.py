"""The fault a bundle's root-cause key names (``target|culprit|kind|signature``,
:mod:`fuzzer.findings.rootcause`), in words for an issue title.

The words are a one-to-one rendering of the key's kind and signature: a footprint
(``fp:-Add+Constant``) lists the op types the culprit removed and added, a name clash says so,
a crash site is quoted, and a kind of its own (``slow``, ``bloat``, ...) is the symptom's
own words with its signature. Two keys that differ in kind or signature never get the same
words, so that titles that name the culprit as well stay distinct across a folder (one
bundle per key). Which words a kind gets is a table keyed by the kind
(:data:`KIND_WORDS`); a kind it does not list gets its symptom's words.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from fuzzer.findings.rootcause import (
    CRASH,
    CRASH_STATE,
    DTYPE,
    FRAMEWORK,
    REWRITE,
    SITELESS_CORE,
    UNLOCALIZED,
)

#: the signature of a wrong rewrite that needs a tensor named like the optimizer's own
#: temporaries (:func:`fuzzer.findings.rootcause.root_cause_key`).
CLASH = "name clash"
FOOTPRINT = "fp:"
#: longest crash site quoted whole in a title; a longer one is cut and tagged with a hash of
#: the whole, so that cut sites stay distinct.
MAX_SITE = 150
_OP = re.compile(r"([-+])([^-+]+)")


@dataclass(frozen=True)
class RootCause:
    """The four fields of a root-cause key.

    Attributes:
        target: the target's name.
        culprit: the pass at fault, or :data:`fuzzer.findings.rootcause.FRAMEWORK`,
            :data:`fuzzer.findings.rootcause.UNLOCALIZED`,
            :data:`fuzzer.findings.rootcause.CRASH_STATE` or ``(<shared cause>)``.
        kind: ``rewrite``, ``crash`` or a symptom's name.
        signature: the footprint, ``name clash``, the crash site or the symptom's detail.
    """

    target: str
    culprit: str
    kind: str
    signature: str

    @classmethod
    def parse(cls, key: str | None) -> RootCause | None:
        """The fields of ``key``; None where it is not a four-field key (absent, or written
        by hand) and so names no fault."""
        parts = (key or "").split("|", 3)
        if len(parts) != 4 or not all(parts[:3]):
            return None
        return cls(*parts)

    @property
    def shared_cause(self) -> str | None:
        """The cause outside any one pass that the key names (``(cause)`` as its culprit,
        :func:`fuzzer.findings.rootcause.shared_cause_key`), else None."""
        if self.culprit in (FRAMEWORK, UNLOCALIZED, CRASH_STATE) or \
                not self.culprit.startswith("("):
            return None
        return self.culprit.strip("()")


def listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: a non-empty list in words."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def footprint_words(footprint: str) -> str:
    """What a rewrite with ``footprint`` (``-A-B+C``, optionally ending in
    :data:`fuzzer.findings.rootcause.DTYPE`) did, in words: ``replaces A and B with C
    wrongly``; the element-type damage is said at the end."""
    element = footprint.endswith(DTYPE)
    if element:
        footprint = footprint[:-len(DTYPE)]
    removed = [op for sign, op in _OP.findall(footprint) if sign == "-"]
    added = [op for sign, op in _OP.findall(footprint) if sign == "+"]
    if removed and added:
        words = f"replaces {listed(removed)} with {listed(added)} wrongly"
    elif removed:
        words = f"removes {listed(removed)} wrongly"
    elif added:
        words = f"adds {listed(added)} wrongly"
    else:
        words = "rewrites the model wrongly without changing its op types"
    return words + (", giving a value the wrong element type" if element else "")


def _rewrite(cause: RootCause) -> str:
    if cause.signature == CLASH:
        return "clashes with a tensor named like its own temporaries (a plain number)"
    if cause.signature.startswith(FOOTPRINT):
        return footprint_words(cause.signature[len(FOOTPRINT):])
    return f"rewrites the model wrongly ({cause.signature})"


def quoted_site(site: str) -> str:
    """``site`` whole where it is at most :data:`MAX_SITE` characters, else its start, an
    ellipsis and 8 hex digits of its sha256 (distinct for distinct sites)."""
    if len(site) <= MAX_SITE:
        return site
    digest = hashlib.sha256(site.encode()).hexdigest()[:8]
    return f"{site[:MAX_SITE].rstrip()}... [{digest}]"


def _crash(cause: RootCause) -> str:
    if cause.signature == SITELESS_CORE:
        return "crashes with a memory error (a signal or an impossible allocation)"
    return f"fails: {quoted_site(cause.signature)}"


def _own_kind(cause: RootCause) -> str:
    """A kind of its own (``slow``, ``bloat``, ``hang``, ...): its symptom's words and the
    key's signature."""
    from oracles import symptom as symptom_record

    try:
        what = symptom_record(cause.kind).title
    except KeyError:
        what = f"shows {cause.kind}"
    return f"{what}: {quoted_site(cause.signature)}"


#: the kind of a root-cause key -> the words of its fault.
KIND_WORDS: dict[str, Callable[[RootCause], str]] = {REWRITE: _rewrite, CRASH: _crash}


def fault_words(cause: RootCause) -> str:
    """The fault of ``cause`` in words (see the module docstring), to follow the culprit in
    a title: ``removes Squeeze wrongly``, ``fails: RuntimeError: ir.h:1351: eraseOutput:
    Assertion <name> failed.``."""
    return KIND_WORDS.get(cause.kind, _own_kind)(cause)
