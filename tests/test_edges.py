"""Per-case branch edges: GCC's counter files read back, libgcov's dump and reset driven per
case (on a tiny C library built here with the flags of optfuzz's coverage builds), AFL's
hit-count buckets, and the seed pool that keeps cases reaching new edge features."""

from __future__ import annotations

import random
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from fuzzer.builds.kinds import KINDS
from fuzzer.campaign.guided import SeedPool
from fuzzer.edges.collector import GcovCollector, bucket, features
from fuzzer.edges.gcda import GcdaError, read_gcda
from fuzzer.execution.case import TestCase

C_SOURCE = """
int walk(int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += i;
    if (n > 5) s *= 2;
    return s;
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    folder = tmp_path_factory.mktemp("cov")
    (folder / "walk.c").write_text(C_SOURCE)
    lib = folder / "libwalk.so"
    kind = KINDS["coverage"]
    subprocess.run([gcc, "-shared", "-fPIC", "--coverage", "-O0", *kind.link_flags.split(),
                    "-o", str(lib), str(folder / "walk.c")], check=True, cwd=folder)
    return lib


def test_per_case_edges_follow_the_branches_taken(library: Path, tmp_path: Path) -> None:
    import ctypes

    walk = ctypes.CDLL(str(library)).walk
    collector = GcovCollector(str(library), tmp_path / "w1")
    collector.start()
    assert walk(3) == 3
    short = collector.collect()
    assert walk(3) == 3
    again = collector.collect()
    assert walk(10) == 90
    long = collector.collect()
    # the same call takes the same edges the same number of times: deltas, not totals
    assert short == again and short
    # n > 5 takes the branch n = 3 never took, and the loop more often
    assert set(long) - set(short)
    assert features(long) - features(short)
    # the counter files on disk hold the running totals
    gcda = list((tmp_path / "w1").rglob("*.gcda"))
    assert len(gcda) == 1
    totals = {i: c for fn in read_gcda(gcda[0].read_bytes()) for i, c in enumerate(fn.arcs)}
    assert sum(totals.values()) == sum(short.values()) * 2 + sum(long.values())


def test_the_gcov_kind_reads_the_builds_extension_module(library: Path,
                                                         tmp_path: Path) -> None:
    import ctypes
    from types import SimpleNamespace

    from fuzzer.edges.kinds import edge_kind
    from fuzzer.edges.setup import EdgeSetup

    site = tmp_path / "site"
    (site / "walk_lib").mkdir(parents=True)
    module = site / "walk_lib" / "walk.so"
    shutil.copy(library, module)
    build = SimpleNamespace(site=str(site), target="walk-lib", activate=lambda: None)
    setup = EdgeSetup(str(tmp_path / "edges"), "gcov", build=build)
    collector = edge_kind(setup.kind).collector(setup)
    assert isinstance(collector, GcovCollector)
    walk = ctypes.CDLL(str(module)).walk
    collector.start()
    assert walk(10) == 90
    assert collector.collect()
    assert list((tmp_path / "edges").glob("w*/**/*.gcda"))


def test_gcda_reader_refuses_other_files() -> None:
    with pytest.raises(GcdaError):
        read_gcda(b"not a gcda file at all")
    with pytest.raises(GcdaError):
        read_gcda(b"")


def test_hit_count_buckets_are_afls() -> None:
    assert [bucket(n) for n in (1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 127, 128, 10**6)] == \
        [0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]
    assert features({5: 1, 6: 0}) == frozenset({5 * 8})


def _case(seed: int) -> TestCase:
    return TestCase("fake", {"passes": ["clean"]}, {"kind": "generated", "seed": seed},
                    input_seed=seed)


def test_seed_pool_keeps_new_features_and_favours_rare_ones() -> None:
    pool = SeedPool()
    assert pool.observe(_case(1), frozenset({1, 2})) is not None
    assert pool.observe(_case(2), frozenset({1})) is None  # nothing new: not kept
    rare = pool.observe(_case(3), frozenset({1, 3}))
    assert rare is not None and rare.found == frozenset({3})
    for k in range(10):  # feature 2 becomes common
        pool.observe(_case(10 + k), frozenset({1, 2}))
    common = pool.seeds[0]
    assert pool.energy(rare) > pool.energy(common)
    picks = [pool.choose(random.Random(k)).source["seed"] for k in range(40)]
    assert picks.count(3) > picks.count(1)


def test_code_coverage_run_of_a_target_that_reports_its_own_edges(tmp_path: Path) -> None:
    from fuzzer.campaign.code_coverage import measure, plot

    _, rows = measure("fake", ["generated", "mutated"], 8, tmp_path / "counters", jobs=1,
                      timeout=3.0)  # the fake target's "hang" pass sleeps forever
    assert [r.source for r in rows] == ["generated", "mutated", "union"]
    assert [r.cases for r in rows] == [8, 8, 16]
    assert all(len(r.curve) == r.cases for r in rows[:2])
    assert all(a <= b for r in rows[:2] for a, b in pairwise(r.curve))
    plot(rows, tmp_path / "coverage.png", "fake")
    assert (tmp_path / "coverage.png").read_bytes()[:4] == b"\x89PNG"
