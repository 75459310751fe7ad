"""A check command for ``--check`` reducers (optfuzz reduce, polygraphy debug reduce): runs one
differential test of a model with a target in this process and exits 1 when its primary
finding has the wanted symptom, 0 otherwise (a clean or unusable model).

Usage: python benchmarks/reduce_checker.py SYMPTOM TARGET PASS[,PASS...] [more args] MODEL
(the model path comes last, as ``optfuzz reduce --check`` appends it).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Exit status of the check for ``argv`` (see module docstring)."""
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.pipeline import run_case

    symptom, target, passes, model = argv[0], argv[1], argv[2].split(","), Path(argv[-1])
    case = TestCase(target, {"passes": passes, "fixed_point": False},
                    {"kind": "file", "path": str(model)}, model_bytes=model.read_bytes())
    result = run_case(case)
    found = result.findings[0].symptom if result.findings else None
    return 1 if found == symptom else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
