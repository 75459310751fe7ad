"""Benchmark: distinct faults a campaign finds, before and after a change of the generator.

For each target, runs the same campaign (``optfuzz fuzz --target T --minutes M --jobs J
--seed S --quiet``) from two source checkouts in turn (``--before`` and ``--after``: the
root of a checkout of this project, put first on ``PYTHONPATH``), each into a folder of its
own, and prints per target and checkout the bundles, distinct root-cause keys, hits and
cases. A fault count is read by hand (a bundle can be a documented behaviour, or two bundles
one fault): so it also writes ``SHEET.md`` beside the folders, one line per bundle (folder,
symptom, culprit pass, root cause, first line of the message) with an empty column for the
reader's verdict (``fault``, ``same as <id>``, ``not a bug``), and, per target, the root
causes only the after run has (the new ones to read first).

    python benchmarks/fault_counts.py --before ../optfuzz-before --after . \\
        [--targets LIST] [--minutes 10] [--jobs 2] [--seed 0] [--out DIR] [--side-by-side] \\
        [--before-args ARGS] [--after-args ARGS]

``--before-args`` and ``--after-args`` add ``optfuzz fuzz`` options to one side (split as a
shell would): with the same checkout on both sides they compare two settings, e.g. known-fault
avoidance off and on (``--before . --after . --before-args=--no-avoid-known``).

Both checkouts run with the packages installed here (onnx, onnxruntime, the targets): only
optfuzz's own code differs. By default the two runs of a target follow each other, so a
load that comes and goes favours one of them: run it on a quiet machine. With
``--side-by-side`` the two runs of a target run at the same time (give each ``--jobs 1`` on
two cores), so whatever load there is falls on both alike, in half the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

TARGETS = ("onnxoptimizer", "onnxruntime", "onnxruntime-transformers", "onnxsim",
           "onnxslim", "onnxscript", "version-converter")
SIDES = ("before", "after")


def campaign(checkout: Path, target: str, folder: Path, args: argparse.Namespace,
             extra: str = "") -> subprocess.Popen:
    """Start one campaign of ``target`` from ``checkout`` into ``folder`` with the fuzz
    options ``extra`` (a shell-quoted string) added (a child process; its stderr is
    piped)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(checkout.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.Popen([sys.executable, "-m", "fuzzer", "fuzz", "--target", target,
                             "--minutes", str(args.minutes), "--jobs", str(args.jobs),
                             "--seed", str(args.seed), "--out", str(folder), "--quiet",
                             *shlex.split(extra)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=checkout)


def finish(proc: subprocess.Popen) -> str:
    """Wait for a campaign; the error line where it failed, else ``""``."""
    _, err = proc.communicate()
    return "" if proc.returncode == 0 else f"exit {proc.returncode}: {err.strip()[-300:]}"


def bundles(folder: Path) -> list[dict]:
    """The meta.json of every bundle of ``folder`` (damaged ones left out)."""
    out = []
    for path in sorted(folder.glob("*/meta.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def cases(folder: Path) -> int:
    """Cases the campaign of ``folder`` ran (0 where campaign.json is unreadable)."""
    try:
        return int(json.loads((folder / "campaign.json").read_text()).get("cases", 0))
    except (OSError, ValueError):
        return 0


def root_cause(meta: dict) -> str:
    """The bundle's root-cause key (its signature where it has none)."""
    return str(meta.get("root_cause") or meta.get("signature") or meta.get("id"))


def culprit(meta: dict) -> str:
    """The pass the bundle blames, or ``-``."""
    return str(meta.get("breaking_pass") or ",".join(meta.get("responsible_passes") or [])
               or "-")


def sheet_lines(target: str, side: str, metas: list[dict], new: set[str]) -> list[str]:
    """The hand-count sheet's rows for one campaign (new root causes marked ``new``)."""
    lines = [f"### {target}, {side}: {len(metas)} bundles", "",
             "| bundle | symptom | culprit | root cause | message | new | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for meta in metas:
        message = str(meta.get("message", "")).splitlines()[0][:90] if meta.get("message") \
            else ""
        key = root_cause(meta)
        cells = [meta.get("id", "?"), meta.get("symptom", "?"), culprit(meta), key[:80],
                 message, "new" if key in new else "", ""]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in map(str, cells)) + " |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--side-by-side", action="store_true",
                        help="run a target's two campaigns at the same time")
    parser.add_argument("--before-args", default="", help="fuzz options of the before side")
    parser.add_argument("--after-args", default="", help="fuzz options of the after side")
    args = parser.parse_args()
    for side in SIDES:
        if not (getattr(args, side) / "fuzzer" / "__main__.py").is_file():
            parser.error(f"--{side} {getattr(args, side)} is not a checkout of optfuzz")
    base = args.out or Path(tempfile.mkdtemp(prefix="optfuzz-faults-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"{args.minutes:g}-minute campaigns, {args.jobs} jobs, seed {args.seed}, "
          f"{'side by side' if args.side_by_side else 'in turn'}; folders under {base}",
          flush=True)
    sheet = [f"# Hand count: {args.minutes:g}-minute campaigns, seed {args.seed}", ""]
    for target in args.targets.split(","):
        metas: dict[str, list[dict]] = {}
        errors: dict[str, str] = {}
        running: dict[str, subprocess.Popen] = {}
        for side in SIDES:
            running[side] = campaign(getattr(args, side), target, base / side / target, args,
                                     getattr(args, f"{side}_args"))
            if not args.side_by_side:
                errors[side] = finish(running[side])
        for side in SIDES:
            folder = base / side / target
            error = errors[side] if side in errors else finish(running[side])
            metas[side] = bundles(folder)
            keys = {root_cause(m) for m in metas[side]}
            print(f"{target:26} {side:6} {len(metas[side]):4} bundles {len(keys):4} root "
                  f"causes {sum(int(m.get('hits', 0)) for m in metas[side]):6} hits "
                  f"{cases(folder):7} cases {error}", flush=True)
        before_keys = {root_cause(m) for m in metas["before"]}
        after_keys = {root_cause(m) for m in metas["after"]}
        print(f"{target:26} root causes only after: {len(after_keys - before_keys)}, only "
              f"before: {len(before_keys - after_keys)}", flush=True)
        for side in SIDES:
            new = after_keys - before_keys if side == "after" else before_keys - after_keys
            sheet += sheet_lines(target, side, metas[side], new)
    (base / "SHEET.md").write_text("\n".join(sheet))
    print(f"hand-count sheet: {base / 'SHEET.md'}")


if __name__ == "__main__":
    main()
