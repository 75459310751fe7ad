"""Deduplication: one bundle per root cause, hits counted, safe across processes."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from fuzzer.execution.sandbox import Sandbox
from fuzzer.findings.dedup import find_bundle
from fuzzer.handling.outcome import FindingPolicy
from fuzzer.handling.record import handle_finding
from fuzzer.store.folder import BundleStore
from tests.bundle_files import bundle_files
from tests.localize_models import chain, fake_case, fillers

POLICY = FindingPolicy(localize=True, reduce_seconds=0)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(jobs=1, timeout=10.0) as box:
        yield box


def handle(store, sandbox, case):
    result = sandbox.run(case)
    assert result.findings
    handled = handle_finding(store, sandbox, case, result, "1.0", POLICY)
    return handled.bundle_id, handled.status == "new"


def test_same_bug_from_different_models_and_positions_is_one_bundle(sandbox, tmp_path):
    store = BundleStore(tmp_path)
    models = [chain(["Exp"], prefix="a", tail="Add"),
              chain(["Sigmoid", "Neg", "Exp"], prefix="onnx::Mul_", shape=(1, 8), tail="Add"),
              chain(["Tanh", "Exp"], prefix="/layer1/out", shape=(3,), tail="Add")]
    outcomes = [handle(store, sandbox, fake_case(m, fillers({pos: "drop-node"}), seed=pos))
                for m, pos in zip(models, (2, 19, 37), strict=True)]
    assert [created for _, created in outcomes] == [True, False, False]
    assert store.ids() == [outcomes[0][0]]
    meta = store.meta(outcomes[0][0])
    assert meta.hits == 3 and meta.responsible_passes == ["drop-node"]
    assert meta.localization["runs"] >= 1
    assert meta.last_seen >= meta.first_seen


def test_two_passes_with_the_same_symptom_give_two_bundles(sandbox, tmp_path):
    store = BundleStore(tmp_path)
    model = chain(["Neg", "Exp"])
    a, _ = handle(store, sandbox, fake_case(model, fillers({5: "raise"})))
    b, _ = handle(store, sandbox, fake_case(model, fillers({5: "pair-a", 30: "pair-b"})))
    c, _ = handle(store, sandbox, fake_case(model, fillers({9: "pair-a", 11: "pair-b"})))
    assert a != b and b == c
    assert store.meta(b).responsible_passes == ["pair-a", "pair-b"]
    assert store.meta(b).hits == 2 and store.meta(a).hits == 1


def test_one_rewrite_rewired_or_kept_at_a_graph_output_is_one_bundle(sandbox, tmp_path):
    """drop-node bypasses its node, or, where the node writes a graph output, puts an
    Identity in its place: the Identity only keeps the output's name."""
    store = BundleStore(tmp_path)
    rewired, _ = handle(store, sandbox, fake_case(chain(["Exp"], tail="Add"), ["drop-node"]))
    at_output, _ = handle(store, sandbox, fake_case(chain(["Neg", "Exp"]), ["drop-node"]))
    assert rewired == at_output
    assert store.meta(rewired).root_cause.endswith("|fp:-Exp")


def test_a_renamed_signature_is_still_found_through_its_alias(tmp_path):
    store = BundleStore(tmp_path)
    store.create("bloat-00000000", bundle_files("bloat-00000000", signature="new",
                                                aliases=["old"]))
    assert find_bundle(store, "bloat", "old") == "bloat-00000000"
    assert find_bundle(store, "bloat", "new") == "bloat-00000000"
    assert find_bundle(store, "bloat", "other") is None


def _record_many(root: str, barrier, times: int) -> None:
    import numpy as np

    from fuzzer.execution.case import Artifacts
    from fuzzer.handling.bundle import record
    from oracles.base import Finding

    model = chain(["Neg"])
    case = fake_case(model, ["raise"])
    finding = Finding("optimizer-error", "optimize", "RuntimeError: boom")
    artifacts = Artifacts(model, None, {"x": np.zeros((2, 3), np.float32)})
    barrier.wait()
    for _ in range(times):
        record(BundleStore(root), "fake|raise|optimizer-error|RuntimeError: boom", finding,
               case, case.source, artifacts, "1.0", ["raise"])


