"""The root-cause key: which bucket (one bundle) a finding belongs to.

key = target | breaking pass | symptom | core [| footprint]

* **Breaking pass**: of the minimal pass subsequence localized on the *minimized* model,
  the pass whose prefix first damages the model, else the last pass (the others of that
  subsequence are its enablers; :func:`fuzzer.campaign.record.blame` decides, with runs);
  ``(framework)`` where the bug shows with no pass at all, ``(unlocalized)`` where
  localization found nothing.
* **Core** of the message, the *crash site* as bucketing by crash state does it (ClusterFuzz
  groups crashes by the top frames of their stack; OATest and GenCoG by the normalized last
  error line): the exception class and the source location the optimizer prints
  (``fuse_bn_into_conv.h:87``) are kept, while tensor and node names, numbers, addresses,
  paths, shapes (:func:`fuzzer.findings.signature.normalize_message`) and the op types of
  nodes the breaking pass does not anchor on are replaced by placeholders. A symptom whose
  message names values rather than causes ("3 of 8 values differ") uses the detail field
  its registry record names instead (``Symptom.key_detail``: the kind of mismatch, the task).
* **Footprint**, for symptoms whose record asks for it (wrong outputs, invalid models): the op
  types the breaking pass removed and added on the minimized model, from the op-type
  multisets of its input and output (``-BatchNormalization+Mul``), instead of a hash of the
  whole graph: the same rewrite in any surrounding model gives the same footprint.
* **Name clash**: where the trigger probes (:mod:`fuzzer.reduce.probes`) show that a wrong
  output, invalid model or run-time failure needs a tensor named like the optimizer's own
  temporaries, that need is the core instead of the class of the damage: a rewrite that names
  its new tensors from onnx IR's value counter breaks whichever rule the existing name
  happens to hit (an initializer twice: "initializer name is not unique"; a node output:
  SSA; a tensor read before it is made: topological order), one bug seen three ways
  (onnxoptimizer 0.4.2's ``fuse_bn_into_conv``).

Bucketing on the minimized model and a key fixed by the breaking pass follow Igor (CCS'21:
shrink first, then cluster) and BugLens (arXiv 2506.23281: the minimal pass set as the primary
key); ranking root causes for a person follows Tamer (PLDI'13).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from fuzzer.findings.signature import normalize_message
from oracles import symptom as symptom_record
from oracles.base import Finding

FRAMEWORK = "(framework)"
UNLOCALIZED = "(unlocalized)"
OP_PLACEHOLDER = "<op>"
#: the trigger clause of a failure that needs a plain-number tensor name (the names an
#: optimizer numbering its temporaries from onnx IR's value counter makes).
NAME_CLASH = "a tensor named like the optimizer's own temporaries (a plain number)"


@lru_cache(maxsize=1)
def _op_types() -> frozenset[str]:
    import onnx

    return frozenset(s.name for s in onnx.defs.get_all_schemas_with_history())


#: Where a message names the node it failed at (onnxruntime's ``In Node, ("", If, "", -1)
#: : ("t9": tensor(bool),) -> ("t13": tensor(float),) , Error ...``): the node is the model's,
#: the error after it is the site.
_NODE_CONTEXT = re.compile(r"In Node, \(.*?\) : \(.*?\) -> \(.*?\) ,\s*")


def message_core(message: str, keep_ops: Iterable[str] = ()) -> str:
    """The crash site of ``message``: the node context onnxruntime prints removed
    (:data:`_NODE_CONTEXT`), :func:`normalize_message`, then every op type name other than
    ``keep_ops`` (the breaking pass's anchors) replaced by ``<op>``."""
    keep = set(keep_ops)
    text = normalize_message(_NODE_CONTEXT.sub("In Node <node>: ", message))

    def op(match: re.Match[str]) -> str:
        word = match.group(0)
        return word if word in keep or word not in _op_types() else OP_PLACEHOLDER

    return re.sub(r"\b[A-Z][A-Za-z0-9]*\b", op, text)


def op_footprint(original: Any, optimized: Any) -> str:
    """``-A-B+C``: op types (main graph and subgraphs) of which ``optimized`` has fewer
    (``-``) or more (``+``) nodes than ``original``, sorted; ``""`` when the multisets agree.
    Where a node that holds subgraphs (If, Loop, Scan) went away, only such op types are
    kept: the ops of the branch it inlined or dropped belong to the model, not to the
    rewrite (an If on a constant condition is one rewrite whatever its branches hold).
    Arguments are ``onnx.ModelProto``."""
    from fuzzer.modelio.graphs import iter_graphs, subgraphs
    from oracles.base import op_counts

    before, after = op_counts(original.graph), op_counts(optimized.graph)
    removed = sorted(t for t in before if before[t] > after[t])
    added = sorted(t for t in after if after[t] > before[t])
    holders = {n.op_type for g in iter_graphs(original.graph) for n in g.node if subgraphs(n)}
    if holders.intersection(removed):
        removed = [t for t in removed if t in holders]
        added = [t for t in added if t in holders]
    return "".join(f"-{t}" for t in removed) + "".join(f"+{t}" for t in added)


def footprint_of(model_bytes: bytes | None, optimized_bytes: bytes | None) -> str | None:
    """:func:`op_footprint` of two serialized models; None when either is missing or
    unreadable."""
    import onnx

    if model_bytes is None or optimized_bytes is None:
        return None
    try:
        return op_footprint(onnx.load_model_from_string(model_bytes),
                            onnx.load_model_from_string(optimized_bytes))
    except Exception:
        return None


def breaking_and_enabling(passes: list[str] | None) -> tuple[str, list[str]]:
    """``(breaking pass, enabling passes)`` of a minimal pass subsequence: the last pass is
    the one that breaks (the others prepared the graph for it)."""
    if passes is None:
        return UNLOCALIZED, []
    if not passes:
        return FRAMEWORK, []
    return passes[-1], list(passes[:-1])


def needs_name_clash(trigger: str | None) -> bool:
    """Whether the trigger sentence ``trigger`` (a bundle's ``trigger``) says the failure
    needs a tensor named like the optimizer's own temporaries."""
    return bool(trigger) and trigger.startswith("needs ") and NAME_CLASH in trigger


def root_cause_key(target: str, breaking: str, finding: Finding,
                   footprint: str | None = None, keep_ops: Iterable[str] = (),
                   trigger: str | None = None) -> str:
    """The bucket key of ``finding`` (see the module docstring); ``footprint`` is used only
    where the symptom's record asks for one, ``keep_ops`` are the breaking pass's anchors,
    ``trigger`` is the trigger probes' sentence where they ran (a name clash is the core of
    a footprint-keyed symptom)."""
    record = symptom_record(finding.symptom)
    detail = finding.detail.get(record.key_detail) if record.key_detail else None
    core = str(detail) if detail is not None else message_core(finding.message, keep_ops)
    if record.footprint and needs_name_clash(trigger):
        core = "name clash"
    parts = [target, breaking, finding.symptom, core]
    if record.footprint:
        parts.append("fp:" + (footprint or ""))
    return "|".join(parts)


def root_cause_id(symptom: str, key: str) -> str:
    """The bundle folder name of a root cause: ``<symptom>-<8 hex digits of sha256>``."""
    return f"{symptom}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"
