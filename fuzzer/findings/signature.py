"""Finding signatures (design.md, "Signature and deduplication").

signature = target name | responsible passes (or the configured pass list where not
localized) | symptom | normalized message [| ``g:`` graph hash]. The message is normalized so
that the same bug reached from different models gives the same text: hexadecimal addresses,
quoted tensor and node names (and the unquoted ones after ``name:``, ``Node (...)``,
``Name:``, comma-separated lists of them after a colon, and any unquoted word that mixes
letters and digits the way generated names do: ``t8``, ``_v_8``, ``input.1``), paths and
numbers become placeholders. :func:`fuzzer.findings.rootcause.message_core` also replaces
the model's own names wherever they stand. A source location inside the optimizer
(``fuse_bn_into_conv.h:87``), as in a C++ optimizer's assertion messages, is kept: it names the
failing check.

The optional last field is the Weisfeiler-Lehman hash of the change region
(:mod:`fuzzer.findings.graph_hash`). Reduction changes the graph, so a reducer that checks "the same
bug" compares :func:`signature_core` (everything but the graph hash) or, cheaper, symptom and
:func:`normalize_message`, as localization does (:func:`same_finding`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from oracles.base import Finding

_SOURCE_LOCATION = re.compile(r"(?:[\w./\\-]*[/\\])?([\w-]+\.(?:cc|cpp|cxx|c|h|hpp|py)):(\d+)")
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "<name>"),
    (re.compile(r"\b([Nn]ame:) ?(?!<name>)[^\s,;)]+"), r"\1 <name>"),
    (re.compile(r"\b([Nn]ode|[Oo]utput|[Ii]nput|[Tt]ensor) \((?!<name>)[^()\s]+\)"),
     r"\1 (<name>)"),
    # an unquoted, comma-separated list of names after a colon (onnxoptimizer's
    # "Unresolved value references: w3,model/add/kernel:0,")
    (re.compile(r"(?<=: )(?:[\w./:-]+,)+[\w./:-]*"), "<names>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.+-]+){2,}/?"), "<path>"),
    # a name an exporter or optimizer generates, unquoted: letters and digits mixed
    # (``t8``, ``_v_8``, ``conv_12``, ``input.1``, ``onnx::Conv_12``), but not a data type
    # (``int64``) or an op type (``Col2Im``): see :func:`_generated_name`
    (re.compile(r"(?<![\w<])(?:onnx::)?[A-Za-z_]\w*(?:\.\w+)*"), None),
    (re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)
MAX_MESSAGE = 200
GRAPH_FIELD = "g:"


#: a list of names, however many and however each was replaced (``<name>,<name>,``), with
#: the part of a name a truncated message ends in (``<name>,<name>,onnx::Pad_``).
_NAME_LIST = re.compile(r"(?:<names?>, ?)+(?:<names?>|[\w./:-]+\Z)?")
#: words with digits that name no tensor: data types and the like.
_NOT_A_NAME = re.compile(r"(?:u?int|float|bfloat|complex)\d+\w*|float8\w*|sha\d+|utf\d+|"
                         r"[Oo]pset\d+|IR\d+", re.IGNORECASE)


@lru_cache(maxsize=1)
def _op_types() -> frozenset[str]:
    import onnx

    return frozenset(s.name for s in onnx.defs.get_all_schemas_with_history())


def _generated_name(match: re.Match[str]) -> str:
    """``<name>`` for a word that mixes letters and digits and is neither a data type nor
    an op type (a generated tensor or node name); the word itself otherwise."""
    word = match.group(0)
    if not any(c.isdigit() for c in word) or _NOT_A_NAME.fullmatch(word) or \
            word in _op_types():
        return word
    return "<name>"


def normalize_message(message: str) -> str:
    """Replace the volatile parts of ``message`` by placeholders (see module docstring)."""
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        kept.append(f"{match.group(1)}:{match.group(2)}")
        return chr(0xE000 + len(kept) - 1)  # a private-use character no rule touches

    text = _SOURCE_LOCATION.sub(keep, message)
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder if placeholder is not None else _generated_name, text)
    text = _NAME_LIST.sub("<names>", text)
    text = re.sub("[\ue000-\uf8ff]", lambda m: kept[ord(m.group(0)) - 0xE000], text)
    return text.strip()[:MAX_MESSAGE]


def make_signature(target: str, passes: Sequence[str] | None, symptom: str, message: str,
                   graph_hash: str | None = None) -> str:
    """``target|pass,pass|symptom|normalized message`` and ``|g:<graph hash>`` when given.

    ``passes`` are the responsible passes, or the configured list where localization did not
    run; ``[]`` (the bug shows without any pass) and None both give an empty field.
    """
    parts = [target, ",".join(passes or []), symptom, normalize_message(message)]
    if graph_hash:
        parts.append(GRAPH_FIELD + graph_hash)
    return "|".join(parts)


def signature_core(signature: str) -> str:
    """``signature`` without its graph-hash field."""
    head, sep, tail = signature.rpartition("|")
    return head if sep and tail.startswith(GRAPH_FIELD) else signature


def same_finding(finding: Finding, symptom: str, normalized: str) -> bool:
    """Whether ``finding`` has ``symptom`` and a message that normalizes to ``normalized``."""
    return finding.symptom == symptom and normalize_message(finding.message) == normalized


#: crashes that name no site of their own: a signal, or an allocation of a size read from
#: memory the pass should not read. A pass that reads out of bounds shows each of them from
#: one run to the next (onnxoptimizer 0.4.2's eliminate_slice_after_shape on a Shape with
#: start or end: SIGSEGV, std::bad_alloc, basic_string::_M_create), so they are one crash
#: site of that pass, whichever crash symptom (an exception, a killed worker) each run shows.
SITELESS = re.compile(r"killed by SIG(?:SEGV|BUS)|std::bad_alloc|larger than max_size\(\)|"
                      r"std::length_error|basic_string::_M_create")
SITELESS_CORE = "memory error (no site: a signal or an impossible allocation)"
#: the symptom field of a siteless crash's :class:`FindingCore` (any crash symptom matches).
ANY_CRASH = "(any crash)"


def siteless(finding: Finding) -> bool:
    """Whether ``finding`` is a crash (its symptom's ``fault`` is ``crash``) whose message
    names no site of its own (:data:`SITELESS`)."""
    from oracles import symptom

    return symptom(finding.symptom).fault == "crash" and bool(SITELESS.search(finding.message))


@dataclass(frozen=True)
class FindingCore:
    """What localization and reduction keep fixed while they change the pass list or the
    model: the symptom and, where the symptom's record names a key detail
    (``Symptom.key_detail``: the rule an invalid model breaks, the kind of output mismatch)
    and the finding has it, that detail; else the normalized message. It is the part of
    the root-cause key that a run can show, so a reduction stays inside its bucket
    (Igor, CCS'21: a reducer must keep the bucket key, or it drifts to another bug) while
    free to change what the message merely names (the node that shape inference tripped
    over). A siteless crash (:func:`siteless`) keeps only that: any crash symptom whose message
    names no site matches it, as one out-of-bounds read shows as a SIGSEGV in one run and a
    ``std::bad_alloc`` in the next.

    Attributes:
        symptom: the symptom name.
        core: the key detail's value, or the normalized message.
        detail: the key detail's field name, or None where ``core`` is the message.
    """

    symptom: str
    core: str
    detail: str | None = None

    @classmethod
    def of(cls, finding: Finding) -> FindingCore:
        """The core of ``finding``."""
        if siteless(finding):
            return cls(ANY_CRASH, SITELESS_CORE)
        return cls.of_parts(finding.symptom, finding.message, finding.detail)

    @classmethod
    def of_parts(cls, symptom_name: str, message: str,
                 detail: dict | None = None) -> FindingCore:
        """The core of a finding given by its parts (``detail`` None: by its message)."""
        from oracles import symptom

        field = symptom(symptom_name).key_detail
        if field is not None and detail and field in detail:
            return cls(symptom_name, str(detail[field]), field)
        return cls(symptom_name, normalize_message(message))

    def matches(self, finding: Finding) -> bool:
        """Whether ``finding`` has this symptom and core."""
        if self.symptom == ANY_CRASH:
            return siteless(finding)
        if finding.symptom != self.symptom:
            return False
        if self.detail is not None:
            return str(finding.detail.get(self.detail)) == self.core
        return normalize_message(finding.message) == self.core


def bundle_id(symptom: str, signature: str) -> str:
    """The bundle folder name for a signature: ``<symptom>-<8 hex digits of sha256>``."""
    return f"{symptom}-{hashlib.sha256(signature.encode()).hexdigest()[:8]}"
