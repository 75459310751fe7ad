"""Benchmark: a long campaign's resources over time (soak test).

Runs ``optfuzz fuzz`` (onnxoptimizer, generated graphs and the onnx wheel's models, 2
workers) for ``--minutes`` and samples, every ``--interval`` seconds: the resident size
(RSS, from ``/proc``) of the campaign process and of every process below it (the workers
of the case pool and of the finding thread, and anything they start), the size and file
count of the output folder, the cases run and the bundles written (campaign.json). Writes
the samples as ``soak.csv`` (one row per sample), ``soak-processes.csv`` (one row per
process and sample) and ``soak.png``, then prints:

* RSS slope (MiB/h, least squares after ``--warmup`` minutes) and fitted growth over that
  window of the campaign process and of the workers' level (the median worker of each
  sample: one worker busy with a large model does not move it); the largest worker seen and
  every worker's growth over its own life (workers are replaced after a bounded number of
  cases or a bounded growth);
* disk slope (MiB/h) and files: those outside bundles must stay constant (hits add none,
  the campaign's log rotates), those inside grow only with bundles (variants are capped);
* throughput of the last tenth of the case loop against the first, from the campaign's own
  timeline (campaign.json); the minutes its finish then spends on the findings still queued
  are printed apart (they run no cases);
* CPU per tenth (``/proc``): cores used by the campaign's process tree, cores busy on the
  machine outside it and cores stolen by the hypervisor, cases per CPU-second of the
  campaign, and the CPU speed (the CPU time a fixed pure-Python loop takes in this process,
  the best of three per sample: a virtual machine whose host is busy runs it slower without
  reporting stolen time), so that a slower campaign can be told from a slower machine.

    python benchmarks/soak.py [--minutes 60] [--jobs 2] [--out DIR] [--interval 10]
        [--warmup 5] [--target onnxoptimizer]

Bounds it checks (printed as ``ok`` or ``OVER``): RSS growth of the campaign process and of
the workers' level after the warm-up at most 20 MiB (over an hour, scaled to the run's
window); throughput of the case loop's last tenth at least 90% of its first.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fuzzer.execution.memory import child_pids, rss_bytes

MIB = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")  # clock ticks per second of /proc's CPU times
RSS_BOUND_MIB = 20.0  # per process, over an hour after the warm-up
THROUGHPUT_BOUND = 0.9  # last tenth against the first


@dataclass
class Sample:
    """One look at the campaign: seconds since start, RSS in bytes (campaign process and
    ``{pid: rss}`` of every process below it), output folder bytes and files (all, and
    those outside bundle folders), cases and bundles from campaign.json."""

    t: float
    campaign_rss: int
    workers: dict[int, int] = field(default_factory=dict)
    out_bytes: int = 0
    out_files: int = 0
    loose_files: int = 0
    cases: int = 0
    bundles: int = 0
    tree_cpu: float = 0.0
    machine_busy: float = 0.0
    machine_steal: float = 0.0
    probe_s: float = 0.0


def speed_probe(repeats: int = 3, loops: int = 100_000) -> float:
    """CPU seconds of this thread for a fixed pure-Python loop of ``loops`` iterations (about
    10 ms), the least of ``repeats``: it grows where the machine's CPU is slower, whatever the
    other processes do, as it counts only this thread's own CPU time."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        total = 0
        for i in range(loops):
            total += i * i % 7
        best = min(best, time.thread_time() - start)
    return best


def process_cpu(pid: int, reaped: bool = False) -> float:
    """CPU seconds (user + system) of process ``pid`` from ``/proc/<pid>/stat``, with those
    of its reaped children where ``reaped``; 0 where the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    ticks = fields[11:15] if reaped else fields[11:13]  # utime stime cutime cstime
    return sum(int(x) for x in ticks) / TICK


def machine_cpu() -> tuple[float, float]:
    """``(busy, steal)`` CPU seconds of the whole machine since boot, summed over its cores
    (``/proc/stat``: busy is user, nice, system, irq and softirq)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq) / TICK, steal / TICK


def folder_size(out: Path) -> tuple[int, int, int]:
    """``(bytes, files, files not inside a bundle folder)`` under ``out``."""
    total = files = loose = 0
    for root, _, names in os.walk(out):
        for name in names:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:  # replaced meanwhile (an atomic write)
                continue
            files += 1
            loose += Path(root) == out
    return total, files, loose


