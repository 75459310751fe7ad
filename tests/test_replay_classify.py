"""Replay classification rules (no processes): fixed, fails, changed, unusable."""

from __future__ import annotations

from dataclasses import replace

from fuzzer.execution.case import CaseResult
from fuzzer.store.meta import BundleMeta
from fuzzer.triage.replay import classify
from fuzzer.triage.rows import bundle_status
from oracles.base import Finding
from tests.bundle_files import meta_dict

META = BundleMeta.from_json(meta_dict("output-mismatch-00000000"))
INSTALLED = {"target": "fake 1.0", "onnx": "1.23.2", "onnxruntime": "1.31.1"}


def result(*symptoms: str, unusable: str | None = None) -> CaseResult:
    return CaseResult([Finding(s, "compare", f"{s} seen") for s in symptoms], unusable,
                      "done", {})


def test_each_replay_outcome_has_its_status() -> None:
    assert classify(META, result()).status == "fixed"
    assert classify(META, result("output-mismatch")).status == "fails"
    assert classify(META, result("bloat", "output-mismatch")).status == "fails"
    changed = classify(META, result("invalid-model"))
    assert (changed.status, changed.observed) == ("changed", "invalid-model")
    assert classify(META, result(unusable="reference: RuntimeError")).status == "unusable"


def test_triage_status_uses_a_replay_only_with_the_same_versions() -> None:
    assert bundle_status(META, INSTALLED) == "not-replayed"  # found with these, no replay
    newer = dict(INSTALLED, target="fake 2.0")
    assert bundle_status(META, newer) == "unverified"
    replayed = replace(META, replay={"status": "fixed", "versions": newer})
    assert bundle_status(replayed, newer) == "fixed"
    assert bundle_status(replayed, INSTALLED) == "not-replayed"
    assert bundle_status(replace(META, replay={"status": "fails", "versions": INSTALLED}),
                         INSTALLED) == "fails"
    assert bundle_status(replace(META, replay={"status": "fixed", "versions": dict(
        newer, onnxruntime="1.20.0")}), newer) == "unverified"


def test_a_pass_the_installed_target_lacks_is_untestable_not_a_failure() -> None:
    from fuzzer.execution.case import TestCase
    from fuzzer.triage.replay import FAILING, UNTESTABLE, missing_passes

    case = TestCase("onnxoptimizer", {"passes": ["eliminate_identity", "fuse_future_thing"]},
                    {"kind": "bundle"})
    assert missing_passes(case) == ["fuse_future_thing"]
    replay = classify(META, result(unusable=f"{UNTESTABLE}: fuse_future_thing"))
    assert replay.status == "untestable" and "untestable" not in FAILING
    assert bundle_status(replace(META, replay={"status": "untestable", "versions": INSTALLED}),
                         INSTALLED) == "untestable"


def test_every_status_has_a_label() -> None:
    from fuzzer.triage.replay import REPLAY_STATUSES
    from fuzzer.triage.rows import STATUS_RULES
    from fuzzer.triage.table import STATUS_LOOK

    assert set(REPLAY_STATUSES) | {s for s, _ in STATUS_RULES} <= set(STATUS_LOOK)


def test_replay_falls_back_to_the_responsible_passes_where_a_pass_is_missing() -> None:
    from fuzzer.triage.replay import replay_config

    meta = replace(META, target=replace(META.target, config={"passes": ["a", "drop-node", "b"],
                                                             "fixed_point": True}))
    everything = lambda name: True  # noqa: E731
    older = lambda name: name != "b"  # noqa: E731
    localized = replace(meta, responsible_passes=["drop-node"])
    assert replay_config(localized, everything)["passes"] == ["a", "drop-node", "b"]
    assert replay_config(localized, older) == {"passes": ["drop-node"], "fixed_point": True}
    assert replay_config(meta, older)["passes"] == ["a", "drop-node", "b"]  # not localized
    assert replay_config(replace(meta, responsible_passes=["b"]), older)["passes"] == \
        ["a", "drop-node", "b"]
