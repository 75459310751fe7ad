"""Pairwise plans: for each motif, rows of feature levels of its anchor ops that together
cover every feasible pair of levels of one anchor op.

The plan of a motif is one covering array over the joint factors of its anchor ops plus an
``opset`` factor (the opset intervals in which every anchor's version, and the Cast version
that brings values into another element type, stay the same). Rows are drawn by
``allpairspy`` (the AllPairs algorithm of MetaCommunications, a greedy all-pairs generator
in the AETG family: Cohen, Dalal, Fredman, Patton, "The AETG system", IEEE TSE 23(7), 1997)
with a filter that rejects combinations the schema or onnxruntime's CPU kernels do not
allow; AllPairs may stop before a pair whose only completions the filter rejects, so each
pair it left is completed by a greedy row of its own. A pair no row can hold is
*infeasible* and kept with its reason.

The plan is a pure function of the motif, the installed onnx (schemas) and onnxruntime
(kernels); it is built once per process and motif (:func:`motif_plan`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import cache

from onnx import NodeProto

from generators.schema.kernels import cast_reason, kernel_reason
from generators.schema.levels import NA
from generators.schema.rows import SEP, MotifPlan, Row, key
from generators.schema.rules import refusal
from generators.schema.space import OPSET, OpSpace, Pair, op_space, pair_of
from generators.schema.store import load_plan, store_plan
from generators.versions import MAX_OPSET, MIN_OPSET

#: element type the motifs emit their float pattern in; a plan row's other element types
#: are brought in and out by Cast from and to it.
BASE = "float"


def _intervals(spaces: dict[str, OpSpace], lo: int, hi: int) -> tuple[tuple[int, int], ...]:
    from onnx import defs

    def signature(o: int) -> tuple[int, ...]:
        versions = []
        for s in spaces.values():
            v = s.version_at(o)
            versions.append(v.version if v else -1)
        versions.append(defs.get_schema("Cast", o, "").since_version)
        return tuple(versions)

    out: list[tuple[int, int]] = []
    prev = None
    for o in range(lo, hi + 1):
        sig = signature(o)
        if out and sig == prev:
            out[-1] = (out[-1][0], o)
        else:
            out.append((o, o))
        prev = sig
    return tuple(out)


#: (anchor op, type parameter) -> the (op, type parameter) of every node of the motif's
#: pattern tied to it (:func:`generators.schema.apply.type_component`); ``(op, "tensor(t)")``
#: where an anchor ``op`` takes the tied tensor in type ``t`` only (a Reshape's shape).
Ties = dict[tuple[str, str], frozenset[tuple[str, str]]]

_PROBE_SHAPES = {0: (), 1: (4,), 2: (3, 4), 3: (2, 3, 4), 4: (1, 3, 5, 5), 5: (1, 2, 3, 4, 4)}


def probe_ties(name: str, lo: int, hi: int) -> Ties:
    """Which type parameters a draw of motif ``name`` ties together: a few plain draws at
    opsets ``lo`` and ``hi`` into an empty builder and one aimed at each anchor op, read
    by the union-find over the window's type parameters. (A plan row that gives tied
    parameters different types, or a type a tied node has no kernel for, cannot be
    drawn.)"""
    return probe(name, lo, hi)[0]


@cache
def probe_windows(name: str, lo: int, hi: int, unit: bool = False, aimed: bool = False
                  ) -> tuple[tuple[int, tuple[NodeProto, ...]], ...]:
    """``(opset, nodes)`` of a few plain draws of motif ``name`` at opsets ``lo`` and ``hi``
    into an empty builder: the nodes each draw appended (draws the motif cannot take are
    left out); ``unit``: the input's first dim is 1 (a motif that broadcasts a unit dim
    takes no other); ``aimed``: one draw per anchor op instead, aimed at it
    (:attr:`generators.builder.GraphBuilder.aim`: a motif of variants makes that one)."""
    import random

    from generators.builder import GraphBuilder
    from generators.motifs import MOTIFS
    from generators.names import Namer
    from generators.pooled_random import PooledRandom
    from generators.schema.apply import AIMED_TRIES, Mark
    from generators.values import FLOAT

    m = MOTIFS[name]
    rank = min(max(m.ranks[0], 2), m.ranks[1])
    dtype = FLOAT if FLOAT in m.dtypes else min(m.dtypes)
    out: list[tuple[int, tuple[NodeProto, ...]]] = []
    aims = [a for a in m.anchors if "::" not in a] if aimed else [None] * 4
    def window(seed: int, opset: int, aim: str | None) -> tuple[NodeProto, ...] | None:
        rng = random.Random(seed)
        b = GraphBuilder(rng, PooledRandom(rng), opset, Namer("plain", rng))
        b.aim = aim
        if m.setup is not None:
            m.setup(b)
        shape = _PROBE_SHAPES[rank]
        x = b.graph_input(dtype, (1, *shape[1:]) if unit and shape else shape)
        mark = Mark.of(b)
        try:
            if m.emit is None or m.emit(b, x) is None:
                return None
        except Exception:  # a probe the motif cannot take: other probes may
            return None
        return tuple(b.nodes[mark.nodes:])

    for seed, aim in enumerate(aims):
        for opset in sorted({lo, hi}):
            got = window(seed, opset, aim)
            # a motif whose draw does not read the aim makes the op at random: other seeds,
            # as many as a walk's aimed draw tries (apply.AIMED_TRIES)
            for retry in range(1, AIMED_TRIES if aim is not None and _exists(aim, opset)
                               else 1):
                if got is not None and aim in _made(got):
                    break
                again = window(len(aims) + seed * AIMED_TRIES + retry, opset, aim)
                got = again if again is not None and aim in _made(again) else got
            if got is not None:
                out.append((opset, got))
    return tuple(out)


def always_made(name: str, lo: int, hi: int) -> frozenset[str]:
    """The anchor ops (default domain) of motif ``name`` that every probe draw
    (:func:`probe_windows`, of either first dim, and aimed at each anchor op) made where
    the op exists at the draw's opset; all of them unless the motif is one of variants."""
    from generators.motifs import MOTIFS

    anchors = {a for a in MOTIFS[name].anchors if "::" not in a}
    for opset, window in probe_windows(name, lo, hi) + probe_windows(name, lo, hi, True) + \
            probe_windows(name, lo, hi, aimed=True):
        anchors = {a for a in anchors if a in _made(window) or not _exists(a, opset)}
    return frozenset(anchors)


