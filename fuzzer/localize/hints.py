"""Cheap, optimizer-free evidence about which passes of a list can have caused a finding.

Localization asks two questions before it spends optimizer runs:

* *suspects*: passes that the evidence points at, most likely first: a pass whose name (or
  whose source file, as in a C++ optimizer's ``fuse_bn_into_conv.h:87`` assertions) appears in
  the finding's message or traceback, then passes whose anchor op types vanished from or
  appeared in the optimized model;
* *plausible*: passes that can act on the model at all. A pass whose anchor op types occur
  neither in the original nor in the optimized graph (subgraphs included) cannot have
  rewritten it.

Both are hints: localization verifies every conclusion with a real run. Anchors are the
target's own table (``Target.anchors()``: pass -> op types); a pass missing from the table,
or mapped to :data:`fuzzer.targets.base.ANY`, is always plausible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from fuzzer.targets.base import ANY

#: a target's anchors: pass -> op types one of which must be present for the pass to act.
Anchors = Mapping[str, frozenset[str]]

_LOCATION = re.compile(r"([\w-]+)\.(?:cc|cpp|cxx|c|h|hpp):\d+")


def mentioned(passes: Sequence[str], text: str, locations: str = "") -> list[str]:
    """Passes named in ``text`` as a whole word or as a C/C++ source file stem
    (``fuse_bn_into_conv.h:87``), or as a file stem in ``locations`` (e.g. a traceback, whose
    words are code, not evidence), in list order without repeats."""
    stems = {m.group(1) for m in _LOCATION.finditer(text + "\n" + locations)}
    out = []
    for name in dict.fromkeys(passes):
        word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        if name in stems or word.search(text):
            out.append(name)
    return out


def plausible(table: Anchors, passes: Sequence[str], present: Iterable[str]) -> list[str]:
    """The passes of ``passes`` (order and repeats kept) that can act given the op types
    ``present`` in the original and optimized graphs; ``table`` is the target's anchors."""
    have = set(present)
    return [p for p in passes if p not in table or table[p] is ANY or table[p] & have]


def changed_anchor_passes(table: Anchors, passes: Sequence[str], before: set[str],
                          after: set[str]) -> list[str]:
    """Passes whose specific anchor op types (``table``: the target's anchors) vanished or
    appeared between ``before`` and ``after`` (op type sets), in list order, without
    repeats."""
    moved = before ^ after
    return [p for p in dict.fromkeys(passes)
            if p in table and table[p] is not ANY and table[p] & moved]