def campaign_counts(out: Path) -> tuple[int, int]:
    """``(cases, bundles)`` from campaign.json (zeros before its first write)."""
    try:
        data = json.loads((out / "campaign.json").read_text())
    except (OSError, ValueError):
        return 0, 0
    return int(data.get("cases", 0)), int(data.get("bundles_new", 0))


def sample(pid: int, out: Path, started: float) -> Sample:
    """One :class:`Sample` of the campaign process ``pid`` writing ``out``."""
    below = child_pids(pid)
    workers = {p: r for p in below if (r := rss_bytes(p)) is not None}
    tree = process_cpu(pid, reaped=True) + sum(process_cpu(p, reaped=True) for p in below)
    busy, steal = machine_cpu()
    size, files, loose = folder_size(out)
    cases, bundles = campaign_counts(out)
    return Sample(time.monotonic() - started, rss_bytes(pid) or 0, workers, size, files,
                  loose, cases, bundles, tree, busy, steal, speed_probe())


def slope_per_hour(t: list[float], y: list[float]) -> float:
    """Least-squares slope of ``y`` against ``t`` (seconds), per hour; 0 for < 2 points."""
    if len(t) < 2 or max(t) == min(t):
        return 0.0
    return float(np.polyfit(np.asarray(t), np.asarray(y), 1)[0]) * 3600.0


def median_worker(sample: Sample) -> float:
    """The median RSS in bytes of the processes below the campaign in ``sample``."""
    return float(np.median(list(sample.workers.values()))) if sample.workers else 0.0


def case_loop(out: Path) -> tuple[list[tuple[float, int]], float, float]:
    """``([(seconds, cases)], case-loop seconds, finish seconds)`` of the campaign writing
    ``out``, on its own clock (campaign.json's timeline and ``last_run``): the timeline
    points up to the end of the case loop, with ``(0, 0)`` first, and the seconds the
    finish took past the case loop (queued findings; no cases run). Raises OSError or
    ValueError where campaign.json is missing or unreadable."""
    data = json.loads((out / "campaign.json").read_text())
    loop = float(data["last_run"]["seconds"])
    points = [(0.0, 0)] + [(float(p["t"]), int(p["cases"])) for p in data["timeline"]
                           if float(p["t"]) <= loop]
    return points, loop, float(data["elapsed_s"]) - loop


def rate(points: list[tuple[float, int]], start: float, end: float) -> float:
    """Cases per second between the ``(seconds, cases)`` points nearest to ``start`` and
    ``end`` seconds."""
    def near(t: float) -> tuple[float, int]:
        return min(points, key=lambda p: abs(p[0] - t))

    (ta, a), (tb, b) = near(start), near(end)
    return (b - a) / (tb - ta) if tb > ta else 0.0