@cache
def probe(name: str, lo: int, hi: int) -> tuple[Ties, bool]:
    """:func:`probe_ties` (over the plain probes and those aimed at each anchor op), and
    whether every plain probe draw made every anchor op that exists at its opset (False
    for a motif of variants, such as a Pad before a Conv in one draw and before a MaxPool
    in another: its ties are a union over draws that no single draw holds)."""
    anchors = _anchor_ops(name)
    windows = probe_windows(name, lo, hi)
    joint = all(a in _made(window) for opset, window in windows
                for a in anchors if _exists(a, opset))
    # the ties of the probes aimed at each anchor too: plain probes of a motif of variants
    # may never make one of them, whose ties the rows would then not hold
    return _ties(_with_aimed(name, lo, hi), anchors), joint


@cache
def variant_ties(name: str, lo: int, hi: int, op: str) -> Ties:
    """The ties of the probe draws of motif ``name`` that made anchor ``op``: what a draw
    aimed at ``op`` ties (:mod:`generators.schema.walk`), without the ties of variants
    that make no ``op``; the probes aimed at ``op`` count too (plain probes of a motif of
    three variants may all make the other two)."""
    return _ties(tuple(w for w in _with_aimed(name, lo, hi) if op in _made(w[1])),
                 _anchor_ops(name))


def _with_aimed(name: str, lo: int, hi: int) -> tuple[tuple[int, tuple[NodeProto, ...]], ...]:
    """The plain probe windows of motif ``name`` and those aimed at each anchor op
    (:func:`probe_windows`), whose ties a plan reads."""
    return probe_windows(name, lo, hi) + probe_windows(name, lo, hi, aimed=True)


