"""Slow oracle: the target's time grows superlinearly with the model's size.

One timing never makes a finding. A worker times the optimizer once per case; where that
single run is suspicious (:func:`suspicious`: at least :data:`SUSPECT_SECONDS` and at least
:data:`SUSPECT_RATIO` times the reference session build and run of the same model), or
where the case asks for it, it times the same model at three sizes a factor 2 apart (a run
of repeated blocks scaled, :mod:`fuzzer.modelio.repeat`), :data:`REPEATS` times each,
interleaved (up to three times that while the minima do not pass the threshold below), and
puts the series into ``Outcome.extra["scaling"]`` (:mod:`fuzzer.execution.scaling`). This
oracle judges the series (:func:`judge_growth`); a model that cannot be scaled gives no
series and no finding.

The documented threshold, on the minima of the repeats (the least disturbed timing of a
shared machine), over the whole range of sizes (a factor 4: noise weighs half as much in
the exponent as on one doubling):

* the optimizer's time grows at least as ``n ** EXPONENT`` (:data:`EXPONENT` = 1.5; a
  linear pass gives 1, a quadratic one 2), and faster than linearly on each doubling;
* it grows at least :data:`MARGIN` (0.5) in exponent faster than the reference session build
  and run of the same models: the work the model itself needs does not grow that fast;
* the growth beyond linear, as a factor (``t(4n) / t(n) / 4``), exceeds the factor by which
  the repeats spread (median over minimum) at the smallest and the largest size together:
  growth beyond noise;
* the smallest size takes at least :data:`MIN_TIMED` seconds, so that start-up costs and
  the timer's resolution do not decide.

Where the series also holds the same sizes timed with no pass at all (``baseline_s``), the
finding says which part grows (``detail["growth"]``, the symptom's key detail): ``passes``
where the time the passes add to that baseline is itself superlinear by the same threshold
(its exponent is ``detail["added_exponent"]``; the added time of a size counts only where
it exceeds the spread of both timings' repeats at that size, median less minimum, in
seconds), ``framework`` where only the target's own
load and save grows so (onnxoptimizer's IR import and export). Where neither part alone
passes the threshold there is no finding: the total's growth cannot be placed (on a target
whose load and save grow superlinearly, any pass list's total grows with them, and a
disturbed timing of the baseline must not make a pass that adds nothing a finding).

Series layout, one row per size (``optimize_s``, ``reference_s`` and ``baseline_s`` list one
time in seconds per repeat)::

    {"blocks": 500, "nodes": 502, "optimize_s": [...], "reference_s": [...],
     "baseline_s": [...]}
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from oracles.base import Finding, Outcome, Symptom, register

#: growth exponent threshold over the sizes (time ~ nodes ** k).
EXPONENT = 1.5
#: how much faster in exponent than the reference run the optimizer's time must grow.
MARGIN = 0.5
#: seconds the smallest size must take (minimum of its repeats) to be judged at all.
MIN_TIMED = 0.01
#: a single optimizer run at least this long (seconds) ...
SUSPECT_SECONDS = 0.2
#: ... and this many times the reference session build and run is timed at three sizes.
SUSPECT_RATIO = 2.0
#: timings per size (interleaved across sizes).
REPEATS = 3
#: series key in ``Outcome.extra`` and the single timings' keys.
SCALING, OPTIMIZE_S, REFERENCE_S = "scaling", "optimize_s", "reference_s"


def suspicious(optimize_s: float, reference_s: float) -> bool:
    """Whether one optimizer run of ``optimize_s`` seconds, against ``reference_s`` seconds
    of reference session build and run, is worth timing at three sizes."""
    return optimize_s >= SUSPECT_SECONDS and optimize_s >= SUSPECT_RATIO * reference_s


def _exponent(small: tuple[float, float], large: tuple[float, float]) -> float:
    """``k`` with ``t_large / t_small = (n_large / n_small) ** k`` for ``(nodes, seconds)``."""
    (n0, t0), (n1, t1) = small, large
    if t0 <= 0 or t1 <= 0 or n1 <= n0:
        return 0.0
    return math.log(t1 / t0) / math.log(n1 / n0)


def _spread(times: list[float]) -> float:
    """How far the repeats spread, as a factor: median over minimum (1: no noise)."""
    least = min(times)
    return statistics.median(times) / least if least > 0 else math.inf


def _jitter(times: list[float]) -> float:
    """How far the repeats spread, in seconds: median less minimum."""
    return statistics.median(times) - min(times)


def growth(rows: list[dict[str, Any]], key: str = OPTIMIZE_S,
           minus: str | None = None) -> dict[str, Any] | None:
    """How the minima of ``key`` grow over the series ``rows`` (sorted by nodes), less the
    minima of ``minus`` where given (the time a pass list adds to the no-pass baseline, which
    counts only where it exceeds how far both timings' repeats spread in seconds: within
    that, one disturbed timing makes a pass that adds nothing look as if it added time):
    ``exponent`` over the whole range, ``steps`` (the exponent of each doubling),
    ``reference_exponent`` of the reference run over the range, ``excess`` (the growth
    beyond linear, a factor), ``noise`` (the spread factors of the smallest and the largest
    size's repeats, multiplied) and ``small_s``, the smallest size's time (seconds); None
    where a time is missing or not positive."""
    def least(row: dict[str, Any]) -> float | None:
        times = row.get(key)
        if not times or not row.get(REFERENCE_S):
            return None
        if not (minus and row.get(minus)):
            return min(times) if min(times) > 0 else None
        value, floor = min(times) - min(row[minus]), _jitter(times) + _jitter(row[minus])
        return value if value > 0 and value > floor else None

    times = [least(row) for row in rows]
    points = [(row["nodes"], t) for row, t in zip(rows, times, strict=True) if t is not None]
    if len(points) < len(rows):
        return None
    (n0, t0), (n1, t1) = points[0], points[-1]
    references = [(row["nodes"], min(row[REFERENCE_S])) for row in rows]
    return {"exponent": _exponent((n0, t0), (n1, t1)),
            "steps": [_exponent(a, b) for a, b in zip(points, points[1:], strict=False)],
            "reference_exponent": _exponent(references[0], references[-1]),
            "excess": t1 / t0 / (n1 / n0),
            "noise": _spread(rows[0][key]) * _spread(rows[-1][key]), "small_s": t0}


def superlinear(seen: dict[str, Any] | None) -> bool:
    """Whether growth ``seen`` (:func:`growth`) passes the documented threshold (module
    docstring)."""
    return seen is not None and seen["small_s"] >= MIN_TIMED and \
        seen["exponent"] >= EXPONENT and all(k > 1.0 for k in seen["steps"]) and \
        seen["exponent"] - seen["reference_exponent"] >= MARGIN and \
        seen["excess"] > seen["noise"]


def judge_growth(rows: list[dict[str, Any]]) -> Finding | None:
    """The ``slow`` finding of a series (module docstring), or None: fewer than three sizes,
    too fast to time, or growth within the threshold."""
    rows = sorted(rows, key=lambda r: r["nodes"])
    if len(rows) < 3 or len({r["nodes"] for r in rows}) < len(rows):
        return None
    total = growth(rows)
    if not superlinear(total):
        return None
    part, added = "passes", None
    if all(r.get("baseline_s") for r in rows):
        added = growth(rows, minus="baseline_s")
        if not superlinear(added):
            if not superlinear(growth(rows, "baseline_s")):
                return None  # neither part grows so alone: the growth cannot be placed
            part, added = "framework", None
    k, k_ref = total["exponent"], total["reference_exponent"]
    sizes = ", ".join(f"{min(r[OPTIMIZE_S]):.3g} s at {r['nodes']} nodes" for r in rows)
    where = " (the target's own load and save, with no pass, grows so)" \
        if part == "framework" else ""
    message = (f"optimize time grows as nodes^{k:.1f}{where}: {sizes}; a reference session "
               f"build and run grows as nodes^{k_ref:.1f}")
    detail = {"growth": part, "exponent": round(k, 3), "reference_exponent": round(k_ref, 3),
              "threshold": EXPONENT, "margin": MARGIN, "repeats": len(rows[0][OPTIMIZE_S]),
              "table": [timing_row(r) for r in rows]}
    if added is not None:
        detail["added_exponent"] = round(added["exponent"], 3)
    return Finding("slow", "optimize", message, detail)


def timing_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row of a finding's timing table: node and block counts and the minima of the
    repeats in seconds (``baseline_s`` where timed)."""
    out = {"nodes": row["nodes"], "blocks": row.get("blocks"),
           OPTIMIZE_S: round(min(row[OPTIMIZE_S]), 6),
           REFERENCE_S: round(min(row[REFERENCE_S]), 6)}
    if row.get("baseline_s"):
        out["baseline_s"] = round(min(row["baseline_s"]), 6)
    return out


def slow(outcome: Outcome) -> list[Finding]:
    """The optimizer's time grows superlinearly with the model's size (a series of timings
    at three sizes in ``outcome.extra["scaling"]``; none: no finding)."""
    rows = outcome.extra.get(SCALING)
    if not rows:
        return []
    found = judge_growth(list(rows))
    return [found] if found is not None else []


#: the test of ``slow`` in a bundle's repro.py, in place of its ``observe`` (one run of
#: model.onnx cannot show it): time the target on the sizes in ``scaling/`` (the bundle's
#: timing table), interleaved, and hand the series to the oracle.
REPRO_OBSERVER = r'''
def observe():
    """The child, for ``slow``: time optimize, the target with no pass and a reference
    session build and run on every size of scaling/, REPEATS times, interleaved (up to three
    times that while the minima do not pass the threshold); the findings of the series."""
    import glob
    import time

    feeds = unpack_values(dict(np.load("inputs.npz", allow_pickle=False)))
    models = sorted((onnx.load(p) for p in glob.glob(os.path.join("scaling", "*.onnx"))),
                    key=lambda m: len(m.graph.node))
    rows = [{"nodes": len(m.graph.node), "optimize_s": [], "reference_s": [],
             "baseline_s": []} for m in models]
    stage("optimize")
    for _ in range(3):  # more repeats while the minima do not pass, as the campaign does
        for _ in range(REPEATS):
            for row, model in zip(rows, models):
                start = time.perf_counter()
                optimize(model)
                took = time.perf_counter() - start
                row["optimize_s"].append(took)
                if optimize_without_passes is not None:
                    start = time.perf_counter()
                    optimize_without_passes(model)
                    took = time.perf_counter() - start
                row["baseline_s"].append(took)
                start = time.perf_counter()
                run_session(make_session(model.SerializeToString()), feeds)
                row["reference_s"].append(time.perf_counter() - start)
        if superlinear(growth(rows)):
            break
    return judge(Outcome("ok", "optimize", extra={"scaling": rows}))
'''


register(Symptom(
    "slow", 110, ("optimize",), slow, "takes superlinear time in the model's size",
    "`optimize` takes time roughly proportional to the model's size, as a reference "
    "session build and run of the same model does.", key_detail="growth", confirm=True,
    reducible=False, severity_class="hang", handling="growth", observer=REPRO_OBSERVER))
