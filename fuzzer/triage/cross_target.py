"""Cross-target replay: each bundle's minimized model and inputs run through another target
(its default configuration) in the sandbox, judged by the same oracles. Analogous rewrites
exist across tools (Conv+BatchNormalization fusion in five of them), and onnx-simplifier
ships onnxoptimizer's passes inside it, so a fault found in one target often breaks another.

The verdict of each (bundle, target) goes into meta.json's ``cross_targets`` object (kept by
:class:`fuzzer.store.meta.BundleMeta` among its unknown fields, written back verbatim)::

    "cross_targets": {"onnxsim": {"status": "breaks", "version": "v0.8.1",
                                  "observed": "invalid-model", "message": "...",
                                  "time": "2026-11-28T10:00:00Z"}}

Statuses (:data:`STATUSES`): ``breaks`` (a finding the other target does not document),
``clean``, ``documented`` (a finding that target documents, named in ``message``),
``unusable`` (the model cannot be run there; the reason in ``message``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.store.case import bundle_case
from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta
from fuzzer.store.versions import utc_now

#: meta.json key of the verdicts per other target.
CROSS_FIELD = "cross_targets"
BREAKS, CLEAN, DOCUMENTED, UNUSABLE = "breaks", "clean", "documented", "unusable"
STATUSES = (BREAKS, CLEAN, DOCUMENTED, UNUSABLE)


@dataclass
class CrossReplay:
    """What one bundle's model showed on another target.

    Attributes:
        bundle_id: the bundle.
        target: the other target's name.
        status: one of :data:`STATUSES`.
        observed: the symptom of the first finding (``breaks``, ``documented``), else None.
        message: that finding's message, the documented behaviour's name, or why the model
            could not run; None when clean.
    """

    bundle_id: str
    target: str
    status: str
    observed: str | None = None
    message: str | None = None


def cross_case(store: BundleStore, meta: BundleMeta, target_name: str) -> TestCase:
    """The bundle's model and inputs as a case of ``target_name`` in its default
    configuration.

    Raises:
        OSError, ValueError: the bundle's model.onnx or inputs.npz cannot be read.
        KeyError: no target of that name is installed.
    """
    from fuzzer.targets import get_target

    config = get_target(target_name).default_config()
    return dataclasses.replace(bundle_case(store.path(meta.id), meta, config),
                               target=target_name)


def judge(bundle_id: str, target_name: str, result: CaseResult) -> CrossReplay:
    """The :class:`CrossReplay` of a run of the bundle's model on ``target_name``."""
    if result.unusable:
        return CrossReplay(bundle_id, target_name, UNUSABLE, None, result.unusable)
    if not result.findings:
        return CrossReplay(bundle_id, target_name, CLEAN)
    first = result.findings[0]
    if result.documented:
        return CrossReplay(bundle_id, target_name, DOCUMENTED, first.symptom, result.documented)
    return CrossReplay(bundle_id, target_name, BREAKS, first.symptom, first.message)


def record_cross(store: BundleStore, replay: CrossReplay, version: str) -> None:
    """Write ``replay`` (run under ``version`` of its target) into the bundle's meta.json,
    replacing an earlier verdict for the same target; a bundle whose meta.json became
    unreadable meanwhile is left alone."""

    def change(meta: BundleMeta) -> None:
        verdicts = dict(meta.extra.get(CROSS_FIELD) or {})
        verdicts[replay.target] = {"status": replay.status, "version": version,
                                   "observed": replay.observed, "message": replay.message,
                                   "time": utc_now()}
        meta.extra[CROSS_FIELD] = verdicts

    with contextlib.suppress(OSError, ValueError):
        store.update(replay.bundle_id, change)


def cross_replay_all(store: BundleStore, metas: list[BundleMeta], sandbox: Any,
                     target_name: str) -> Iterator[CrossReplay]:
    """Run every bundle (by its meta) of ``store`` on ``target_name`` in ``sandbox`` (a
    :class:`fuzzer.execution.sandbox.Sandbox`), record each verdict in its meta.json and
    yield it, in the order of ``metas``. A bundle of ``target_name`` itself is skipped; an
    unreadable bundle yields ``unusable``.

    Raises:
        KeyError: no target of that name is installed.
    """
    from fuzzer.targets import get_target

    version = get_target(target_name).version()
    pending: list[tuple[BundleMeta, Future[CaseResult] | None, str | None]] = []
    for meta in metas:
        if meta.target.name == target_name:
            continue
        try:
            case = cross_case(store, meta, target_name)
        except (OSError, ValueError) as exc:
            pending.append((meta, None, f"bundle unreadable: {exc}"))
            continue
        pending.append((meta, sandbox.submit(case), None))
    for meta, future, problem in pending:
        result = CaseResult([], problem, "materialize", {}) if future is None \
            else future.result()
        replay = judge(meta.id, target_name, result)
        record_cross(store, replay, version)
        yield replay