def variant_conflict(plan: MotifPlan, row: Row, op: str) -> str | None:
    """Why a draw of ``plan``'s motif aimed at anchor ``op`` cannot take ``row`` as a whole,
    or None: the row's levels of ``op`` and of the anchors every draw makes break the ties
    of the draws that make ``op`` (:func:`variant_ties`). A row built under another
    variant's ties can give ``op`` a type its tied ops do not get; the draw would retype
    one and then the other back."""
    lo, hi = plan.opsets
    keep = {op} | always_made(plan.motif, lo, hi)
    part = {k: v for k, v in row.items() if k == OPSET or k.split(SEP, 1)[0] in keep}
    return _checker(plan.spaces, variant_ties(plan.motif, lo, hi, op))(part)


def _anchor_ops(name: str) -> set[str]:
    """The op types of motif ``name``'s anchors (a ``domain::Op`` anchor as ``Op``)."""
    from generators.motifs import MOTIFS

    return {a.rpartition("::")[2] for a in MOTIFS[name].anchors}


def _made(window: tuple[NodeProto, ...]) -> set[str]:
    """The default-domain op types of ``window``."""
    return {n.op_type for n in window if n.domain in ("", "ai.onnx")}


def _ties(windows: tuple[tuple[int, tuple[NodeProto, ...]], ...], anchors: set[str]) -> Ties:
    """The union over ``windows`` of the type parameters each ties to those of the first
    node of each anchor op in ``anchors`` (the node a draw retypes)."""
    from onnx import defs

    from generators.schema.apply import bound_to, type_component

    ties: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for opset, nodes in windows:
        window = list(nodes)
        seen: set[str] = set()
        for a in window:
            if a.op_type not in anchors or a.op_type in seen or \
                    a.domain not in ("", "ai.onnx"):
                continue
            seen.add(a.op_type)
            schema = defs.get_schema(a.op_type, opset, a.domain)
            for tc in schema.type_constraints:
                seeds = bound_to(schema, a, tc.type_param_str)
                if not seeds:
                    continue
                _, touched, stops = type_component(window, opset, seeds)
                if any(n.op_type in anchors and takes is None for n, _, takes in stops):
                    continue  # the draw cannot retype it: no ties to plan with
                tied = ties.setdefault((a.op_type, tc.type_param_str), set())
                tied |= {(n.op_type, p) for n in window for p in touched.get(id(n), ())}
                # an anchor that takes the tied tensor in one type only (a Reshape's shape)
                tied |= {(n.op_type, f"tensor({takes})") for n, _, takes in stops
                         if takes is not None and n.op_type in anchors}
    return {k: frozenset(v) for k, v in ties.items()}


def _exists(op: str, opset: int) -> bool:
    from onnx import defs

    try:
        defs.get_schema(op, opset, "")
    except defs.SchemaError:
        return False
    return True


def _checker(spaces: dict[str, OpSpace], ties: Ties | None = None,
             pins: tuple[tuple[str, tuple[str, ...], str], ...] = ()
             ) -> Callable[[Row], str | None]:
    """A function from a (partial) joint row to None (valid) or the reason it is not
    (``pins``: :attr:`generators.motifs.spec.Motif.pins`)."""
    from onnx import defs

    tied = ties or {}

    @cache
    def dtype_reason(op: str, version: int, opset: int,
                     bindings: tuple[tuple[str, str], ...]) -> str | None:
        space = spaces[op]
        why = kernel_reason(op, space.domain, version, dict(bindings))
        if why:
            return why
        for param, d in bindings:
            why = cast_reason(BASE, d, opset) or cast_reason(d, BASE, opset)
            if why:
                return why
            for op2, p2 in sorted(tied.get((op, param), ())):
                if p2.startswith("tensor(") and p2 != f"tensor({d})":
                    return f"the motif's {op2} takes the tensor {op}.{param} is tied to " \
                           f"as {p2} only"
                # a tied op that is not an anchor keeps its own type where it has no kernel
                # for this one, behind Casts (generators.schema.apply._tied_part)
                if (op2, p2) == (op, param) or op2 not in spaces or p2.startswith("tensor("):
                    continue
                try:
                    v2 = defs.get_schema(op2, opset, "").since_version
                except defs.SchemaError:
                    continue
                why = kernel_reason(op2, "", v2, {p2: d})
                if why:
                    return f"the motif ties {op}.{param} to {op2}.{p2}, and {why}"
        return None

    def check(row: Row) -> str | None:
        for k, kept, why in pins:
            if row.get(k, NA) not in (NA, *kept):
                return why
        if OPSET not in row:
            return None
        opset = int(row[OPSET])
        per_op: dict[str, dict[str, str]] = {}
        for k, level in row.items():
            if k == OPSET:
                continue
            op, factor = k.split(SEP, 1)
            per_op.setdefault(op, {})[factor] = level
        for op, assignment in per_op.items():
            space = spaces[op]
            v = space.version_at(opset)
            if v is None:
                if all(level == NA for level in assignment.values()):
                    continue
                return f"{op} does not exist at opset {opset}"
            if not space.allows(v, assignment):
                return f"{op}-{v.version} does not allow {assignment}"
            why = refusal(op, v.version, assignment)
            if why:
                return why
            bindings = tuple(sorted((f[len("dtype:"):], lv) for f, lv in assignment.items()
                                    if f.startswith("dtype:") and lv != NA))
            if bindings:
                why = dtype_reason(op, v.version, opset, bindings)
                if why:
                    return why
            for param, d in bindings:
                for op2, p2 in tied.get((op, param), ()):
                    other = per_op.get(op2, {}).get(f"dtype:{p2}")
                    if op2 != op and other not in (None, NA, d):
                        return f"the motif ties {op}.{param} to {op2}.{p2}"
        return None

    return check


