"""Coverage guidance against no guidance, same seed, same machine, same worker split.

Both campaigns run ``--guided`` for the same time with the same seed and the same workers:
half run the coverage build and measure the cases, half run the ordinary build and judge
them. The only difference is the steering: the guided campaign draws half of its cases as
mutations of the seed pool (:data:`fuzzer.campaign.guided.MUTATE_SHARE` = 0.5), the
unguided one none (0.0), so both measure branch edges the same way and the ratio is the
effect of guidance alone. Prints distinct edge features reached, measured cases and distinct
bundles (root causes) of each, and the ratio of edge features. The machine is shared: only
the ratio measured in one run means anything.

    python benchmarks/guided_vs_unguided.py [--minutes 10] [--jobs 2] [--seed 0]
        [--target onnxoptimizer] [--out DIR]

Needs the target's coverage build (``optfuzz target build onnxoptimizer --coverage``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console


def campaign(out: Path, minutes: float, jobs: int, seed: int, target: str,
             share: float) -> dict:
    """Run one guided campaign with mutation share ``share``; return its campaign.json."""
    import fuzzer.campaign.guided as guided
    from fuzzer.campaign.run import run_campaign
    from fuzzer.campaign.settings import CampaignSettings

    guided.MUTATE_SHARE = share
    settings = CampaignSettings(out=out, target=target, seconds=minutes * 60, jobs=jobs,
                                seed=seed, generated=True, guided=True, live=False)
    run_campaign(settings, Console(quiet=True))
    data = json.loads((out / "campaign.json").read_text())
    data["bundles"] = sorted(p.parent.name for p in out.glob("*/meta.json"))
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", default="onnxoptimizer")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="guided-vs-unguided-"))
    console = Console()
    rows = {}
    for name, share in (("unguided", 0.0), ("guided", 0.5)):
        rows[name] = campaign(root / name, args.minutes, args.jobs, args.seed, args.target,
                              share)
        g = rows[name]["guided"]
        console.print(f"{name:9s} {rows[name]['cases']:7d} cases, {g['measured']:6d} "
                      f"measured, {g['edge_features']:6d} edge features, {g['seeds']:5d} "
                      f"seeds, {len(rows[name]['bundles']):3d} bundles")
    ratio = rows["guided"]["guided"]["edge_features"] / \
        max(1, rows["unguided"]["guided"]["edge_features"])
    only = sorted(set(rows["guided"]["bundles"]) - set(rows["unguided"]["bundles"]))
    console.print(f"edge features guided / unguided: {ratio:.2f}  "
                  f"({args.minutes:g} min, {args.jobs} jobs, seed {args.seed}, {root})")
    console.print(f"bundles only the guided campaign found: {', '.join(only) or 'none'}")


if __name__ == "__main__":
    main()
