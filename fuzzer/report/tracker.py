"""The "Status" section of report.md: what an issue tracker keeps about the bug besides its
description: the bundle's stable id, its state (meta.json ``state``: open, reported,
fixed, ...), the regression range (``regression``: last good, first bad, first fixed
version) and the versions checked (``upstream``: a verdict per version of the target; else
the version the bug was found with), and the ``gh issue create`` line that files report.md
in the target's repository (:attr:`fuzzer.targets.base.Target.repository`).

``state``, ``regression`` and ``upstream`` may be absent (a bundle no one marked, bisected or
replayed against other versions), or held by :class:`fuzzer.store.meta.BundleMeta` itself
once it knows them: :func:`optional_field` reads either, and anything of another shape is
skipped, never an error.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from fuzzer.report.markdown import code_span, fenced
from fuzzer.store.meta import BundleMeta

#: a bundle state -> (the record's key of its argument, or None; the words, ``{}`` for the
#: argument). A state not listed is shown by its name.
STATE_WORDS: dict[str, tuple[str | None, str]] = {
    "open": (None, "open"),
    "reported": ("url", "reported at {}"),
    "duplicate": ("duplicate_of", "duplicate of bundle {}"),
    "invalid": ("reason", "not a bug: {}"),
    "fixed": ("version", "fixed in {}"),
    "regressed": ("version", "regressed: seen again with {}"),
}
#: ``regression``'s keys, in order, with their words.
RANGE_WORDS = (("last_good", "last good"), ("first_bad", "first bad"),
               ("first_fixed", "first fixed"))
#: keys under which ``upstream`` may nest its per-version verdicts.
_NESTED = ("verdicts", "versions")
#: keys of a per-version record that hold its verdict, first found wins.
_VERDICT_KEYS = ("verdict", "status", "result", "outcome")
_VERSION = re.compile(r"\d")


def optional_field(meta: BundleMeta, name: str) -> Any:
    """meta.json's field ``name`` as JSON (a dict, list, string, ...), whether
    :class:`BundleMeta` holds it as an attribute (an object with ``to_json``, or plain
    JSON) or keeps it in :attr:`BundleMeta.extra`; None where absent."""
    value = getattr(meta, name, None)
    if value is None:
        value = meta.extra.get(name)
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


def state_line(meta: BundleMeta) -> str:
    """``State: <words> (set <time> by <who>)``; ``State: open (no state recorded)`` where
    meta.json has none (or one of another shape)."""
    record = optional_field(meta, "state")
    if not isinstance(record, Mapping) or not isinstance(record.get("state"), str):
        return "State: open (no state recorded)"
    name = record["state"]
    key, words = STATE_WORDS.get(name, (None, name))
    argument = record.get(key) if key else None
    shown = words.format(code_span(str(argument)) if argument is not None else "unknown")
    if name == "regressed" and isinstance(record.get("fixed"), str):
        shown += f" after being marked fixed in {code_span(record['fixed'])}"
    when = [f"{label} {record[k]}" for k, label in (("time", "set"), ("by", "by"))
            if isinstance(record.get(k), str)]
    return f"State: {shown}" + (f" ({' '.join(when)})" if when else "")


def range_line(meta: BundleMeta) -> str:
    """``Regression range: last good X, first bad Y, first fixed Z`` from meta.json's
    ``regression`` (the keys it has); ``Regression range: not bisected`` without one."""
    found = optional_field(meta, "regression")
    parts = [f"{words} {code_span(str(found[key]))}" for key, words in RANGE_WORDS
             if isinstance(found, Mapping) and found.get(key) not in (None, "")]
    return "Regression range: " + (", ".join(parts) if parts else "not bisected")


def _verdict(value: Any) -> str:
    """One version's verdict as text: a string as it is, a record's verdict field, else
    the record as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        found = next((value[k] for k in _VERDICT_KEYS if isinstance(value.get(k), str)), None)
        if found is not None:
            return found
    return json.dumps(value, sort_keys=True, default=str)