def _pairs_of_row(row: Row, ops: list[str]) -> set[tuple[str, Pair]]:
    out: set[tuple[str, Pair]] = set()
    for op in ops:
        prefix = f"{op}{SEP}"
        items = [(k[len(prefix):], v) for k, v in row.items()
                 if k.startswith(prefix) and v != NA]
        for a, b in itertools.combinations(items, 2):
            out.add((op, pair_of(a, b)))
    return out


def op_pairs_with_opset(row: Row, spaces: dict[str, OpSpace]) -> set[tuple[str, Pair]]:
    """The ``(anchor op, pair)`` items ``row`` holds: the pairs of each op's levels in the
    row, the op's own version at the row's opset counted as its ``opset`` level (what
    ``coverage --schema`` counts a draw that takes the row for)."""
    out = _pairs_of_row(row, list(spaces))
    opset = int(row[OPSET])
    for op, space in spaces.items():
        v = space.version_at(opset)
        if v is None:
            continue
        prefix = f"{op}{SEP}"
        for k, level in row.items():
            if k.startswith(prefix) and level != NA:
                out.add((op, pair_of((OPSET, str(v.version)), (k[len(prefix):], level))))
    return out


def build_plan(motif: str, anchors: tuple[str, ...], lo: int, hi: int,
               ties: Ties | None = None, joint: bool = True,
               ties_of: Callable[[str], Ties] | None = None,
               pins: tuple[tuple[str, tuple[str, ...], str], ...] = ()) -> MotifPlan:
    """The plan of ``motif`` whose anchors are ``anchors`` over opsets ``lo..hi``;
    ``ties`` (:func:`probe_ties`) are the type parameters its pattern ties together, and
    ``joint`` whether every draw makes every anchor (:func:`probe`). A pair no complete row
    can hold is infeasible where ``joint``; otherwise the verdict may stem from ties of
    variants no draw holds together: with ``ties_of`` (anchor op -> the ties of the draws
    that make it, :func:`variant_ties`) the pair gets a row checked under its op's own ties
    (a row for a draw aimed at that op: :mod:`generators.schema.walk`), and where none
    holds it either, the pair stays feasible, its reason kept in ``unplanned``. ``pins``
    (:attr:`generators.motifs.spec.Motif.pins`) are levels the pattern fixes: a pair of
    another level of a pinned factor is infeasible with the pin's reason.

    Raises:
        ValueError: ``lo > hi``.
    """
    from allpairspy import AllPairs

    if lo > hi:
        raise ValueError(f"empty opset range {lo}..{hi}")
    spaces: dict[str, OpSpace] = {}
    missing: dict[str, str] = {}
    for op in anchors:
        domain, _, name = op.rpartition("::")
        space = op_space(name, lo, hi, domain)
        if space is None:
            missing[op] = f"no ONNX schema of {op} at opsets {lo}..{hi}"
        else:
            spaces[name] = space
    intervals = _intervals(spaces, lo, hi)
    check = _checker(spaces, ties, pins)
    keys = [OPSET] + [key(op, f.name) for op, s in spaces.items()
                      for f in s.factors if f.name != OPSET]
    levels = [[str(iv[0]) for iv in intervals]] + [
        _with_na(list(f.levels), s, intervals)
        for s in spaces.values() for f in s.factors if f.name != OPSET]

    # feasible and infeasible pairs per op
    pairs: dict[str, frozenset[Pair]] = {}
    infeasible: dict[str, dict[Pair, str]] = {}
    for op, space in spaces.items():
        ok: set[Pair] = set()
        bad: dict[Pair, str] = {}
        for p in space.pairs():
            why = None
            for iv in intervals:
                row: Row = {OPSET: str(iv[0])}
                v = space.version_at(iv[0])
                for f, lv in p:
                    if f == OPSET:
                        if v is None or str(v.version) != lv:
                            row = {}
                            break
                    else:
                        row[key(op, f)] = lv
                if not row:
                    continue
                why = check(row)
                if why is None:
                    break
            if why is None and row:
                ok.add(p)
            else:
                bad[p] = why or "no opset of the motif's range has this version"
        pairs[op] = frozenset(ok)
        infeasible[op] = bad

    def allowed(values: list[str]) -> bool:
        return check(dict(zip(keys, values, strict=False))) is None

    rows: list[Row] = []
    if len(keys) > 1:
        for values in AllPairs(levels, filter_func=allowed):
            rows.append(dict(zip(keys, values, strict=True)))
    elif keys:
        rows = [{OPSET: lv} for lv in levels[0]]
    unplanned: dict[str, dict[Pair, str]] = {}
    want = {(op, p) for op, ps in pairs.items() for p in ps}
    have: set[tuple[str, Pair]] = set()
    for r in rows:
        have |= op_pairs_with_opset(r, spaces)
    for op, p in sorted(want - have):
        if (op, p) in have:
            continue
        row = _complete(op, p, keys, levels, spaces, intervals, check, want - have)
        if isinstance(row, dict):
            rows.append(row)
            have |= op_pairs_with_opset(row, spaces)
        elif row is not None and joint:  # no valid row of the motif's factors holds it
            pairs[op] = pairs[op] - {p}
            infeasible[op][p] = row
        elif row is not None and ties_of is not None and isinstance(own := _complete(
                op, p, keys, levels, spaces, intervals, _checker(spaces, ties_of(op), pins),
                want - have), dict):
            rows.append(own)
            have |= op_pairs_with_opset(own, spaces)
        elif row is not None and ties_of is not None and isinstance(own, str):
            # no valid row holds it under the ties of the very draws that make the op either
            pairs[op] = pairs[op] - {p}
            infeasible[op][p] = f"with the ties of the draws that make {op}: {own}"
        elif row is not None:
            unplanned.setdefault(op, {})[p] = f"no plan row holds it with the ties of all " \
                f"the motif's variants at once ({row})"
    return MotifPlan(motif, (lo, hi), spaces, intervals, tuple(rows), pairs, infeasible,
                     missing, unplanned)


