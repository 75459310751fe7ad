"""The root-cause key: which bucket (one bundle) a finding belongs to. A bundle is one
*fault*, one faulty decision in one place of the target's code, whatever symptoms it shows.

key = target | culprit | kind | fault signature

* **Culprit**: of the minimal pass subsequence localized on the *minimized* model, the first
  pass after which the intermediate model is already wrong
  (:func:`fuzzer.localize.culprit.find_culprit` judges every intermediate), else the last
  pass (the others of that subsequence are its enablers); ``(framework)`` where the bug
  shows with no pass at all, ``(unlocalized)`` where localization found nothing.
* **Kind** (:attr:`oracles.base.Symptom.fault`), never the symptom itself for a wrong
  rewrite: one wrong rewrite shows as an invalid model, a load or run-time failure or wrong
  outputs depending on what consumes its result, and those are variants of one bundle.
  ``rewrite`` for those symptoms, and for a crash that a later pass only exposed (the
  culprit's damage is the fault, not the site where something tripped over it); ``crash``
  for an exception, a signal or a sanitizer report of the pass at fault; the symptom's own
  name for the others (``bloat``, ``metadata-change``, ``hang``, ``slow``).
* **Fault signature**. For a wrong rewrite, its **footprint**: the op types the culprit
  removed and added on the minimized model, from the op-type multisets of its input and
  output (``-BatchNormalization+Mul``), or for a fusion only the op types it folded in
  (``-Add-Conv``: the helpers it adds vary with where the fused parameters come from): the
  same rewrite in any surrounding model gives the same footprint; for a rewrite that keeps
  every op type, the attributes its nodes lost or gained (``-Constant.sparse_value``);
  `` (element type)`` is appended where the damage is a wrong element type
  (:data:`TYPE_DAMAGE`).
  For a crash, the *crash site*, as bucketing by crash state does it
  (ClusterFuzz groups crashes by the top frames of their stack; OATest and GenCoG by the
  normalized last error line): the exception class and the source location the optimizer
  prints (``fuse_bn_into_conv.h:87``) are kept, while tensor and node names (the model's
  own, wherever they stand in the message, and any generated one), numbers, addresses,
  paths, shapes (:func:`fuzzer.findings.signature.normalize_message`) and the op types of
  nodes the culprit does not anchor on are replaced by placeholders; a crash with no site
  of its own (a SIGSEGV, an impossible allocation: :data:`SITELESS`) is one site of its
  culprit. A symptom whose
  message names values rather than causes ("3 of 8 values differ") uses the detail field
  its registry record names instead (``Symptom.key_detail``).
* **Name clash**: where the trigger probes (:mod:`fuzzer.reduce.probes`) show that a wrong
  rewrite or a crash needs a tensor named like the optimizer's own temporaries, that need is
  the signature instead of the footprint or the crash site: a rewrite that names its new
  tensors from onnx IR's value counter breaks whichever rule the existing name happens to
  hit, or trips over it in an assertion, one bug seen four ways (onnxoptimizer 0.4.2's
  ``fuse_bn_into_conv``: a duplicate initializer, SSA, topological order, ``eraseOutput``).

Bucketing on the minimized model and a key fixed by the culprit follow Igor (CCS'21: shrink
first, then cluster) and BugLens (arXiv 2506.23281: the minimal pass set as the primary
key); ranking root causes for a person follows Tamer (PLDI'13).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from fuzzer.findings.signature import SITELESS, SITELESS_CORE, normalize_message
from fuzzer.targets.base import ANY
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
#: the node name onnx's shape inference adds where the node has one (``(op_type:TopK, node
#: name: model/topk_47/TopK): Output 1 is out of bounds``; ``(op_type:TopK): ...`` where it
#: has none): the model's, not the site.
_NODE_NAME = re.compile(r", node name: [^)]*\)")


def message_core(message: str, keep_ops: Iterable[str] = (),
                 names: Iterable[str] = ()) -> str:
    """The crash site of ``message``: the node context onnxruntime prints and the node name
    onnx's shape inference prints removed (:data:`_NODE_CONTEXT`, :data:`_NODE_NAME`),
    every whole-word occurrence of one of ``names`` (the model's tensor, node, graph and
    function names: :func:`model_names`) replaced by ``<name>``,
    :func:`normalize_message`, then every op type name other than ``keep_ops`` (the
    culprit's anchors) replaced by ``<op>``."""
    keep = set(keep_ops)
    text = _NODE_NAME.sub(")", _NODE_CONTEXT.sub("In Node <node>: ", message))
    text = _replace_names(text, names)
    text = normalize_message(text)

    def op(match: re.Match[str]) -> str:
        word = match.group(0)
        return word if word in keep or word not in _op_types() else OP_PLACEHOLDER

    return re.sub(r"\b[A-Z][A-Za-z0-9]*\b", op, text)


#: words a message uses of its own, never replaced as a model's name even where a model
#: names a tensor so (``input``, ``X``): replacing them would split one message in two.
MESSAGE_WORDS = frozenset({
    "input", "inputs", "output", "outputs", "graph", "node", "nodes", "initializer", "tensor",
    "shape", "type", "data", "value", "values", "axes", "axis", "name", "model", "in", "of",
    "the", "and", "or", "not", "is", "X", "Y", "A", "B", "C", "W", "R", "M", "N", "T"})


def _replace_names(text: str, names: Iterable[str]) -> str:
    """``text`` with every whole-word occurrence of one of ``names`` replaced by
    ``<name>``, longest names first (so ``conv.weight`` goes before ``conv``); empty names,
    :data:`MESSAGE_WORDS`, op type names and plain numbers are left alone (a number is
    :func:`normalize_message`'s ``<n>`` whether or not the model names a tensor so: a hang's
    "no result after 30 s" of a model with a tensor ``30`` made a second bundle of one
    onnxslim hang)."""
    # only names the text holds at all: a model's names run to thousands, and a pattern of
    # all of them was compiled anew for every finding
    wanted = sorted({n for n in names if n and n in text and n not in MESSAGE_WORDS
                     and not n.isdigit() and n not in _op_types()}, key=len, reverse=True)
    if not wanted:
        return text
    pattern = re.compile("|".join(f"(?<![\\w.:/]){re.escape(n)}(?![\\w:/]|\\.\\w)"
                                  for n in wanted))
    return pattern.sub("<name>", text)


def model_names(*models: Any) -> set[str]:
    """Every tensor, node, graph and function name of ``models`` (``onnx.ModelProto``;
    None skipped), subgraphs included: what a message may name that belongs to the model,
    not to the fault."""
    from fuzzer.modelio.graphs import iter_graphs

    names: set[str] = set()
    for model in models:
        if model is None:
            continue
        for function in model.functions:
            names.add(function.name)
            names.update(o for n in function.node for o in (*n.input, *n.output))
        for graph in iter_graphs(model.graph):
            names.add(graph.name)
            for values in (graph.input, graph.output, graph.value_info, graph.initializer):
                names.update(v.name for v in values)
            for node in graph.node:
                names.add(node.name)
                names.update(node.input)
                names.update(node.output)
    names.discard("")
    return names


def model_names_of(*datas: bytes | None) -> set[str]:
    """:func:`model_names` of serialized models (missing or unreadable ones skipped)."""
    import onnx

    models = []
    for data in datas:
        if data:
            try:
                models.append(onnx.load_model_from_string(data))
            except Exception:
                continue
    return model_names(*models)


def op_footprint(original: Any, optimized: Any, anchors: Iterable[str] = ()) -> str:
    """``-A-B+C``: op types (main graph and subgraphs) of which ``optimized`` has fewer
    (``-``) or more (``+``) nodes than ``original``, sorted; when the multisets agree, the
    attributes its kept nodes lost or gained (:func:`attribute_footprint`).
    Where the pass only removed nodes, the removed side names only the nodes it acted on
    (:func:`removal_last`): of its ``anchors`` (the op types its rewrites match) the last it
    removed, as erasing one leaves its producers dead (onnxslim's dead_node_elimination
    erasing a Dropout whose mask is read takes its producer along, whatever its op type);
    for a pass that acts on any op (:data:`fuzzer.targets.base.ANY`: constant folding,
    common-subexpression elimination) none, as the region it removed is the model's.
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
    elif (added or not removed) and (replaced := rewritten(original, optimized)):
        # a fusion: the ops it folded in are the rewrite; the helpers it adds to compute
        # the fused parameters depend on whether they were initializers, Constants or
        # graph inputs (fuse_mul_into_conv's Reshape, Unsqueeze and Mul), not on the fault
        acted = set(anchors).intersection(replaced)
        return "".join(f"-{t}" for t in sorted(acted or replaced))
    elif removed and not added:
        acted = set(anchors).intersection(removed)
        if acted:  # it acts on its anchors; removing one leaves its producers dead
            removed = sorted(removal_last(original, optimized) & acted or acted)
        elif set(anchors) >= ANY:  # it acts on any op (folding): what it removed is the model's
            removed = []
    return "".join(f"-{t}" for t in removed) + "".join(f"+{t}" for t in added) or \
        attribute_footprint(original, optimized)


def attribute_footprint(original: Any, optimized: Any) -> str:
    """``-Op.attr+Op.attr``: the attributes that nodes of ``original``'s main graph lost
    (``-``) or gained (``+``) in ``optimized``, a node matched by its op type and first
    output, sorted; ``""`` where none did. The footprint of a rewrite that keeps every op
    type (:func:`op_footprint`): a load and save that drops a Constant's ``sparse_value``
    is another fault than one that drops a type's shape field. Names only, not values: a
    value is the model's. Arguments are ``onnx.ModelProto``."""
    before = {(n.op_type, n.output[0]): {a.name for a in n.attribute}
              for n in original.graph.node if n.output}
    changes = set()
    for node in optimized.graph.node:
        old = before.get((node.op_type, node.output[0])) if node.output else None
        if old is not None:
            new = {a.name for a in node.attribute}
            changes |= {("-", f"{node.op_type}.{a}") for a in old - new}
            changes |= {("+", f"{node.op_type}.{a}") for a in new - old}
    return "".join(sign + name for sign, name in sorted(changes, key=lambda c: (c[0] != "-",
                                                                             c[1])))


def rewritten(original: Any, optimized: Any) -> set[str]:
    """Op types of the nodes of ``original`` (main graph) that no node of ``optimized``
    stands for any more: none of their outputs is produced by a node of the same op type
    (a fused Mul whose output a Conv now produces is rewritten; a Conv that kept its output
    is not). Arguments are ``onnx.ModelProto``."""
    kept = {(node.op_type, out) for node in optimized.graph.node for out in node.output if out}
    return {n.op_type for n in original.graph.node
            if not any((n.op_type, out) in kept for out in n.output if out)}


def removal_last(original: Any, optimized: Any) -> set[str]:
    """Op types of the nodes of ``original`` that ``optimized`` no longer has (no output of
    theirs is produced any more) and whose outputs no other removed node reads: the last of
    each removed region. Arguments are ``onnx.ModelProto``; the main graph only."""
    kept = {out for node in optimized.graph.node for out in node.output if out}
    gone = [n for n in original.graph.node if not any(o in kept for o in n.output if o)]
    read = {name for node in gone for name in node.input}
    return {n.op_type for n in gone if not read.intersection(n.output)}


def footprint_of(model_bytes: bytes | None, optimized_bytes: bytes | None,
                 anchors: Iterable[str] = ()) -> str | None:
    """:func:`op_footprint` of two serialized models (``anchors``: the pass's); None when
    either is missing or unreadable."""
    import onnx

    if model_bytes is None or optimized_bytes is None:
        return None
    try:
        return op_footprint(onnx.load_model_from_string(model_bytes),
                            onnx.load_model_from_string(optimized_bytes), anchors)
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


#: the kinds of a wrong rewrite's and a crash's key (:attr:`oracles.base.Symptom.fault`).
REWRITE, CRASH = "rewrite", "crash"


#: a wrong rewrite whose damage is an element type (a Constant of a type its opset does not
#: allow, a value typed unlike what reads it), as the checker and onnxruntime word it: a
#: fault of its own beside a wrong shape or value of the same rewrite (onnxoptimizer
#: 0.4.2's fuse_add_bias_into_conv writes an int64 Constant into opset 8 models, and a
#: bias of the wrong rank into any; onnxslim 0.1.98's FusionConvBN folds float statistics
#: into a float16 Conv, "B has inconsistent type", and a FLT_MAX scale into an overflow;
#: its shape inference records float for a double, "Inferred elem type differs", and
#: wrong shapes).
TYPE_DAMAGE = re.compile(r"unsupported type|Type Error|type mismatch|does not match expected "
                         r"type|bound to different types|has inconsistent type|elem type "
                         r"differs")
DTYPE = " (element type)"


def damage_class(finding: Finding) -> str:
    """:data:`DTYPE` when ``finding`` shows a wrong element type (:data:`TYPE_DAMAGE` in its
    message, or outputs of another dtype), else ``""``: the suffix of a wrong rewrite's
    signature."""
    wrong_type = TYPE_DAMAGE.search(finding.message) or finding.detail.get("class") == "dtype"
    return DTYPE if wrong_type else ""


def fault_kind(finding: Finding, exposed: bool = False) -> str:
    """The kind field of ``finding``'s key: ``rewrite`` for a wrong rewrite, and for any
    finding a later pass only exposed (``exposed``: the culprit is not the pass the
    symptom showed in); ``crash`` for a crash of the culprit itself; else the symptom's
    name."""
    record = symptom_record(finding.symptom)
    if exposed or record.fault == REWRITE:
        return REWRITE
    return record.fault or finding.symptom


def root_cause_key(target: str, culprit: str, finding: Finding,
                   footprint: str | None = None, keep_ops: Iterable[str] = (),
                   trigger: str | None = None, names: Iterable[str] = (),
                   exposed: bool = False) -> str:
    """The bucket key of ``finding`` (see the module docstring): ``culprit`` is the pass
    at fault; ``footprint`` what it did (used for a wrong rewrite); ``keep_ops`` its
    anchors; ``trigger`` the trigger probes' sentence where they ran (a name clash is the
    signature of a wrong rewrite); ``names`` the model's own names, replaced in a message
    core; ``exposed`` that a later pass only tripped over the culprit's damage."""
    kind = fault_kind(finding, exposed)
    if kind == CRASH and needs_name_clash(trigger):
        kind = REWRITE  # the culprit's names clashed; where it trips over them is a symptom
    if kind == REWRITE:
        core = "name clash" if needs_name_clash(trigger) else \
            "fp:" + (footprint or "") + damage_class(finding)
    elif kind == CRASH and SITELESS.search(finding.message):
        core = SITELESS_CORE
    else:
        record = symptom_record(finding.symptom)
        detail = finding.detail.get(record.key_detail) if record.key_detail else None
        core = str(detail) if detail is not None else \
            message_core(finding.message, keep_ops, names)
    return "|".join([target, culprit, kind, core])


def shared_cause_key(target: str, cause: str, finding: Finding) -> str:
    """The bucket key of ``finding`` where the target explains it by a cause outside any
    pass (:meth:`fuzzer.targets.base.Target.shared_cause`): one bucket per cause and kind of
    fault, whatever pass or message shows it."""
    return "|".join([target, f"({cause})", fault_kind(finding), cause])


#: the culprit field of a key taken from a crash state (no pass: one memory fault is one
#: bucket whichever pass reached it).
CRASH_STATE = "(crash state)"


def crash_state_key(target: str, kind: str, frames: Iterable[str], location: str = "") -> str:
    """The bucket key of a crash whose sanitizer report (on the target's sanitize build)
    names crash type ``kind`` and top ``frames`` (function names, innermost first; else
    ``location``): one bucket per crash state, whatever pass or symptom showed it
    (ClusterFuzz's crash state: type plus top three frames)."""
    where = " < ".join(frames) or location or "(no frame)"
    return "|".join([target, CRASH_STATE, CRASH, f"{kind} in {where}"])


def root_cause_id(symptom: str, key: str) -> str:
    """The bundle folder name of a root cause first seen as ``symptom``:
    ``<symptom>-<8 hex digits of sha256 of the key>``."""
    return f"{symptom}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"
