"""The schema feature space of one op over a range of opsets, read from ``onnx.defs``.

:func:`op_space` turns the op's schemas (one per ``since_version`` in force somewhere in the
range) into :class:`Factor` s and, per version, the levels the schema allows
(:class:`VersionSpec`). Factor names: ``opset``, ``dtype:<type constraint>``,
``attr:<attribute>``, ``in:<optional input>``, ``out:<optional output>``; levels in
:mod:`generators.schema.levels`. A *pair* is two (factor, level) choices of one node;
:meth:`OpSpace.pairs` lists the pairs some version of the op allows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache

from onnx import defs

from generators.schema.levels import (
    ABSENT,
    DTYPE_ATTRS,
    EMPTY,
    INPUT_LEVELS,
    NA,
    OUTPUT_LEVELS,
    attr_levels,
    present_levels,
    schema_default,
)

#: one choice: (factor name, level).
Choice = tuple[str, str]
#: two choices of distinct factors, the factor names in sorted order.
Pair = tuple[Choice, Choice]

OPSET = "opset"


def type_name(type_str: str) -> str | None:
    """``"tensor(float16)"`` -> ``"float16"``; None for non-tensor types (sequences,
    optionals, maps)."""
    if type_str.startswith("tensor(") and type_str.endswith(")"):
        return type_str[len("tensor("):-1]
    return None


@dataclass(frozen=True)
class Factor:
    """One factor of an op's feature space: its name and every level it takes in some
    version (``n/a`` included where some version lacks the factor)."""

    name: str
    levels: tuple[str, ...]


@dataclass(frozen=True)
class VersionSpec:
    """What one version of an op allows.

    Attributes:
        version: the schema's ``since_version``.
        opsets: inclusive range of the asked opsets in which this version is in force.
        allowed: factor name -> allowed levels (factors the version lacks are missing).
        optional_inputs: the optional inputs' factor names in formal order (an input can be
            ``absent`` only if every later one is too; otherwise it is named ``""``).
        only_optional: ``dtype:T`` -> the optional input / output factors that are the only
            tensors bound to ``T``: a node has an element type for ``T`` only where one of
            them is listed, and ``n/a`` (no type) exactly where none is.
    """

    version: int
    opsets: tuple[int, int]
    allowed: dict[str, frozenset[str]]
    optional_inputs: tuple[str, ...] = ()
    only_optional: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class OpSpace:
    """The feature space of op ``op`` (domain ``domain``) over a range of opsets.

    Attributes:
        op: op type.
        domain: "" for the default domain.
        versions: one :class:`VersionSpec` per version in force in the range, oldest first.
        factors: every factor, ``opset`` first.
    """

    op: str
    domain: str
    versions: tuple[VersionSpec, ...]
    factors: tuple[Factor, ...] = field(default=())

    def version_at(self, opset: int) -> VersionSpec | None:
        """The version in force at ``opset`` (None outside the space's range)."""
        for v in self.versions:
            if v.opsets[0] <= opset <= v.opsets[1]:
                return v
        return None

    def allows(self, v: VersionSpec, assignment: dict[str, str]) -> bool:
        """Whether version ``v`` allows every (factor, level) of ``assignment`` together
        (``n/a`` exactly for the factors ``v`` lacks; ``opset`` equal to ``v``'s version;
        an absent optional input only after every later one is absent)."""
        for f, level in assignment.items():
            if f == OPSET:
                if level != str(v.version):
                    return False
                continue
            allowed = v.allowed.get(f)
            if allowed is None:
                if level != NA:
                    return False
            elif level not in allowed:
                return False
        for f, carriers in v.only_optional.items():
            level = assignment.get(f)
            if level is None:
                continue
            known = [assignment.get(c) for c in carriers]
            if level == NA:  # unbound: no carrier may be given
                if any(k is not None and k not in (ABSENT, EMPTY) for k in known):
                    return False
                continue
            if all(k is not None and k in (ABSENT, EMPTY) for k in known):
                return False
        seen_listed = False
        for f in reversed(v.optional_inputs):
            level = assignment.get(f)
            if level is None:
                continue
            if level == ABSENT and seen_listed:
                return False
            seen_listed = seen_listed or level != ABSENT
        return True

    def pairs(self) -> frozenset[Pair]:
        """Every pair of (factor, level) choices, ``n/a`` excluded, that some version
        allows together."""
        out: set[Pair] = set()
        for f, g in itertools.combinations(sorted(self.factors, key=lambda x: x.name), 2):
            for a in f.levels:
                for b in g.levels:
                    if NA in (a, b):
                        continue
                    if any(self.allows(v, {f.name: a, g.name: b}) for v in self.versions):
                        out.add(((f.name, a), (g.name, b)))
        return frozenset(out)


def type_reason(schema: defs.OpSchema, bindings: dict[str, str]) -> str | None:
    """None where the type constraints of ``schema`` allow every ``type parameter ->
    element type name`` of ``bindings`` (a parameter the schema does not constrain is
    free), else why not (Cast-6 takes no string, Cast before 19 no float 8 type)."""
    allowed = {tc.type_param_str: {type_name(t) for t in tc.allowed_type_strs}
               for tc in schema.type_constraints}
    for param, name in sorted(bindings.items()):
        if param in allowed and name not in allowed[param]:
            return f"{schema.name}-{schema.since_version} does not take {name} for {param}"
    return None


def pair_of(a: Choice, b: Choice) -> Pair:
    """The :data:`Pair` of two choices (sorted by factor name)."""
    return (a, b) if a[0] < b[0] else (b, a)


def _version_spec(schema: defs.OpSchema, opsets: tuple[int, int]) -> VersionSpec:
    allowed: dict[str, frozenset[str]] = {OPSET: frozenset({str(schema.since_version)})}
    for tc in schema.type_constraints:
        names = [n for n in (type_name(t) for t in tc.allowed_type_strs) if n]
        if names:
            allowed[f"dtype:{tc.type_param_str}"] = frozenset(names)
    for name, a in schema.attributes.items():
        if name in DTYPE_ATTRS:
            continue
        has_default = schema_default(a) is not None
        allowed[f"attr:{name}"] = frozenset(
            attr_levels(schema.name, name, int(a.type), bool(a.required), has_default))
    opt_in = []
    for p in schema.inputs:
        if p.option == defs.OpSchema.FormalParameterOption.Optional:
            allowed[f"in:{p.name}"] = frozenset(INPUT_LEVELS)
            opt_in.append(f"in:{p.name}")
        elif p.option == defs.OpSchema.FormalParameterOption.Variadic:
            break
    for p in schema.outputs:
        if p.option == defs.OpSchema.FormalParameterOption.Optional:
            allowed[f"out:{p.name}"] = frozenset(OUTPUT_LEVELS)
        elif p.option == defs.OpSchema.FormalParameterOption.Variadic:
            break
    carriers: dict[str, list[str]] = {}
    required: set[str] = set()
    for side, params in (("in", schema.inputs), ("out", schema.outputs)):
        for p in params:
            if p.option == defs.OpSchema.FormalParameterOption.Optional:
                carriers.setdefault(p.type_str, []).append(f"{side}:{p.name}")
            else:
                required.add(p.type_str)
    only = {f"dtype:{t}": tuple(c) for t, c in carriers.items()
            if t not in required and f"dtype:{t}" in allowed}
    for f in only:  # no tensor bound: the parameter has no type (n/a), as a node reads it
        allowed[f] = allowed[f] | {NA}
    return VersionSpec(schema.since_version, opsets, allowed, tuple(opt_in), only)


@lru_cache(maxsize=512)
def op_space(op: str, lo: int, hi: int, domain: str = "") -> OpSpace | None:
    """The feature space of ``op`` over opsets ``lo..hi`` (inclusive) of ``domain``.

    Returns:
        The :class:`OpSpace`, or None when ``onnx.defs`` has no schema of ``op`` at any
        of those opsets (e.g. an onnxruntime contrib op).
    """
    runs: list[tuple[defs.OpSchema, int, int]] = []
    for opset in range(lo, hi + 1):
        try:
            s = defs.get_schema(op, opset, domain)
        except defs.SchemaError:
            continue
        if s.deprecated:
            continue
        if runs and runs[-1][0].since_version == s.since_version:
            runs[-1] = (runs[-1][0], runs[-1][1], opset)
        else:
            runs.append((s, opset, opset))
    if not runs:
        return None
    versions = tuple(_version_spec(s, (a, b)) for s, a, b in runs)
    names: dict[str, list[str]] = {}
    for v in versions:
        for f, levels in v.allowed.items():
            names.setdefault(f, []).extend(sorted(levels, key=_level_order))
    factors = []
    for f, levels in names.items():
        if any(f not in v.allowed for v in versions):
            levels.append(NA)
        factors.append(Factor(f, present_levels(levels)))
    factors.sort(key=lambda x: (x.name != OPSET, x.name))
    return OpSpace(op, domain, versions, tuple(factors))


_ORDER = {lv: i for i, lv in enumerate(
    ("absent", "default", "nondefault", "edge", "empty", "present", "unused", "consumed",
     "output"))}


def _level_order(level: str) -> tuple[int, str]:
    return (_ORDER.get(level, 99), level)