def write_csv(samples: list[Sample], folder: Path) -> None:
    """soak.csv and soak-processes.csv into ``folder``."""
    with open(folder / "soak.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["t_s", "campaign_rss_mib", "processes", "worker_rss_median_mib",
                         "worker_rss_max_mib", "worker_rss_sum_mib", "out_mib", "out_files",
                         "loose_files", "cases", "cases_per_s", "bundles", "campaign_cpu_s",
                         "machine_busy_s", "machine_steal_s", "speed_probe_ms"])
        previous = None
        for s in samples:
            speed = (s.cases - previous.cases) / (s.t - previous.t) \
                if previous is not None and s.t > previous.t else 0.0
            writer.writerow([round(s.t, 1), round(s.campaign_rss / MIB, 2), len(s.workers),
                             round(median_worker(s) / MIB, 2),
                             round(max(s.workers.values(), default=0) / MIB, 2),
                             round(sum(s.workers.values()) / MIB, 2),
                             round(s.out_bytes / MIB, 3), s.out_files, s.loose_files,
                             s.cases, round(speed, 2), s.bundles, round(s.tree_cpu, 2),
                             round(s.machine_busy, 2), round(s.machine_steal, 2),
                             round(s.probe_s * 1000, 3)])
            previous = s
    with open(folder / "soak-processes.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["t_s", "pid", "rss_mib"])
        for s in samples:
            for pid, rss in sorted(s.workers.items()):
                writer.writerow([round(s.t, 1), pid, round(rss / MIB, 2)])


def plot(samples: list[Sample], path: Path) -> None:
    """soak.png: RSS, disk, throughput and bundles over campaign time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [s.t / 60 for s in samples]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
    ax = axes[0][0]
    ax.plot(minutes, [s.campaign_rss / MIB for s in samples], label="campaign process")
    ax.plot(minutes, [median_worker(s) / MIB for s in samples], label="median worker")
    ax.plot(minutes, [max(s.workers.values(), default=0) / MIB for s in samples],
            label="largest worker", linewidth=0.6)
    ax.set_ylabel("RSS (MiB)")
    ax.legend()
    ax = axes[0][1]
    ax.plot(minutes, [s.out_bytes / MIB for s in samples], label="output folder (MiB)")
    ax.set_ylabel("MiB")
    twin = ax.twinx()
    twin.plot(minutes, [s.out_files for s in samples], color="tab:orange", label="files")
    twin.set_ylabel("files")
    ax.legend(loc="upper left")
    twin.legend(loc="lower right")
    speeds = [0.0] + [(b.cases - a.cases) / (b.t - a.t) if b.t > a.t else 0.0
                      for a, b in zip(samples, samples[1:], strict=False)]
    axes[1][0].plot(minutes, speeds)
    axes[1][0].set_ylabel("cases per second")
    axes[1][1].step(minutes, [s.bundles for s in samples], where="post")
    axes[1][1].set_ylabel("bundles")
    for ax in axes[1]:
        ax.set_xlabel("campaign time (min)")
    fig.suptitle("optfuzz soak: resources over campaign time")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def worker_growth(samples: list[Sample], after: float) -> tuple[float, int]:
    """The largest RSS growth (MiB) of one worker between its first and last sample after
    ``after`` seconds, and how many workers were seen then."""
    seen: dict[int, list[int]] = {}
    for s in samples:
        if s.t >= after:
            for pid, rss in s.workers.items():
                seen.setdefault(pid, []).append(rss)
    growth = max(((v[-1] - v[0]) / MIB for v in seen.values()), default=0.0)
    return growth, len(seen)


def report(samples: list[Sample], warmup_s: float, out: Path) -> list[str]:
    """The printed figures and bound checks of the campaign that wrote ``out``."""
    late = [s for s in samples if s.t >= warmup_s] or samples
    t = [s.t for s in late]
    window_h = (t[-1] - t[0]) / 3600 if len(t) > 1 else 0.0
    bound = RSS_BOUND_MIB * max(window_h, 1e-9)  # 20 MiB per hour, over the window
    lines = [f"samples: {len(samples)} over {samples[-1].t / 60:.1f} min; after the "
             f"{warmup_s / 60:g}-minute warm-up: {len(late)} over {window_h * 60:.1f} min"]
    staffed = [s for s in late if s.workers]  # after the case loop the workers are gone
    for name, times, values in (
            ("campaign process", t, [s.campaign_rss / MIB for s in late]),
            ("workers (median)", [s.t for s in staffed] or t,
             [median_worker(s) / MIB for s in staffed] or [0.0] * len(t))):
        slope = slope_per_hour(times, values)
        grown = slope * window_h
        lines.append(f"RSS {name}: {values[0]:.1f} -> {values[-1]:.1f} MiB, slope "
                     f"{slope:+.2f} MiB/h, fitted growth over the window {grown:+.2f} MiB "
                     f"(bound {bound:.1f}): {'ok' if grown <= bound else 'OVER'}")
    largest = max(max(s.workers.values(), default=0) for s in late) / MIB
    one, count = worker_growth(samples, warmup_s)
    lines.append(f"RSS largest worker seen: {largest:.1f} MiB; one worker over its own life: "
                 f"at most {one:+.1f} MiB ({count} worker processes after the warm-up: they "
                 "are recycled)")
    disk = [s.out_bytes / MIB for s in late]
    lines.append(f"disk: {disk[0]:.2f} -> {disk[-1]:.2f} MiB, slope "
                 f"{slope_per_hour(t, disk):+.2f} MiB/h; bundles {late[0].bundles} -> "
                 f"{late[-1].bundles} (slope {slope_per_hour(t, [s.bundles for s in late]):+.1f}"
                 "/h)")
    loose = sorted({s.loose_files for s in late})
    bundled = [(s.out_files - s.loose_files, s.bundles) for s in late]
    per_bundle = max((f / b for f, b in bundled if b), default=0.0)
    grew_alone = any(b2[0] > b1[0] and b2[1] == b1[1]
                     for b1, b2 in zip(bundled, bundled[1:], strict=False))
    lines.append(f"files: outside bundles {loose[0]}..{loose[-1]} (campaign.json, "
                 f"summary.html, the rotating log, locks); in bundles at most "
                 f"{per_bundle:.1f} per bundle; grew without a new bundle: "
                 f"{'yes (variants)' if grew_alone else 'no'}")
    points, loop, finish = case_loop(out)
    first, last = rate(points, 0.0, loop / 10), rate(points, loop * 0.9, loop)
    ratio = last / first if first else 0.0
    lines.append(f"throughput: case loop {loop / 60:.1f} min, first tenth {first:.1f} cases/s, "
                 f"last tenth {last:.1f} cases/s ({ratio:.0%}): "
                 f"{'ok' if ratio >= THROUGHPUT_BOUND else 'UNDER'}; tenths "
                 + " ".join(f"{rate(points, i * loop / 10, (i + 1) * loop / 10):.0f}"
                            for i in range(10)))
    lines.append(f"finish: {finish:.0f} s past the case loop on the findings still queued")
    lines.extend(cpu_lines(samples, loop))
    return lines


def cpu_lines(samples: list[Sample], loop: float) -> list[str]:
    """Per tenth of the ``loop`` seconds: cores the campaign's process tree used, cores busy
    outside it, cores stolen, the campaign's cases per CPU-second (the samples nearest to
    each tenth's ends) and the CPU speed against the first tenth (the median speed probe of
    the tenth's samples)."""
    def near(t: float) -> Sample:
        return min(samples, key=lambda s: abs(s.t - t))

    rows = []
    for i in range(10):
        a, b = near(i * loop / 10), near((i + 1) * loop / 10)
        span = b.t - a.t
        if span <= 0:
            continue
        tree = (b.tree_cpu - a.tree_cpu) / span
        busy = (b.machine_busy - a.machine_busy) / span
        steal = (b.machine_steal - a.machine_steal) / span
        per_cpu = (b.cases - a.cases) / (b.tree_cpu - a.tree_cpu) if b.tree_cpu > a.tree_cpu \
            else 0.0
        probes = [s.probe_s for s in samples if a.t <= s.t <= b.t and s.probe_s > 0]
        rows.append((tree, max(busy - tree, 0.0), steal, per_cpu,
                     float(np.median(probes)) if probes else 0.0))
    if not rows:
        return []
    column = [" ".join(f"{row[k]:.2f}" for row in rows) for k in range(3)]
    kept = rows[-1][3] / rows[0][3] if rows[0][3] else 0.0
    return [f"cpu (cores, tenths): campaign {column[0]}; rest of the machine {column[1]}; "
            f"stolen {column[2]}",
            f"cases per campaign CPU-second: first tenth {rows[0][3]:.0f}, last tenth "
            f"{rows[-1][3]:.0f} ({kept:.0%}); tenths "
            + " ".join(f"{row[3]:.0f}" for row in rows),
            "cpu speed (a fixed loop's CPU time, first tenth = 100%): tenths "
            + " ".join(f"{rows[0][4] / row[4]:.0%}" if row[4] else "-" for row in rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=5.0, help="minutes left out of slopes")
    parser.add_argument("--target", default="onnxoptimizer")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="soak-"))
    results = out.parent / f"{out.name}-soak"
    results.mkdir(parents=True, exist_ok=True)
    command = ["optfuzz", "fuzz", "--minutes", str(args.minutes), "--jobs", str(args.jobs),
               "--out", str(out), "--target", args.target, "--quiet"]
    print("$", " ".join(command), flush=True)
    started = time.monotonic()
    with open(results / "campaign.stdout", "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        samples = []
        while proc.poll() is None:
            samples.append(sample(proc.pid, out, started))
            deadline = time.monotonic() + args.interval
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
    if proc.returncode != 0 or len(samples) < 3:
        print((results / "campaign.stdout").read_text()[-2000:])
        return 1
    write_csv(samples, results)
    plot(samples, results / "soak.png")
    for line in report(samples, args.warmup * 60, out):
        print(line)
    print(f"\nfolder: {out}\nsamples: {results / 'soak.csv'}, "
          f"{results / 'soak-processes.csv'}; plot: {results / 'soak.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
