"""Markdown pieces of report.md that must survive any text put into them: messages from
optimizers quote code with backticks ("Assertion `rank <= 4` failed"), which end an inline
code span or a fence of three backticks early.

:func:`fenced` puts text into a fenced code block whose fence is longer than any backtick run
inside it (CommonMark: a closing fence is at least as long as the opening one);
:func:`code_span` does the same for an inline code span; :func:`plain` escapes text so that
it reads as it is outside code (a crash site's ``<name>`` is no HTML tag, its backticks no
code span). :func:`split_sections` cuts a report into its ``## `` sections without being
fooled by a heading-like line inside a fence.
"""

from __future__ import annotations

import re

_BACKTICKS = re.compile(r"`+")
#: characters that would start markup in running text: escaped by :func:`plain`.
_MARKUP = re.compile(r"([\\`*<>])")
_FENCE_LINE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<rest>.*)$")


def _longest_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def one_line_endings(text: str) -> str:
    """``text`` with CR LF and lone CR line endings made LF (what a Markdown parser does)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block (no final newline): a fence of backticks at least three
    long and longer than the longest backtick run in ``text``, so that nothing inside closes
    it; ``info`` is the info string (a language such as ``python``; no backticks)."""
    body = one_line_endings(text).rstrip("\n")
    fence = "`" * max(3, _longest_run(body) + 1)
    return f"{fence}{info}\n{body}\n{fence}" if body else f"{fence}{info}\n{fence}"


def code_span(text: str) -> str:
    """``text`` (one line; line breaks become spaces) as an inline code span delimited by a
    backtick run longer than any inside it, padded with a space where ``text`` starts or
    ends with a backtick."""
    body = " ".join(one_line_endings(text).split("\n"))
    ticks = "`" * (_longest_run(body) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def plain(text: str) -> str:
    """``text`` (one line) with the characters that would start markup in running text
    (backslash, backtick, ``*``, ``<``, ``>``) backslash-escaped, so that a Markdown parser
    shows it as it is (CommonMark: any ASCII punctuation may be escaped). Brackets are left:
    a title never has the ``](`` of a link."""
    return _MARKUP.sub(r"\\\1", " ".join(one_line_endings(text).split("\n")))


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``(prelude, [(heading line, body), ...])`` of a markdown text cut at its ``## ``
    headings; a line inside a fenced code block is never taken for a heading. The parts
    joined again (``prelude + heading + "\\n" + body`` for each) give ``text`` back."""
    prelude: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        match = _FENCE_LINE.match(line.rstrip("\n"))
        if fence is None and match:
            fence = match.group("fence")
        elif fence is not None and match and match.group("fence")[0] == fence[0] \
                and len(match.group("fence")) >= len(fence) and not match.group("rest").strip():
            fence = None
        elif fence is None and line.startswith("## "):
            sections.append((line.rstrip("\n"), []))
            continue
        (sections[-1][1] if sections else prelude).append(line)
    return "".join(prelude), [(heading, "".join(body)) for heading, body in sections]
