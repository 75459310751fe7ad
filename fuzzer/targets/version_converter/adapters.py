"""The adapters of onnx's version converter, by name: ``"<op type> <opset>-><opset>"``
(``Resize 10->11``), one per op and adjacent opset pair, as ``BaseConverter.h``'s
``adapter_lookup(node, OpSetID(from), OpSetID(to))`` keys them.

Which adapters a conversion step looks up follows ``convert.cc``
(``DefaultVersionConverter::convert_graph`` and ``searchOpDomainMap``): going up from opset
``s`` to ``s + 1``, every op with a schema version ``s + 1`` (that existed at ``s``); going
down from ``s`` to ``s - 1``, every op with a schema version ``s`` (the op's first version
then looks up its ``NoPreviousVersionAdapter``, which refuses). That set comes from the
installed onnx's schemas; what each adapter is (``CompatibleAdapter``, ``TypeRestriction``,
an op-specific class ...) and where it is registered comes from ``adapters.json``
(:mod:`.read_convert_h`). A looked-up adapter onnx does not register makes the conversion
fail with "No Adapter ...".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("adapters.json")
#: how an adapter name is spelled.
NAME = re.compile(r"^(\w+) (\d+)->(\d+)$")
#: adapter kinds that never rewrite a node (they raise the op's version, or check types).
NON_REWRITING = {
    "CompatibleAdapter": "CompatibleAdapter: the op only changes its version, the converter "
                         "leaves the node as it is (a semantic change it misses would still "
                         "show as a wrong output)",
    "TypeRestriction": "TypeRestriction: a check that refuses element types the lower opset "
                       "lacks; it never rewrites the node",
    "ExtendSupportedTypes": "ExtendSupportedTypes: casts only inputs of types the lower "
                            "opset lacks, which generated graphs do not use",
    "OptionalOpsAdapter": "OptionalOpsAdapter: a check of optional-typed inputs, which "
                          "generated graphs do not use",
}
NO_PREVIOUS = "NoPreviousVersionAdapter"


@dataclass(frozen=True)
class Adapter:
    """One adapter.

    Attributes:
        name: ``"<op> <from>-><to>"``.
        op: op type.
        start: the opset it converts from.
        end: the adjacent opset it converts to.
        kind: the adapter class or node transformer onnx registers (``adapters.json``),
            ``NoPreviousVersionAdapter``, or ``""`` where onnx registers none.
        line: its line in ``convert.h`` (0: none).
    """

    name: str
    op: str
    start: int
    end: int
    kind: str
    line: int = 0

    @property
    def up(self) -> bool:
        """Whether it converts to a higher opset."""
        return self.end > self.start


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The parsed ``adapters.json``.

    Raises:
        OSError, ValueError: the data file is missing or not JSON.
    """
    return json.loads(DATA.read_text())


@lru_cache(maxsize=1)
def schema_versions() -> dict[str, tuple[int, ...]]:
    """Op type -> the opsets at which its default-domain schema changed (sorted)."""
    import onnx.defs

    versions: dict[str, set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            versions.setdefault(schema.name, set()).add(schema.since_version)
    return {op: tuple(sorted(v)) for op, v in versions.items()}


def max_opset() -> int:
    """The highest default-domain opset the installed onnx knows."""
    import onnx.defs

    return onnx.defs.onnx_opset_version()


@cache
def step_adapters(start: int, end: int) -> tuple[Adapter, ...]:
    """The adapters a conversion from opset ``start`` to the adjacent ``end`` looks up, by
    op type.

    Raises:
        ValueError: the opsets are not adjacent.
    """
    if abs(start - end) != 1:
        raise ValueError(f"opsets {start} and {end} are not adjacent")
    registered = table()["adapters"]
    out = []
    for op, versions in sorted(schema_versions().items()):
        if end > start:
            looked_up = end in versions and versions[0] <= start
        else:
            looked_up = start in versions
        if not looked_up:
            continue
        name = f"{op} {start}->{end}"
        entry = registered.get(name)
        kind = entry["kind"] if entry else (NO_PREVIOUS if end < start and
                                            versions[0] == start else "")
        out.append(Adapter(name, op, start, end, kind, entry["line"] if entry else 0))
    return tuple(out)


def steps(start: int, end: int) -> list[tuple[int, int]]:
    """The adjacent opset pairs of a conversion from ``start`` to ``end``, in order."""
    step = 1 if end > start else -1
    return [(s, s + step) for s in range(start, end, step)]


@lru_cache(maxsize=1)
def all_adapters() -> dict[str, Adapter]:
    """Every adapter of every adjacent pair the installed onnx knows (opset 1 up), going
    up first, then down; name -> Adapter."""
    top = max_opset()
    pairs = [(s, s + 1) for s in range(1, top)] + [(s, s - 1) for s in range(top, 1, -1)]
    return {a.name: a for start, end in pairs for a in step_adapters(start, end)}


def missing_comment(adapter: Adapter) -> bool:
    """Whether ``convert.h`` lists the adapter's op as "Missing in this group" for its
    step."""
    gaps = table().get("missing", {}).get(f"{adapter.start}->{adapter.end}", [])
    return adapter.op in gaps
