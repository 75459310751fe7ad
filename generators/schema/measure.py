"""Which feature pairs generated models exercise, read from the models themselves.

For each motif draw of a generated model (:attr:`generators.generate.GeneratedModel.spans`),
every anchor node of the draw is classified by reading it: its op's version at the model's
opset, the element type bound to each type constraint (from shape inference), each
attribute's level (:func:`generators.schema.levels.classify`), each optional input's and
output's level (whether a node reads the output, whether it is a graph output). The pairs of
those levels are what the draw exercised. :func:`schema_coverage` adds them up over cases
and sets them against the feasible pairs of each motif's plan.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import NodeProto, TypeProto, defs

from generators.schema.apply import DTYPE_NAMES, bindings
from generators.schema.levels import (
    ABSENT,
    CONSUMED,
    DTYPE_ATTRS,
    EMPTY,
    OUTPUT,
    PRESENT,
    UNUSED,
    classify,
    schema_default,
)
from generators.schema.limits import limit_of
from generators.schema.space import OPSET, Pair, pair_of


def node_levels(node: NodeProto, schema: defs.OpSchema, types: dict[str, TypeProto],
                readers: set[str], graph_outputs: set[str]) -> dict[str, str]:
    """``factor -> level`` of one node (factor names of :mod:`generators.schema.space`).

    Args:
        node: the node.
        schema: its schema at the model's opset.
        types: tensor name -> inferred TypeProto.
        readers: every tensor name some node (or subgraph) of the model reads.
        graph_outputs: the main graph's output names.
    """
    out: dict[str, str] = {OPSET: str(schema.since_version)}
    params = {tc.type_param_str for tc in schema.type_constraints}
    for name, _, ts in bindings(schema, node):
        key = f"dtype:{ts}"
        if ts in params and key not in out:
            t = types.get(name)
            elem = t.tensor_type.elem_type if t is not None and t.HasField("tensor_type") \
                else 0
            if elem:
                out[key] = DTYPE_NAMES.get(elem, str(elem))
    given = {a.name: a for a in node.attribute}
    for name, spec in schema.attributes.items():
        if name in DTYPE_ATTRS:
            continue
        default = schema_default(spec)
        out[f"attr:{name}"] = classify(node.op_type, given.get(name), default)
    optional = defs.OpSchema.FormalParameterOption.Optional
    variadic = defs.OpSchema.FormalParameterOption.Variadic
    for i, p in enumerate(schema.inputs):
        if p.option == variadic:
            break
        if p.option == optional:
            out[f"in:{p.name}"] = ABSENT if i >= len(node.input) else (
                EMPTY if node.input[i] == "" else PRESENT)
    for i, p in enumerate(schema.outputs):
        if p.option == variadic:
            break
        if p.option == optional:
            name = node.output[i] if i < len(node.output) else ""
            out[f"out:{p.name}"] = ABSENT if not name else OUTPUT if name in graph_outputs \
                else CONSUMED if name in readers else UNUSED
    return out


def level_pairs(levels: dict[str, str]) -> set[Pair]:
    """Every pair of a node's (factor, level) choices."""
    return {pair_of(a, b) for a, b in itertools.combinations(sorted(levels.items()), 2)}


def _readers(graph: onnx.GraphProto) -> set[str]:
    out: set[str] = set()
    for n in graph.node:
        out.update(n.input)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                out |= _readers(g)
                out.update(o.name for o in g.output)
    return out


def model_pairs(gm: Any, anchors_of: Callable[[str], tuple[str, ...]]
                ) -> dict[str, dict[str, set[Pair]]]:
    """``motif -> anchor op -> pairs`` the draws of generated model ``gm`` exercised.

    Args:
        gm: a :class:`generators.generate.GeneratedModel`.
        anchors_of: motif name -> its anchor ops.
    """
    model = gm.model
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an invalid model exercises nothing
        return {}
    g = inferred.graph
    types = {vi.name: vi.type for vi in [*g.input, *g.value_info, *g.output]}
    for t in g.initializer:
        types.setdefault(t.name, onnx.helper.make_tensor_type_proto(t.data_type,
                                                                    list(t.dims)))
    readers = _readers(model.graph)
    outputs = {o.name for o in model.graph.output}
    nodes = model.graph.node
    out: dict[str, dict[str, set[Pair]]] = {}
    for motif, start, end in gm.spans:
        anchors = {a.rpartition("::")[2] for a in anchors_of(motif)}
        for node in nodes[start:end]:
            if node.op_type not in anchors or node.domain not in ("", "ai.onnx"):
                continue
            try:
                schema = defs.get_schema(node.op_type, gm.opset, node.domain)
            except defs.SchemaError:
                continue
            levels = node_levels(node, schema, types, readers, outputs)
            out.setdefault(motif, {}).setdefault(node.op_type, set()).update(
                level_pairs(levels))
    return out


