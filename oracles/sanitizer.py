"""Sanitizer oracle: under the target's sanitize build, AddressSanitizer or
UndefinedBehaviorSanitizer reported an error while the target optimized (``memory-error``),
whether or not the process would have survived it.

The report's text (``Outcome.extra["sanitizer_report"]``) is parsed in the formats that
GCC's and LLVM's sanitizer runtimes print: ASan's ``==<pid>==ERROR: AddressSanitizer: <kind>
on address ...`` followed by ``#<n> 0x<pc> in <function> <file>:<line>`` frames, and UBSan's
``<file>:<line>:<column>: runtime error: <description>``. The message quotes the first frame
in the target's own pass sources (a path with ``/passes/``), else the first frame outside the
sanitizer runtime.
"""

from __future__ import annotations

import re
from typing import Any

from oracles.base import Finding, Outcome, Symptom, register

_ASAN = re.compile(r"==\d+==ERROR: (?P<tool>\w+Sanitizer): (?P<kind>.+?)(?: on | at |$)")
_UBSAN = re.compile(r"(?P<loc>\S+:\d+(?::\d+)?): runtime error: (?P<kind>[^:\n]+)")
_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (?P<func>.+?) (?P<loc>\S+)$", re.M)
_RUNTIME = ("libsanitizer", "/asan/", "/ubsan/", "sanitizer_common")
#: frames of a crash state (:func:`parse_report`).
STATE_FRAMES = 3
#: location markers of the target's own code, most telling first.
_OWN = ("/passes/", "onnxoptimizer/")


def _short(function: str) -> str:
    """``ns::Class::method<T>`` of ``std::vector<T> const ns::Class::method<T>(args) const``:
    the arguments and, for a template, the return type dropped."""
    name = function.strip()
    cut = name.find("(", 1 if not name.startswith("operator") else name.find(")") + 1)
    name = name[:cut] if cut > 0 else name
    depth, start = 0, 0
    for i, char in enumerate(name):
        depth += (char == "<") - (char == ">")
        if char == " " and depth == 0:
            start = i + 1
    return name[start:][:160]


def _untemplated(function: str) -> str:
    """``function`` without template arguments (one bug, whatever type it was built for)."""
    while True:
        shorter = re.sub(r"<[^<>]*>", "", function)
        if shorter == function:
            return function
        function = shorter


def _where(location: str) -> tuple[str, int | None]:
    """``(file base name, line)`` of ``/path/file.h:12:5`` (line None where absent), or of
    ``(/path/lib.so+0x6b0c)`` (a frame without debug information)."""
    parts = location.strip("()").rsplit("/", 1)[-1].split("+0x")[0].split(":")
    line = next((int(p) for p in parts[1:2] if p.isdigit()), None)
    return parts[0], line


def parse_report(text: str) -> dict[str, Any]:
    """The facts of one sanitizer report: ``tool`` (``AddressSanitizer`` or
    ``UndefinedBehaviorSanitizer``), ``kind`` (``heap-use-after-free``, ``signed integer
    overflow``), ``function``, ``file`` (base name), ``line`` (or None), and ``frames`` (the
    stack's ``function file:line`` lines, at most 12), and ``state``: the crash state, the
    names of the top :data:`STATE_FRAMES` frames in the target's own sources (else outside
    the sanitizer runtime), without arguments or template arguments, as ClusterFuzz's crash
    state takes the top three frames of a stack. Unknown formats give kind ``"report"`` and
    the first line as ``headline``."""
    frames = [(m.group("func"), m.group("loc")) for m in _FRAME.finditer(text)]
    asan, ubsan = _ASAN.search(text), _UBSAN.search(text)
    facts: dict[str, Any] = {"tool": "Sanitizer", "kind": "report", "function": "",
                             "file": "", "line": None}
    headline = next((ln.strip() for ln in text.splitlines() if ln.strip().strip("=")), "")
    if asan is not None and (ubsan is None or asan.start() < ubsan.start()):
        facts.update(tool=asan.group("tool"), kind=asan.group("kind").strip())
    elif ubsan is not None:
        file, line = _where(ubsan.group("loc"))
        facts.update(tool="UndefinedBehaviorSanitizer", kind=ubsan.group("kind").strip(),
                     file=file, line=line)
        headline = ubsan.group(0)
    ours = [f for f in frames if any(mark in f[1] for mark in _OWN)]
    outside = [f for f in frames
               if not any(mark in f[1] for mark in _RUNTIME)
               and not f[0].startswith(("__interceptor_", "__asan", "__ubsan"))]
    facts["state"] = [_untemplated(_short(f)) for f, _ in (ours or outside)[:STATE_FRAMES]]
    chosen = (ours or outside or [None])[0]
    if chosen is not None:
        file, line = _where(chosen[1])
        facts.update(function=_short(chosen[0]))
        if not facts["file"] or ours:
            facts.update(file=file, line=line)
    facts["kind"] = re.sub(r"0x[0-9a-f]+|\b\d+\b", "N", facts["kind"])
    facts["headline"] = headline[:300]
    facts["frames"] = [f"{_short(f)} {loc}" for f, loc in frames[:12]]
    return facts


_START = re.compile(r"^.*(?:==\d+==ERROR: \w+Sanitizer|: runtime error: ).*$", re.M)


def report_in(text: str | None) -> str | None:
    """The sanitizer report within a process's error output ``text`` (from its first line
    that opens an ASan or UBSan report to the end), or None. GCC's UBSan runtime writes its
    reports there even where ``log_path`` is set."""
    match = _START.search(text or "")
    return text[match.start():].strip() if match is not None and text else None


def memory_error(outcome: Outcome) -> list[Finding]:
    """A sanitizer reported an error while the target optimized."""
    report = outcome.extra.get("sanitizer_report")
    if outcome.status != "sanitizer" or outcome.stage != "optimize" or not report:
        return []
    facts = parse_report(report)
    where = facts["file"] + (f":{facts['line']}" if facts["line"] else "")
    inside = f" in {facts['function']}" if facts["function"] else ""
    message = f"{facts['tool']}: {facts['kind']}{inside}" + (f" ({where})" if where else "")
    facts["site"] = f"{facts['kind']} {_untemplated(facts['function']) or facts['file']}"
    return [Finding("memory-error", "optimize", message, {**facts, "report": report})]


register(Symptom(
    "memory-error", 5, ("optimize",), memory_error, "has a memory or undefined-behaviour error",
    "`optimize` runs without an AddressSanitizer or UndefinedBehaviorSanitizer report.",
    key_detail="site", build="sanitize", fault="crash", quote="report", words="memory error"))
