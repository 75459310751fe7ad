"""Re-bucketing (``optfuzz triage --rebucket``): today's root-cause bucketing applied, in place,
to a folder written by any earlier optfuzz, whose wave-1 signatures made about four bundles
per root cause.

Per readable bundle (damaged ones are counted and never touched):

1. **Replay** model.onnx with inputs.npz and the recorded configuration
   (:func:`fuzzer.triage.replay.replay_config`) in the sandbox. Where the bundle's symptom no
   longer shows (fixed) or the original cannot run, the bundle stays as it is.
2. **Documented behaviour** of the target (:meth:`fuzzer.targets.base.Target.documented`),
   with the recorded configuration or with the minimal passes of step 3, and a wrong output
   that float64 runs explain (:func:`fuzzer.handling.exactness.float64_explains`): the whole
   folder moves to ``documented/<id>/`` with a ``REASON.txt``.
3. **Key**: localization on the bundle's model (already minimized by the campaign that wrote
   it; Igor, CCS'21, clusters only shrunk inputs), then the root-cause key of the run with
   the minimal passes (:func:`fuzzer.handling.key.key_and_culprit`: target, culprit, kind
   of fault, crash site or footprint; the culprit judged on every intermediate), so that one
   fault reached through many graphs, names and symptoms is one bucket, and bundles are
   grouped by it (one bundle per distinct bug, the unit that Tamer, PLDI'13, ranks).
4. **Merge** each group into one kept bundle (:func:`choose_kept`): the others become its
   variants (model, inputs, original and meta.json copied to ``variants/<n>.*``, their own
   variants renumbered after them, none dropped), and its meta gets the key, the breaking
   and enabling passes, the pass that exposed the culprit's damage, the minimal pass list,
   the summed hits per symptom and the widest first/last-seen span.

Crash safety, write first and delete last: variant files are written (atomically) and the
kept meta.json replaced under the store's lock before a merged folder is renamed to a hidden
``.<id>.merged`` folder and removed. A run killed at any point loses no model; the next run
sweeps such hidden folders, recognizes a bundle whose meta.json the kept bundle already lists
among its variants (no hits counted twice) and finishes the merge. A second run on a finished
folder writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.findings.rootcause import root_cause_id
from fuzzer.findings.signature import normalize_message
from fuzzer.handling.exactness import float64_explains
from fuzzer.handling.key import key_and_culprit
from fuzzer.handling.minimize import minimize, probe
from fuzzer.localize.search import localize
from fuzzer.modelio.graphs import node_count
from fuzzer.store.bundle_state import DUPLICATE, REBUCKET, marked, merged
from fuzzer.store.case import bundle_case
from fuzzer.store.folder import (
    VARIANTS,
    BundleStore,
    DamagedBundleError,
    keep_as_variant,
    next_variant_number,
    write_atomic,
)
from fuzzer.store.meta import BundleMeta
from fuzzer.store.versions import utc_now
from fuzzer.targets import get_target
from fuzzer.targets.base import DocumentedBehaviour
from fuzzer.triage.replay import missing_passes, pass_available, replay_config
from oracles import symptom as symptom_record
from oracles.base import STAGES, Finding

#: subfolder that receives bundles of behaviour their target documents.
DOCUMENTED = "documented"
#: file beside a moved bundle's meta.json saying which behaviour it shows, and where written.
REASON_FILE = "REASON.txt"
#: suffix of the hidden name a merged folder takes just before it is removed.
TRASH_SUFFIX = ".merged"
#: where a wrong output that float64 runs explain is said to be no bug (REASON.txt).
FLOAT64_SOURCE = ("fuzzer/execution/float64.py: float64 runs of the bundle's model and its "
                  "optimized form (onnxruntime, else onnx's reference evaluator)")
#: time for the trigger probes of a bundle that records none (seconds).
PROBE_SECONDS = 30.0
Echo = Callable[[str], None]


@dataclass
class Keyed:
    """A bundle whose finding reproduces, with today's root-cause key.

    Attributes:
        meta: its meta as read before any change.
        key: the root-cause key (:func:`fuzzer.findings.rootcause.root_cause_key`).
        breaking, enabling: the breaking pass and the passes that enable it.
        passes: the minimal pass subsequence (None: not localized).
        localization: the localization record for meta.json.
        nodes: nodes of model.onnx (subgraphs included); size: its bytes.
        culprit: the culprit search's fields for meta.json (``exposed_by``, ``damage``,
            ``culprit_staging``: :meth:`fuzzer.localize.culprit.Culprit.to_json`).
        explained: the name float64 runs give a wrong output that is no bug
            (:func:`fuzzer.handling.exactness.float64_explains`), else None.
    """

    meta: BundleMeta
    key: str
    breaking: str
    enabling: list[str]
    passes: list[str] | None
    localization: dict[str, Any] = field(default_factory=dict)
    nodes: int = 0
    size: int = 0
    culprit: dict[str, Any] = field(default_factory=dict)
    explained: str | None = None

    def recorded(self) -> bool:
        """Whether the bundle's meta already records this key and these passes."""
        meta = self.meta
        return (meta.root_cause, meta.breaking_pass, meta.enabling_passes,
                meta.responsible_passes, meta.exposed_by, meta.damage) == \
            (self.key, self.breaking, self.enabling, self.passes,
             self.culprit.get("exposed_by"), self.culprit.get("damage"))