@dataclass
class MotifCoverage:
    """Pair coverage of one motif over some cases.

    Attributes:
        motif: motif name.
        anchors: its anchor ops.
        draws: draws of the motif among the cases; ``varied``: those that took a plan row.
        feasible: anchor op -> feasible pairs (the plan's).
        covered: anchor op -> feasible pairs some draw exercised.
        infeasible: reason -> number of pairs no valid model can hold for it.
        notes: reason -> draws that could not take a level for it.
        uncovered: reason -> uncovered feasible pairs it explains (the draws' notes about
            either choice of the pair, else "no draw took this pair").
        missing: anchor ops without an ONNX schema, with the reason.
        unplanned: anchor op -> {pair: reason} for feasible pairs no plan row holds.
    """

    motif: str
    anchors: tuple[str, ...]
    draws: int = 0
    varied: int = 0
    feasible: dict[str, frozenset[Pair]] = field(default_factory=dict)
    covered: dict[str, set[Pair]] = field(default_factory=dict)
    infeasible: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    uncovered: Counter[str] = field(default_factory=Counter)
    missing: dict[str, str] = field(default_factory=dict)
    unplanned: dict[str, dict[Pair, str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Feasible pairs of all anchors."""
        return sum(len(p) for p in self.feasible.values())

    @property
    def hit(self) -> int:
        """Feasible pairs some draw exercised."""
        return sum(len(self.covered.get(op, set()) & p) for op, p in self.feasible.items())

    @property
    def share(self) -> float:
        """hit / total (0 where nothing is feasible)."""
        return self.hit / self.total if self.total else 0.0

    @property
    def limits(self) -> Counter[str]:
        """Uncovered pairs whose reason is a limit of what the anchors can take, by kind
        (:func:`generators.schema.limits.limit_of`)."""
        out: Counter[str] = Counter()
        for why, n in self.uncovered.items():
            kind = limit_of(why)
            if kind:
                out[kind] += n
        return out

    @property
    def accounted(self) -> float:
        """(pairs exercised + uncovered pairs the anchors cannot take) / feasible pairs: the
        share the generator's own gaps leave out of 1 (0 where nothing is feasible)."""
        return (self.hit + sum(self.limits.values())) / self.total if self.total else 0.0

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        limits = self.limits
        return {"motif": self.motif, "anchors": list(self.anchors), "draws": self.draws,
                "varied": self.varied, "pairs": self.total, "covered": self.hit,
                "share": round(self.share, 4),
                "limits": dict(limits.most_common()),
                "gaps": self.total - self.hit - sum(limits.values()),
                "accounted": round(self.accounted, 4),
                "per_op": {op: {"pairs": len(p), "covered": len(self.covered.get(op, set())
                                                                 & p)}
                           for op, p in self.feasible.items()},
                "infeasible": dict(self.infeasible.most_common()),
                "uncovered_reasons": dict(self.uncovered.most_common(10)),
                "missing": self.missing}


_NOTE = re.compile(r"^(?P<op>[^|]+)\|(?P<factor>[^=]+)=(?P<level>[^:]+): (?P<why>.*)$")
#: a note about a whole anchor op (``"Softmax|*: the draw made no Softmax node"``).
_OP_NOTE = re.compile(r"^(?P<op>[^|*]+)\|\*: (?P<why>.*)$")


def _normalize(why: str) -> str:
    return re.sub(r"\(\d[\d, ]*\)", "(…)", re.sub(r"Node\([^)]*\)", "Node", why))[:140]


def _note_undone(varied: dict[str, Any], into: dict[tuple[str, Pair], str]) -> None:
    """Where a varied draw was undone as a whole (a note ``"*: ..."``), its reason for each
    (anchor op, pair) of the row it was to take (first reason kept)."""
    from generators.schema.plan import motif_plan, op_pairs_with_opset

    whole = next((n[3:] for n in varied["notes"] if n.startswith("*: ")), None)
    plan = motif_plan(varied["motif"]) if whole else None
    if plan is None or whole is None or not 0 <= varied["row"] < len(plan.rows):
        return
    for key in op_pairs_with_opset(plan.rows[varied["row"]], plan.spaces):
        into.setdefault(key, _normalize(whole))


def _op_reason(op: str, notes: Counter[tuple[str, str]]) -> str:
    """The reason of the notes about anchor ``op`` as a whole (a motif of variants: some
    draws that took a row made no ``op`` node), or ""."""
    top = max(((n, why) for (o, why), n in notes.items() if o == op), default=None)
    return f"{top[1]} ({top[0]} draws; the motif makes it in some variants)" if top else ""


def at_opset(plan: Any, opset: int) -> tuple[dict[str, frozenset[Pair]], Counter[str]]:
    """``plan``'s feasible pairs that a model of opset ``opset`` can hold: the op's version
    in force there allows both levels, and the plan's checks (onnxruntime's kernels, the
    rules, the motif's ties) pass for them at that opset; and, by reason, how many cannot."""
    from generators.schema.plan import _checker, probe
    from generators.schema.rows import key

    check = _checker(plan.spaces, probe(plan.motif, *plan.opsets)[0])
    iv = next((iv for iv in plan.intervals if iv[0] <= opset <= iv[1]), None)
    kept: dict[str, frozenset[Pair]] = {}
    left: Counter[str] = Counter()
    for op, pairs in plan.pairs.items():
        space = plan.spaces[op]
        v = space.version_at(opset)
        ok = set()
        for p in pairs:
            why = f"the pass's hint pins opset {opset}: out of reach of {op} there"
            if v is not None and iv is not None and space.allows(v, dict(p)):
                why = check({OPSET: str(iv[0]), **{key(op, f): lv for f, lv in p
                                                   if f != OPSET}})
            if why is None:
                ok.add(p)
            else:
                left[why if why.startswith("the pass") else
                     f"the pass's hint pins opset {opset}: {why}"] += 1
        kept[op] = frozenset(ok)
    return kept, left


def schema_coverage(draws: Iterable[Any], motifs: Iterable[str],
                    opset: int | None = None) -> dict[str, MotifCoverage]:
    """Pair coverage per motif of generated models ``draws`` (GeneratedModels), for the
    motifs named in ``motifs`` that declare anchors; with ``opset`` (a pass whose hint pins
    the models' opset), only the pairs a model of that opset can hold count as feasible,
    the others as infeasible for that reason (:func:`at_opset`)."""
    from generators.motifs import MOTIFS
    from generators.schema.plan import motif_plan

    report: dict[str, MotifCoverage] = {}
    for name in motifs:
        m = MOTIFS[name]
        if not m.anchors or name in report:
            continue
        plan = motif_plan(name)
        cov = MotifCoverage(name, m.anchors)
        if plan is not None:
            cov.feasible = dict(plan.pairs)
            if opset is not None:
                cov.feasible, left = at_opset(plan, opset)
                cov.infeasible.update(left)
            cov.missing = dict(plan.missing)
            cov.unplanned = getattr(plan, "unplanned", {})
            for bad in plan.infeasible.values():
                cov.infeasible.update(bad.values())
        report[name] = cov
    by_choice: dict[str, Counter[tuple[str, str, str]]] = {}
    by_op: dict[str, Counter[tuple[str, str]]] = {}
    undone: dict[str, dict[tuple[str, Pair], str]] = {}
    for gm in draws:
        for motif, _, _ in gm.spans:
            if motif in report:
                report[motif].draws += 1
        for v in gm.varied:
            if v["motif"] not in report:
                continue
            report[v["motif"]].varied += 1
            _note_undone(v, undone.setdefault(v["motif"], {}))
            for note in v["notes"]:
                whole = _OP_NOTE.match(note)
                if whole:
                    by_op.setdefault(v["motif"], Counter())[
                        (whole["op"], _normalize(whole["why"]))] += 1
                hit = _NOTE.match(note)
                why = _normalize(hit["why"] if hit else note)
                report[v["motif"]].notes[why] += 1
                if hit:
                    by_choice.setdefault(v["motif"], Counter())[
                        (hit["op"], hit["factor"], hit["level"])] += 0
                    by_choice[v["motif"]][(hit["op"], hit["factor"], why + "\0" +
                                           hit["level"])] += 1
        for motif, per_op in model_pairs(gm, lambda n: MOTIFS[n].anchors).items():
            if motif in report:
                for op, pairs in per_op.items():
                    report[motif].covered.setdefault(op, set()).update(pairs)
    for name, cov in report.items():
        reasons = by_choice.get(name, Counter())
        for op, pairs in cov.feasible.items():
            for p in pairs - cov.covered.get(op, set()):
                best = None
                for (f, lv) in p:
                    for (o, factor, why_level), n in reasons.most_common():
                        if o == op and factor == f and "\0" in why_level and \
                                why_level.split("\0")[1] == lv and n:
                            best = why_level.split("\0")[0]
                            break
                    if best:
                        break
                best = best or _normalize(cov.unplanned.get(op, {}).get(p, "")) or \
                    _op_reason(op, by_op.get(name, Counter())) or \
                    undone.get(name, {}).get((op, p))
                cov.uncovered[best or "no draw took this pair"] += 1
    return report
