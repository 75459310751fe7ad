"""Replay of bundles against the installed versions: run model.onnx with inputs.npz and the
bundle's configuration (:func:`replay_config`) through the Sandbox again, and record what
happened in the bundle's meta.json as the optional field ``replay``::

    "replay": {"status": "fixed", "time": "2026-11-21T10:00:00Z",
               "versions": {"target": "<target> <version>", "onnx": "1.23.2", ...},
               "observed": null, "message": null}

``status`` is one of :data:`REPLAY_STATUSES`; ``observed`` and ``message`` are the most
severe finding of the replay (``null`` when clean).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.store.case import bundle_case
from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta
from fuzzer.store.versions import utc_now
from fuzzer.triage.versions import installed_versions
from oracles import symptom as symptom_record

REPLAY_STATUSES = ("fixed", "fails", "changed", "unusable", "untestable")
#: statuses that make ``optfuzz replay`` exit non-zero.
FAILING = frozenset({"fails", "changed", "unusable"})
#: reason prefix of a bundle whose configuration names passes the installed target lacks
#: (an older release): the bug cannot be checked there, which is neither fixed nor failing.
UNTESTABLE = "passes missing in the installed target"
#: why a bundle whose symptom needs an instrumented build cannot replay here.
NO_BUILD = "no sanitize build here"


@dataclass
class Replay:
    """What one replay showed.

    Attributes:
        status: one of :data:`REPLAY_STATUSES`.
        observed: symptom of the most severe finding, or None when clean or unusable.
        message: that finding's message, or why the model was unusable.
        previous: the status recorded by the previous replay, or None.
    """

    bundle_id: str
    status: str
    observed: str | None
    message: str | None
    previous: str | None = None


def replay_config(meta: BundleMeta, available: Callable[[str], bool]) -> dict[str, Any]:
    """The configuration a bundle is replayed with: the recorded one, or, where the installed
    target lacks a pass of it (``available`` is False) but has every responsible pass, the
    responsible passes alone (localization showed they reproduce the finding), so an older
    or newer optimizer can still be checked."""
    config = dict(meta.target.config)
    responsible = meta.responsible_passes
    passes = config.get("passes") or []
    if responsible is not None and not all(map(available, passes)) and \
            all(map(available, responsible)):
        config["passes"] = list(responsible)
    return config


def pass_available(target_name: str) -> Callable[[str], bool]:
    """Whether the installed target called ``target_name`` offers a pass."""
    from fuzzer.targets import get_target, offers_pass

    return offers_pass(get_target(target_name))


def missing_passes(case: TestCase) -> list[str]:
    """Passes of ``case``'s configuration that the installed target does not offer."""
    available = pass_available(case.target)
    return [p for p in case.config.get("passes") or [] if not available(p)]


def _is_untestable(meta: BundleMeta, result: CaseResult) -> bool:
    return bool(result.unusable) and result.unusable.startswith((UNTESTABLE, NO_BUILD))


def _is_unusable(meta: BundleMeta, result: CaseResult) -> bool:
    return bool(result.unusable)


def _is_fixed(meta: BundleMeta, result: CaseResult) -> bool:
    return not result.findings


def _still_fails(meta: BundleMeta, result: CaseResult) -> bool:
    return any(f.symptom == meta.symptom for f in result.findings)


#: (status, predicate over (meta, result)), first match wins; "changed" is the rest.
RULES: tuple[tuple[str, Callable[[BundleMeta, CaseResult], bool]], ...] = (
    ("untestable", _is_untestable),
    ("unusable", _is_unusable),
    ("fixed", _is_fixed),
    ("fails", _still_fails),
    ("changed", lambda meta, result: True),
)


def classify(meta: BundleMeta, result: CaseResult) -> Replay:
    """Compare a replay ``result`` with the bundle's recorded symptom."""
    status = next(name for name, rule in RULES if rule(meta, result))
    first = result.findings[0] if result.findings else None
    message = result.unusable if result.unusable else (first.message if first else None)
    previous = (meta.replay or {}).get("status")
    return Replay(meta.id, status, first.symptom if first else None, message, previous)


def record_replay(store: BundleStore, replay: Replay, versions: dict[str, str]) -> None:
    """Write ``replay`` (with the ``versions`` it ran under) into the bundle's meta.json; a
    bundle whose meta.json became unreadable meanwhile is left alone (and counted by the
    store as damaged)."""

    def change(meta: BundleMeta) -> None:
        meta.replay = {"status": replay.status, "time": utc_now(), "versions": versions,
                       "observed": replay.observed, "message": replay.message}

    with contextlib.suppress(OSError, ValueError):
        store.update(replay.bundle_id, change)


def replay_all(store: BundleStore, metas: list[BundleMeta], sandbox: Any,
               sanitized: Mapping[str, Any] | None = None) -> Iterator[Replay]:
    """Replay every bundle (by its meta) of ``store`` in ``sandbox`` (a
    :class:`fuzzer.execution.sandbox.Sandbox`), record each result in its meta.json and yield it, in
    the order of ``metas``. A bundle with missing or unreadable files yields ``unusable``.
    A bundle whose symptom only a sanitizer shows (``Symptom.build``) runs in
    ``sanitized[target name]`` (:func:`sanitized_sandboxes`), and is ``untestable`` where
    there is none."""
    versions: dict[str, dict[str, str]] = {}
    pending: list[tuple[BundleMeta, Future[CaseResult] | None, str | None]] = []
    for meta in metas:
        try:
            case = bundle_case(store.path(meta.id), meta,
                               replay_config(meta, pass_available(meta.target.name)))
        except (OSError, ValueError) as exc:
            pending.append((meta, None, f"bundle unreadable: {exc}"))
            continue
        missing = missing_passes(case)
        if missing:
            pending.append((meta, None, f"{UNTESTABLE}: {', '.join(missing)}"))
            continue
        box = sandbox
        if symptom_record(meta.symptom).build == "sanitize":
            box = (sanitized or {}).get(meta.target.name)
            if box is None:
                pending.append((meta, None, f"{NO_BUILD}: optfuzz target build "
                                            f"{meta.target.name} --sanitize"))
                continue
        pending.append((meta, box.submit(case), None))
    for meta, future, problem in pending:
        name = meta.target.name
        if name not in versions:
            versions[name] = installed_versions(name)
        if future is None:
            result = CaseResult([], problem, "materialize", {})
        else:
            result = future.result()
        replay = classify(meta, result)
        record_replay(store, replay, versions[name])
        yield replay


def sanitized_sandboxes(metas: list[BundleMeta], jobs: int, timeout: float,
                        stack: contextlib.ExitStack) -> dict[str, Any]:
    """Target name -> a sandbox on its sanitize build (closed with ``stack``), for the
    targets of ``metas`` whose symptom only a sanitizer shows; a target without a sanitize
    build here gets none."""
    from fuzzer.builds import sanitizer_build
    from fuzzer.builds.sanitizer import sanitizer_runtime
    from fuzzer.errors import InputError
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.targets import get_target

    names = {m.target.name for m in metas if symptom_record(m.symptom).build == "sanitize"}
    boxes: dict[str, Any] = {}
    for name in sorted(names):
        try:
            runtime = sanitizer_runtime(sanitizer_build(get_target(name)))
        except (InputError, ImportError):
            continue
        boxes[name] = stack.enter_context(Sandbox(jobs, timeout, None, sanitizer=runtime))
    return boxes