@dataclass
class Summary:
    """Counts of one re-bucketing run.

    Attributes:
        bucketed: bundles that reproduce and were grouped by key.
        root_causes: groups (bundles left standing among the bucketed ones).
        merged: bundles that became variants of another.
        documented: bundles moved to ``documented/``.
        fixed: bundles whose finding no longer shows (left in place).
        left: bundles left in place for another reason (they cannot run, or
            ``documented/`` holds a folder of their id already).
        damaged: bundles skipped for a damaged meta.json or missing files.
        changed: bundles written, moved or removed (0 on a folder already re-bucketed).
    """

    bucketed: int = 0
    root_causes: int = 0
    merged: int = 0
    documented: int = 0
    fixed: int = 0
    left: int = 0
    damaged: int = 0
    changed: int = 0

    def line(self) -> str:
        """The closing line for a person."""
        left = f", {self.left} left in place" if self.left else ""
        tail = "" if self.changed else "; nothing changed"
        return (f"rebucketed {self.bucketed} bundles: {self.root_causes} root causes "
                f"({self.merged} merged as variants), {self.documented} moved to "
                f"{DOCUMENTED}/, {self.fixed} fixed{left}, {self.damaged} damaged{tail}")


def rebucket(store: BundleStore, sandbox: Any, echo: Echo,
             witness_for: Callable[[str], Any] | None = None) -> Summary:
    """Re-bucket every readable bundle of ``store`` in place (see the module docstring),
    running models in ``sandbox`` (a :class:`fuzzer.execution.sandbox.Sandbox`) and passing
    one line per merge, move, key update or bundle left in place to ``echo``;
    ``witness_for(target name)`` gives the :class:`fuzzer.handling.crash_state.CrashWitness`
    that keys a target's native crashes by their crash state (None: none).

    Raises:
        OSError: a file cannot be written, moved or removed (what was written stays; no
            model is lost, and a second run completes the work).
        SandboxError: the worker pool stopped.
    """
    _sweep(store)
    metas, damaged = store.read_all()
    summary = Summary(damaged=len(damaged))
    keyed: list[Keyed] = []
    for meta, case, outcome in _replays(store, metas, sandbox):
        if isinstance(outcome, str) or case is None:
            echo(f"left {meta.id}: cannot run ({outcome})")
            summary.left += 1
            continue
        finding = reproduced(meta, outcome)
        if finding is None:
            echo(f"left {meta.id}: fixed (now {_now_shows(outcome)})")
            summary.fixed += 1
            continue
        target = get_target(case.target)
        behaviour = target.documented(finding, case.config)
        if behaviour is None:  # again with the minimal passes, as a campaign checks it
            item = root_cause_of(sandbox, meta, case, outcome, finding,
                                 witness_for(case.target) if witness_for else None)
            if item.passes is not None:
                behaviour = target.documented(finding,
                                              target.with_passes(case.config, item.passes))
            if behaviour is None and item.explained is not None:
                behaviour = DocumentedBehaviour(item.explained, FLOAT64_SOURCE,
                                                lambda finding, config: True)
            if behaviour is None:
                keyed.append(item)
                continue
        problem = move_documented(store, meta, behaviour, finding)
        if problem:
            echo(f"left {meta.id}: {problem}")
            summary.left += 1
            continue
        echo(f"moved {meta.id} to {DOCUMENTED}/{meta.id} ({behaviour.name})")
        summary.documented += 1
        summary.changed += 1
    for group in _groups(keyed).values():
        _settle(store, group, summary, echo, sandbox)
    return summary


