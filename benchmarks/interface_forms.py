"""How often each interface form (generators/interfaces.py) appears in generated models: the
share of draws that applied it and the share whose proto holds it (a form may come from
elsewhere too: IR 3 from the opset draw, initializers listed as inputs from the weight
placement, symbolic dims from the loop), as a markdown table.

Usage: ``python benchmarks/interface_forms.py [--models 500] [--generator v2] [--seed 0]``.
"""

from __future__ import annotations

import argparse
from collections import Counter

from generators import generate_model
from generators.interfaces import INTERFACES, forms_of


def run(models: int, generator: str, seed: int) -> dict[str, Counter[str]]:
    """``{"applied": Counter, "present": Counter, "styles": Counter}`` over ``models`` draws
    from ``seed`` on (form names, name styles)."""
    applied: Counter[str] = Counter()
    present: Counter[str] = Counter()
    styles: Counter[str] = Counter()
    for s in range(seed, seed + models):
        gm = generate_model(s, generator=generator)
        applied.update(gm.interfaces)
        present.update(forms_of(gm.model))
        styles[gm.name_style] += 1
        applied["(any form)"] += bool(gm.interfaces)
    return {"applied": applied, "present": present, "styles": styles}


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=500)
    ap.add_argument("--generator", default="v2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    counts = run(args.models, args.generator, args.seed)
    n = args.models
    print("| form | applied | present in proto |")
    print("| --- | ---: | ---: |")
    for name in [*INTERFACES, "(any form)"]:
        a, p = counts["applied"][name], counts["present"][name]
        shown = "" if name == "(any form)" else f"{p} ({p / n:.1%})"
        print(f"| {name} | {a} ({a / n:.1%}) | {shown} |")
    print("name styles:", dict(counts["styles"]))


if __name__ == "__main__":
    main()