def verdict_rows(upstream: Any) -> list[tuple[str, str]]:
    """``(version, verdict)`` of each version meta.json's ``upstream`` checked: a mapping
    version -> verdict (a string or a record), a list of records with a ``version``, or
    either nested under ``verdicts`` or ``versions``; keys that are no version (no digit)
    are left out."""
    if isinstance(upstream, Mapping):
        nested = next((upstream[k] for k in _NESTED if k in upstream), None)
        if nested is not None:
            return verdict_rows(nested)
        return [(str(version), _verdict(verdict)) for version, verdict in upstream.items()
                if _VERSION.search(str(version))]
    if isinstance(upstream, list):
        return [(str(item["version"]), _verdict(item)) for item in upstream
                if isinstance(item, Mapping) and item.get("version") is not None]
    return []


def versions_checked(meta: BundleMeta) -> str:
    """``Versions checked:`` and a table of each version's verdict from ``upstream``, or,
    where no other version was checked, the one line of the version the bug was found
    with."""
    rows = verdict_rows(optional_field(meta, "upstream"))
    if not rows:
        return (f"Versions checked: {meta.target.name} {code_span(meta.target.version)} (the "
                "installed one the bug was found with)")
    table = "\n".join([f"| {meta.target.name} version | verdict |", "| --- | --- |",
                       *(f"| {code_span(v)} | {code_span(verdict)} |" for v, verdict in rows)])
    return f"Versions checked:\n\n{table}"


def other_targets_line(meta: BundleMeta) -> str | None:
    """``Also breaks: onnxsim v0.8.1 (invalid-model)`` from meta.json's ``cross_targets``
    (``optfuzz replay --target``), with the targets it was run on that it does not break;
    None where it was run on no other target."""
    verdicts = optional_field(meta, "cross_targets")
    if not isinstance(verdicts, Mapping) or not verdicts:
        return None
    breaks = [f"{name} {code_span(str(v.get('version', '')))} ({v.get('observed')})"
              for name, v in sorted(verdicts.items())
              if isinstance(v, Mapping) and v.get("status") == "breaks"]
    rest = [name for name, v in sorted(verdicts.items())
            if not (isinstance(v, Mapping) and v.get("status") == "breaks")]
    line = f"Also breaks: {', '.join(breaks)}" if breaks else "Breaks no other target run"
    return line + (f"; not: {', '.join(rest)}" if rest else "") + \
        " (its model, each target's default configuration)"


def repository(meta: BundleMeta) -> str:
    """The GitHub repository of the bundle's target, "" where it names none or cannot be
    imported here."""
    from fuzzer.targets import target_class

    try:
        return target_class(meta.target.name).repository
    except (KeyError, ImportError):
        return ""


def file_command(meta: BundleMeta, title: str) -> str:
    """What files report.md as an issue of the target's repository: a sentence and a
    fenced ``gh issue create`` line run in the bundle's folder; a sentence alone where the
    target names no repository."""
    repo = repository(meta)
    if not repo:
        return f"{meta.target.name} names no upstream repository to file this in.\n"
    command = (f"gh issue create --repo {repo} --title {shlex.quote(title)} "
               "--body-file report.md")
    return (f"File it in {repo} with the GitHub CLI, in the bundle's folder:\n\n"
            f"{fenced(command, 'sh')}\n")


def status_section(meta: BundleMeta, title: str) -> str:
    """The body of the "Status" section (no heading, ends with a newline) of the bundle of
    ``meta`` whose report has the title ``title``: a list of its id, state, regression
    range and (one line) versions checked, the table of versions checked where there is
    one, and the ``gh`` line."""
    items = [f"Bundle: {code_span(meta.id)} (optfuzz's stable id of this fault: the name of "
             "its folder)", state_line(meta), range_line(meta)]
    if (others := other_targets_line(meta)) is not None:
        items.append(others)
    checked = versions_checked(meta)
    table = "\n" in checked
    parts = ["\n".join(f"- {item}" for item in items + ([] if table else [checked]))]
    parts += [checked] if table else []
    parts.append(file_command(meta, title).rstrip("\n"))
    return "\n\n".join(parts) + "\n"