def _cannot_replay(meta: BundleMeta, case: TestCase) -> str | None:
    """Why ``case``, the replay of bundle ``meta``, cannot run in a plain sandbox (passes
    the installed target lacks, or a symptom only a build such as the sanitize build
    shows), else None."""
    missing = missing_passes(case)
    if missing:
        return f"passes missing in the installed target: {', '.join(missing)}"
    needs = symptom_record(meta.symptom).build
    if needs:
        return f"{meta.symptom} shows only on the {needs} build of {meta.target.name}"
    return None


def _replays(store: BundleStore, metas: list[BundleMeta], sandbox: Any) -> Iterator[
        tuple[BundleMeta, TestCase | None, CaseResult | str]]:
    """``(meta, case, result or why it cannot run)`` of every bundle, in the order of
    ``metas``; all runs are submitted first, so they use every worker."""
    pending: list[tuple[BundleMeta, TestCase | None, Future[CaseResult] | str]] = []
    for meta in metas:
        case: TestCase | None = None
        try:
            case = bundle_case(store.path(meta.id), meta,
                               replay_config(meta, pass_available(meta.target.name)))
            job: Future[CaseResult] | str = _cannot_replay(meta, case) or sandbox.submit(case)
        except KeyError as exc:  # an unknown target
            job = str(exc.args[0])
        except ImportError as exc:
            job = f"target {meta.target.name} is not installed ({exc})"
        except (OSError, ValueError) as exc:
            job = f"bundle unreadable: {exc}"
        pending.append((meta, case, job))
    for meta, case, job in pending:
        if isinstance(job, str):
            yield meta, case, job
            continue
        result = job.result()
        yield meta, case, (f"the original is unusable: {result.unusable}" if result.unusable
                           else result)


def reproduced(meta: BundleMeta, result: CaseResult) -> Finding | None:
    """The finding of ``result`` that is the bundle's own: its symptom with the same
    normalized message, else its symptom with any message; None when the symptom is gone."""
    same = [f for f in result.findings if f.symptom == meta.symptom]
    wanted = normalize_message(meta.message)
    return next((f for f in same if normalize_message(f.message) == wanted),
                same[0] if same else None)


def _now_shows(result: CaseResult) -> str:
    first = result.findings[0] if result.findings else None
    return f"{first.symptom}: {first.message}" if first is not None else "clean"


def root_cause_of(sandbox: Any, meta: BundleMeta, case: TestCase, result: CaseResult,
                  finding: Finding, witness: Any = None) -> Keyed:
    """Localize ``finding`` on the bundle's model and key the run with the minimal passes,
    as a campaign keys a finding after reduction (here no further reduction: the model is
    the campaign's minimized one). A bundle without a recorded trigger (written before the
    trigger probes) is probed for at most :data:`PROBE_SECONDS`, so that a name clash is keyed
    as one root cause as a campaign keys it. A native crash is keyed by its crash state
    where ``witness`` (a :class:`fuzzer.handling.crash_state.CrashWitness`) gives one."""
    where = localize(sandbox, case, result, finding)
    minimal = minimize(sandbox, case, result, finding, where.passes, 0.0, relocalize=False)
    trigger = meta.trigger
    if trigger is None and symptom_record(finding.symptom).reducible:
        trigger, _ = probe(sandbox, minimal, PROBE_SECONDS)  # the model stays as it is
    key, culprit = key_and_culprit(sandbox, case, minimal.finding, minimal.passes, minimal.run,
                                   trigger)
    try:
        nodes = node_count(case.model_bytes or b"")
    except Exception:  # an unparsable model ran as unusable before; keep the meta's count
        nodes = meta.nodes.minimized
    explained = float64_explains(sandbox, minimal)
    fields = culprit.to_json()
    state = witness.state_of(case, minimal.passes, minimal.finding) if witness else None
    if state is not None:  # one memory fault, whichever pass reached it
        key, fields["crash_state"] = state.key(case.target), state.to_json()
    return Keyed(meta, key, culprit.culprit, culprit.enabling, minimal.passes, where.to_json(),
                 nodes, len(case.model_bytes or b""), fields,
                 explained.name if explained is not None else None)