def test_concurrent_records_from_several_processes_give_one_bundle(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers, times = 4, 5
    barrier = context.Barrier(workers)
    procs = [context.Process(target=_record_many, args=(str(tmp_path), barrier, times))
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    store = BundleStore(tmp_path)
    assert len(store.ids()) == 1
    assert store.meta(store.ids()[0]).hits == workers * times
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and p.is_dir()]


def test_a_root_cause_that_ends_without_a_bundle_is_tried_again_less_and_less(
        sandbox, tmp_path, monkeypatch):
    """A nondeterministic original ends without a bundle; later findings with the same key
    are handled in full only at the 1st, 2nd, 4th, 8th occurrence after it (exponential
    backoff), the others end the same way without a determinism run."""
    import fuzzer.handling.outcome as outcome
    import fuzzer.handling.record as record

    runs = []
    monkeypatch.setattr(record, "deterministic", lambda *args: runs.append(1) and False)
    monkeypatch.setattr(outcome, "RETRY_SECONDS", 0.0)  # the count alone decides here
    store, roots = BundleStore(tmp_path), outcome.RootCauseMemo()
    case = fake_case(chain(["Neg", "Exp"]), ["drop-node"])
    result = sandbox.run(case)
    statuses, names = [], []
    for _ in range(10):
        handled = handle_finding(store, sandbox, case, result, "1.0", POLICY, roots=roots)
        statuses.append(handled.status)
        names.append((handled.name, handled.said))
    assert statuses == ["nondeterministic"] * 10
    assert len(runs) == 5  # the first, then occurrences 1, 2, 4 and 8 after it
    assert [said.startswith("(not tried again") for _, said in names] == \
        [False, False, False, True, False, True, True, True, False, True]
    assert {name for name, _ in names} == {""}  # the note is never part of the name
    assert store.ids() == []


def test_the_backoff_goes_on_in_a_memo_restored_from_its_record(sandbox, tmp_path,
                                                                monkeypatch):
    """A memo made from another's :meth:`failures` (through JSON, as campaign.json keeps
    it) goes on with its backoff: ten findings split over two memos cost the determinism
    runs of ten findings with one memo. The record keeps the newest failed keys, at most
    MAX_FAILED_KEYS, and leaves out entries that are not its own."""
    import fuzzer.handling.outcome as outcome
    import fuzzer.handling.record as record

    runs = []
    monkeypatch.setattr(record, "deterministic", lambda *args: runs.append(1) and False)
    monkeypatch.setattr(outcome, "RETRY_SECONDS", 0.0)  # the count alone decides here
    store, first = BundleStore(tmp_path), outcome.RootCauseMemo()
    case = fake_case(chain(["Neg", "Exp"]), ["drop-node"])
    result = sandbox.run(case)
    for _ in range(5):
        handle_finding(store, sandbox, case, result, "1.0", POLICY, roots=first)
    assert len(runs) == 4  # the first, then occurrences 1, 2 and 4 after it
    saved = json.loads(json.dumps(first.failures()))
    assert [entry["since"] for entry in saved.values()] == [4]
    second = outcome.RootCauseMemo({**saved, "junk": "not an entry", "odd": {"since": 1}})
    assert list(second.failures()) == list(saved)
    for _ in range(5):
        handle_finding(store, sandbox, case, result, "1.0", POLICY, roots=second)
    assert len(runs) == 5  # occurrence 8 alone, as one memo would have tried them
    monkeypatch.setattr(outcome, "MAX_FAILED_KEYS", 3)
    for key in "abcd":
        second.failed(key, outcome.Handled("unconfirmed", name=key))
    assert list(second.failures()) == ["b", "c", "d"]


def test_a_failed_key_waits_retry_seconds_between_full_attempts():
    """However the backoff counts, a failed key is not handled in full again within
    RETRY_SECONDS of its last full attempt; an attempt due in that wait is taken at the
    first finding after it, and the next is due at twice that count. The wait and the count
    outlive the memo (its record, through JSON); a record written before they existed is
    due at the next power of two, out of its wait."""
    import fuzzer.handling.outcome as outcome

    now = [1000.0]
    memo = outcome.RootCauseMemo(clock=lambda: now[0])
    memo.failed("k", outcome.Handled("unconfirmed", name="flaky"))

    def attempts(times: list[float]) -> list[bool]:
        tried = []
        for when in times:
            now[0] = when
            tried.append(memo.backed_off("k") is None)
        return tried

    wait = outcome.RETRY_SECONDS
    # findings 1 and 2 are due by count but come within the wait; 3 comes after it
    assert attempts([1010.0, 1020.0, 1000.0 + wait + 1]) == [False, False, True]
    assert memo.failures()["k"] == {"status": "unconfirmed", "name": "flaky", "since": 3,
                                    "next": 6, "at": 1000.0 + wait + 1}
    later = 1000.0 + 3 * wait
    assert attempts([later, later + 1, later + 2]) == [False, False, True]  # 4, 5, then 6
    restored = outcome.RootCauseMemo(json.loads(json.dumps(memo.failures())),
                                     clock=lambda: now[0])
    assert restored.failures() == memo.failures()
    now[0] = later + 3
    assert restored.backed_off("k") is not None  # 7: not due by count, and in the wait
    old = outcome.RootCauseMemo({"k": {"status": "unconfirmed", "name": "", "since": 5}})
    assert [old.backed_off("k") is None for _ in range(3)] == [False, False, True]  # 6, 7, 8


def test_the_failed_keys_of_several_memos_merge_into_one_record(monkeypatch):
    """A cluster campaign's handlers each keep failed keys; their records merge: every key,
    with the entry that met the most findings since, the newest MAX_FAILED_KEYS."""
    import fuzzer.handling.outcome as outcome

    one = {"a": {"status": "nondeterministic", "name": "", "since": 3},
           "b": {"status": "unconfirmed", "name": "x", "since": 1}}
    two = {"a": {"status": "nondeterministic", "name": "", "since": 5},
           "c": {"status": "documented", "name": "y", "since": 0}}
    merged = outcome.merge_failures([one, two])
    assert merged == {"a": two["a"], "b": one["b"], "c": two["c"]}
    monkeypatch.setattr(outcome, "MAX_FAILED_KEYS", 2)
    assert list(outcome.merge_failures([one, two])) == ["b", "c"]