def _with_na(levels: list[str], space: OpSpace,
             intervals: tuple[tuple[int, int], ...]) -> list[str]:
    """``levels`` of a factor of ``space``'s op, with ``n/a`` added where the op does not
    exist in some of the plan's opset intervals (LayerNormalization before opset 17 in a
    motif drawn from opset 11: a row of such an interval holds no level of the op)."""
    if NA in levels or all(space.version_at(iv[0]) is not None for iv in intervals):
        return levels
    return [*levels, NA]


#: partial rows :func:`_search` checks for one pair before it gives up without a verdict.
SEARCH_BUDGET = 20_000


def _start(op: str, pair: Pair, spaces: dict[str, OpSpace], iv: tuple[int, int]) -> Row | None:
    """The partial row of interval ``iv`` holding ``pair`` of ``op`` (None: the op's version
    there is not the pair's)."""
    v = spaces[op].version_at(iv[0])
    row: Row = {OPSET: str(iv[0])}
    for f, lv in pair:
        if f == OPSET:
            if v is None or str(v.version) != lv:
                return None
        else:
            row[key(op, f)] = lv
    return row


def _complete(op: str, pair: Pair, keys: list[str], levels: list[list[str]],
              spaces: dict[str, OpSpace], intervals: tuple[tuple[int, int], ...],
              check: Callable[[Row], str | None],
              uncovered: set[tuple[str, Pair]]) -> Row | str | None:
    """A valid row holding ``pair`` of ``op``, or why none exists.

    First greedily: the other factors in key order, each at the valid level covering the
    most ``uncovered`` pairs. Where that dead-ends, :func:`_search` decides.

    Returns:
        The row; or the reason no row can hold the pair; or None when the search spent
        :data:`SEARCH_BUDGET` checks without a verdict.
    """
    starts = [r for r in (_start(op, pair, spaces, iv) for iv in intervals)
              if r is not None and check(r) is None]
    for row in starts:
        for k, options in zip(keys, levels, strict=True):
            if k in row:
                continue
            best, gain = None, -1
            for lv in options:
                trial = dict(row, **{k: lv})
                if check(trial) is not None:
                    continue
                g = len(op_pairs_with_opset(trial, spaces) & uncovered)
                if g > gain:
                    best, gain = lv, g
            if best is None:
                break
            row[k] = best
        else:
            return row
    if not starts:
        row0 = next((r for r in (_start(op, pair, spaces, iv) for iv in intervals)
                     if r is not None), None)
        return check(row0) if row0 is not None else \
            "no opset of the motif's range has this version"
    return _search(starts, dict(zip(keys, levels, strict=True)), check)