def move_documented(store: BundleStore, meta: BundleMeta, behaviour: DocumentedBehaviour,
                    finding: Finding) -> str | None:
    """Move the bundle folder to ``documented/<id>/`` with ``REASON.txt`` (written first,
    then one rename); returns why it stayed, or None.

    Raises:
        OSError: REASON.txt cannot be written or the folder cannot be moved.
    """
    target = store.root / DOCUMENTED / meta.id
    if target.exists():
        return f"documented behaviour {behaviour.name}, but {DOCUMENTED}/{meta.id} exists"
    version = get_target(meta.target.name).version()
    reason = (f"behaviour: {behaviour.name}\nsource: {behaviour.source}\n"
              f"finding: {finding.symptom}: {finding.message}\n"
              f"moved: {utc_now()} by optfuzz triage --rebucket "
              f"({meta.target.name} {version})\n")
    with store.locked():
        write_atomic(store.path(meta.id) / REASON_FILE, reason.encode())
        target.parent.mkdir(exist_ok=True)
        os.rename(store.path(meta.id), target)
    return None


def _groups(keyed: list[Keyed]) -> dict[str, list[Keyed]]:
    groups: dict[str, list[Keyed]] = {}
    for item in keyed:
        groups.setdefault(item.key, []).append(item)
    return groups


def choose_kept(group: list[Keyed]) -> Keyed:
    """The bundle a group of one key keeps: the one named after the key
    (:func:`fuzzer.findings.rootcause.root_cause_id`), else one that records the key already
    (an earlier re-bucketing kept it), else the plainest symptom (the earliest stage of
    :data:`oracles.base.STAGES`: an invalid model says more about a wrong rewrite than wrong
    outputs far downstream), then the smallest model (nodes, then bytes), then the oldest
    ``first_seen``, then the smallest id."""
    def rank(item: Keyed) -> tuple[bool, bool, int, int, int, str, str]:
        meta = item.meta
        stage = STAGES.index(meta.stage) if meta.stage in STAGES else len(STAGES)
        return (meta.id != root_cause_id(meta.symptom, item.key), meta.root_cause != item.key,
                stage, item.nodes, item.size, meta.first_seen, meta.id)

    return min(group, key=rank)


def _settle(store: BundleStore, group: list[Keyed], summary: Summary, echo: Echo,
            sandbox: Any) -> None:
    """Merge one group into its kept bundle, remove the merged folders, then write the kept
    bundle's report and repro.py again."""
    kept = choose_kept(group)
    others = [item for item in group if item is not kept]
    try:
        placed = merge(store, kept, others) if others or not kept.recorded() else {}
    except DamagedBundleError as exc:  # its meta.json was damaged since it was read
        echo(f"left {kept.meta.id} and {len(others)} bundle(s) of its root cause: {exc}")
        summary.damaged += 1
        return
    summary.bucketed += len(group)
    summary.root_causes += 1
    summary.merged += len(others)
    summary.changed += len(others) + (not kept.recorded())
    if not others and not kept.recorded():
        echo(f"keyed {kept.meta.id}: {kept.key}")
    with store.locked():
        for other in others:
            _discard(store, other.meta.id)
            echo(f"merged {other.meta.id} into {kept.meta.id} as {placed[other.meta.id]} "
                 f"({kept.breaking}, {kept.meta.symptom})")
    if others:
        repoint_duplicates(store, {other.meta.id for other in others}, kept.meta.id)
    if others or not kept.recorded():
        problem = refresh_report(store, kept.meta.id, sandbox)
        if problem:
            echo(f"kept {kept.meta.id} without a new report: {problem}")


def repoint_duplicates(store: BundleStore, gone: set[str], kept: str) -> None:
    """Bundles marked duplicate of one of ``gone`` (merged into ``kept``) are marked
    duplicate of ``kept`` instead, so that no state names a folder that no longer exists."""
    def point(meta: BundleMeta) -> None:
        assert meta.state is not None
        meta.state = marked(meta.state, DUPLICATE, kept, utc_now(), REBUCKET)

    for bundle_id in store.ids():
        try:
            state = store.meta(bundle_id).state
        except (DamagedBundleError, ValueError, OSError):  # a damaged bundle is left alone
            continue
        if state is not None and state.state == DUPLICATE and state.value in gone:
            store.update(bundle_id, point)


