"""Build ``adapters.json`` from onnx's ``onnx/version_converter/convert.h``: every adapter
the ``DefaultVersionConverter`` registers (op type, opset pair, adapter class or node
transformer, source line) and the ops its "Missing in this group" comments list per step.

Run ``python -m fuzzer.targets.version_converter.read_convert_h [convert.h]`` (default: the
installed onnx's copy, which the wheel ships) after an onnx upgrade; the target reads the
JSON, so the table is reviewed in the repository.

Registration forms read (onnx 1.23.2):

- ``registerAdapter("Op", from, to, transformer)``: a ``GenericAdapter`` running a node
  transformer (``RemoveAttribute(kconsumed_inputs)`` ...);
- ``registerAdapter(std::make_unique<Class>("Op", OpSetID(from), OpSetID(to), ...))``: a
  generic adapter class (``CompatibleAdapter``, ``TypeRestriction``, ...);
- ``registerAdapter(std::make_unique<Op_from_to>(...))``: an op-specific adapter class.

The ``NoPreviousVersionAdapter`` loop (an op that does not exist one opset lower) is not a
table entry: the target derives it from onnx's schemas.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

JSON = Path(__file__).with_name("adapters.json")

_STATEMENT = re.compile(r"registerAdapter\((.*?)\);", re.S)
_GENERIC = re.compile(r'^"(\w+)",\s*(\d+),\s*(\d+),\s*(.+)$', re.S)
_NAMED_CLASS = re.compile(r'^std::make_unique<(\w+)>\(\s*"(\w+)",\s*OpSetID\((\d+)\),\s*'
                          r'OpSetID\((\d+)\)', re.S)
_OP_CLASS = re.compile(r"^std::make_unique<((\w+?)_(\d+)_(\d+))>\(", re.S)
_GROUP = re.compile(r"/\*+\s*(\d+)\s*->\s*(\d+)\s*\*+/")
_MISSING = re.compile(r"//\s*Missing in this group:\s*(.+)")


def _entry(statement: str) -> tuple[str, int, int, str] | None:
    """``(op, from, to, kind)`` of one ``registerAdapter(...)`` argument list, or None for a
    form this reader does not know (the NoPreviousVersionAdapter loop)."""
    text = " ".join(statement.split())
    for pattern, fields in ((_NAMED_CLASS, (2, 3, 4, 1)), (_OP_CLASS, (2, 3, 4, 1))):
        m = pattern.match(text)
        if m:
            op, a, b, kind = (m.group(i) for i in fields)
            return op, int(a), int(b), kind
    m = _GENERIC.match(text)
    if m:
        return m.group(1), int(m.group(2)), int(m.group(3)), f"GenericAdapter: {m.group(4)}"
    return None


def read(path: Path) -> dict[str, Any]:
    """The table of ``convert.h`` at ``path``: ``{"adapters": {"Op a->b": {"kind", "line"}},
    "missing": {"a->b": [ops]}}``."""
    text = path.read_text()
    adapters: dict[str, dict[str, Any]] = {}
    for m in _STATEMENT.finditer(text):
        entry = _entry(m.group(1))
        if entry is not None:
            op, a, b, kind = entry
            adapters[f"{op} {a}->{b}"] = {"kind": kind,
                                          "line": text.count("\n", 0, m.start()) + 1}
    missing: dict[str, list[str]] = {}
    step = None
    for line in text.splitlines():
        group = _GROUP.search(line)
        if group:
            step = f"{group.group(1)}->{group.group(2)}"
        gap = _MISSING.search(line)
        if gap and step:
            missing[step] = [op.strip() for op in gap.group(1).split(",") if op.strip()]
    return {"adapters": adapters, "missing": missing}


def main(argv: list[str]) -> int:
    """Write :data:`JSON` from the ``convert.h`` named in ``argv`` (or the installed one)."""
    import onnx

    path = Path(argv[0]) if argv else \
        Path(onnx.__file__).parent / "version_converter" / "convert.h"
    table = read(path)
    table = {"source": f"onnx {onnx.__version__}: onnx/version_converter/convert.h", **table}
    JSON.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{len(table['adapters'])} adapters, {len(table['missing'])} steps with gaps "
          f"-> {JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