def _search(starts: list[Row], options: dict[str, list[str]],
            check: Callable[[Row], str | None]) -> Row | str | None:
    """A complete valid row extending one of ``starts``: depth-first, the factor with the
    fewest valid levels next (most-constrained first, with forward checking: a partial
    row some factor has no valid level for is abandoned at once).

    Returns:
        The row; or, when the search was exhaustive, the reason of the first factor met
        with no valid level; or None after :data:`SEARCH_BUDGET` checks.
    """
    budget = [SEARCH_BUDGET]
    reason: list[str] = []

    def extend(row: Row) -> Row | None:
        rest = [k for k in options if k not in row]
        if not rest:
            return row
        valid: dict[str, list[str]] = {}
        for k in rest:
            valid[k] = []
            refused: dict[str, str] = {}
            for lv in options[k]:
                budget[0] -= 1
                why = check(dict(row, **{k: lv}))
                if why is None:
                    valid[k].append(lv)
                else:
                    refused[lv] = why
            if not valid[k]:
                if not reason:
                    reason.append(f"no level of {k} completes a valid row: " + "; ".join(
                        f"{lv}: {why}" for lv, why in refused.items()))
                return None
        k = min(rest, key=lambda x: len(valid[x]))
        for lv in valid[k]:
            if budget[0] < 0:
                return None
            found = extend(dict(row, **{k: lv}))
            if found is not None:
                return found
        return None

    for row in starts:
        found = extend(row)
        if found is not None:
            return found
        if budget[0] < 0:
            return None
    return reason[0] if reason else "no valid row holds it"


@cache
def motif_plan(name: str) -> MotifPlan | None:
    """The plan of motif ``name`` over its opsets within the generator's (None where the
    motif declares no anchors); built once per generator version and kept on disk
    (:mod:`generators.schema.store`)."""
    from generators.motifs import MOTIFS

    m = MOTIFS[name]
    if not m.anchors:
        return None
    stored = load_plan(name)
    if isinstance(stored, MotifPlan):
        return stored
    lo, hi = max(m.since, MIN_OPSET), min(m.until, MAX_OPSET)
    ties, joint = probe(name, lo, hi)
    plan = build_plan(name, m.anchors, lo, hi, ties, joint,
                      None if joint else lambda op: variant_ties(name, lo, hi, op), m.pins)
    store_plan(name, plan)
    return plan