def refresh_report(store: BundleStore, bundle_id: str, sandbox: Any) -> str | None:
    """Write the kept bundle's report.md, repro.py (its minimal pass list), picture and
    attachment again from its updated meta.json (:func:`fuzzer.report.build.write_report`),
    so that what a maintainer forwards names the breaking pass. Returns why it could not
    (None when written); the bundle's models are never touched."""
    from fuzzer.report.build import write_report

    folder = store.path(bundle_id)
    try:
        write_report(folder, store.meta(bundle_id), folder, sandbox)
    except (OSError, ValueError, KeyError, DamagedBundleError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def merge(store: BundleStore, kept: Keyed, others: list[Keyed]) -> dict[str, str]:
    """Write the kept bundle: each of ``others`` copied into its ``variants/`` (unless an
    interrupted run did so already), then its meta.json with the key, passes, summed hits
    and seen times, atomically under the store's lock. Nothing is removed here. Returns
    merged bundle id -> the variant it became.

    Raises:
        DamagedBundleError: the kept bundle's meta.json is no longer readable.
        OSError: a file cannot be written (the kept meta.json is then unchanged).
    """
    folder = store.path(kept.meta.id)
    placed: dict[str, str] = {}

    def change(meta: BundleMeta) -> None:
        done = merged_ids(folder, meta)
        for other in others:
            if other.meta.id in done:
                placed[other.meta.id] = done[other.meta.id]
                continue
            placed[other.meta.id] = add_variants(store.path(other.meta.id), folder, other.meta,
                                                 meta)
            meta.hits += other.meta.hits
            for name, hits in other.meta.symptoms.items():
                meta.symptoms[name] = meta.symptoms.get(name, 0) + hits
            meta.first_seen = min(meta.first_seen, other.meta.first_seen)
            meta.last_seen = max(meta.last_seen, other.meta.last_seen)
            names = [other.meta.signature, *(other.meta.aliases or [])]
            meta.aliases = list(dict.fromkeys([*(meta.aliases or []), *names]))
            meta.aliases = [a for a in meta.aliases if a != meta.signature] or None
        meta.state = merged(meta.state, [o.meta.state for o in others], utc_now())
        meta.root_cause, meta.breaking_pass = kept.key, kept.breaking
        meta.enabling_passes, meta.responsible_passes = kept.enabling, kept.passes
        meta.localization = kept.localization
        meta.exposed_by = kept.culprit.get("exposed_by")
        meta.damage = kept.culprit.get("damage")
        if kept.culprit.get("culprit_staging"):
            meta.extra["culprit_staging"] = kept.culprit["culprit_staging"]
        if kept.culprit.get("crash_state"):
            meta.extra["crash_state"] = kept.culprit["crash_state"]

    store.update(kept.meta.id, change)
    return placed


def _number(name: str) -> int | None:
    head = Path(name).name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def merged_ids(folder: Path, meta: BundleMeta) -> dict[str, str]:
    """Bundle id -> listed variant, for the variants of ``meta`` (the kept bundle's committed
    meta) that were whole bundles: those with a ``variants/<n>.meta.json``."""
    found: dict[str, str] = {}
    for listed in meta.variants:
        number = _number(listed)
        path = folder / VARIANTS / f"{number}.meta.json"
        if number is None or not path.is_file():
            continue
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            found[data["id"]] = listed
    return found


def add_variants(source: Path, folder: Path, source_meta: BundleMeta, meta: BundleMeta) -> str:
    """Copy the bundle at ``source`` into ``folder/variants/`` (:data:`VARIANT_FILES` as
    ``<n><suffix>``, then each of its own variants renumbered after it) and list them in
    ``meta.variants``; return the variant name of its model. Every file is written
    atomically; ``meta`` is not written.

    Raises:
        OSError: a file cannot be read or written.
    """
    own = keep_as_variant(source, folder, meta)
    variants = folder / VARIANTS
    theirs = source / VARIANTS
    groups: dict[str, list[Path]] = {}
    for path in sorted(theirs.iterdir()) if theirs.is_dir() else []:
        if path.is_file() and not path.name.startswith("."):  # dot files: unfinished writes
            groups.setdefault(path.name.split(".", 1)[0], []).append(path)
    for head, paths in groups.items():
        number = next_variant_number(variants, meta.variants)
        for path in paths:
            rest = path.name[len(head):]
            write_atomic(variants / f"{number}{rest}", path.read_bytes())
            if f"{VARIANTS}/{path.name}" in source_meta.variants:
                meta.variants.append(f"{VARIANTS}/{number}{rest}")
    return own


def _discard(store: BundleStore, bundle_id: str) -> None:
    """Remove a merged bundle folder: one rename to a hidden name (listings skip it at
    once), then the removal (a leftover is swept by the next run)."""
    trash = store.root / f".{bundle_id}{TRASH_SUFFIX}"
    shutil.rmtree(trash, ignore_errors=True)
    os.rename(store.path(bundle_id), trash)
    shutil.rmtree(trash)


def _sweep(store: BundleStore) -> None:
    """Remove merged folders an interrupted run renamed but did not delete."""
    for trash in store.root.glob(f".*{TRASH_SUFFIX}"):
        if trash.is_dir():
            shutil.rmtree(trash, ignore_errors=True)
