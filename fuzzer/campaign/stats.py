"""Campaign statistics: totals, unusable seeds by reason, findings by symptom, cases per pass
and per motif, and a timeline; saved as campaign.json for resume and reports."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.execution.case import CaseResult, TestCase
from fuzzer.store.folder import dump_json, write_atomic

CAMPAIGN_FILE = "campaign.json"
TIMELINE_EVERY = 10.0  # seconds between timeline points
#: timeline points kept: past it every second point goes (older time at a coarser step), so
#: campaign.json and summary.html stay small for a campaign of any length.
MAX_TIMELINE = 2000
#: distinct unusable-seed reasons counted by name; the rest are counted under OTHER_REASONS.
MAX_REASONS = 200
OTHER_REASONS = "(other reasons)"
#: what older campaigns appended to a documented behaviour's name for a finding that ended
#: as an earlier one of its key did: the same behaviour, under a second spelling.
_NOT_TRIED_AGAIN = re.compile(r"\s*\(not tried again: [^)]*\)$")


def documented_name(name: str) -> str:
    """The name a documented behaviour is counted under: ``name`` without the ``(not tried
    again: ...)`` note that campaigns before :attr:`fuzzer.handling.outcome.Handled.note`
    appended to it."""
    return _NOT_TRIED_AGAIN.sub("", name)


def cases_per_second(cases: int, seconds: float) -> float:
    """The one throughput figure of optfuzz (live screen, closing summary, campaign.log,
    summary.html): cases finished per second of the case loop, from its first case handed to
    a worker to the last one back (the findings handled after it do not count)."""
    return cases / seconds if seconds > 0 else 0.0


def rate_text(cases: int, seconds: float) -> str:
    """:func:`cases_per_second` as text, e.g. ``153.2``."""
    return f"{cases_per_second(cases, seconds):,.1f}"


def bundle_symptom(bundle_id: str) -> str:
    """The symptom a bundle was first seen with: its id without the hash."""
    return bundle_id.rsplit("-", 1)[0]


_ORT_PREFIX = re.compile(r"\[ONNXRuntimeError\] : \d+ : \w+ : ")


def reason_key(reason: str) -> str:
    """Group unusable-seed reasons: the stage, exception type and message with
    onnxruntime's status prefix and quoted names dropped and numbers replaced by N."""
    text = _ORT_PREFIX.sub("", reason.split("\n")[0])
    text = re.sub(r"'[^']*'", "''", text)
    return re.sub(r"\d+", "N", text)[:120]


def loop_seconds(data: dict[str, Any]) -> float:
    """Seconds the case loops of a campaign.json dict ``data`` took: its ``loop_s``; for a
    campaign.json written before it, its one run's loop (``last_run``), else its elapsed
    time."""
    if data.get("loop_s"):
        return float(data["loop_s"])
    last = data.get("last_run") or {}
    if last.get("seconds") and last.get("cases") == data.get("cases"):
        return float(last["seconds"])
    return float(data.get("elapsed_s") or 0.0)


@dataclass
class CampaignStats:
    """Counters of one campaign (resumable: ``elapsed_s`` and ``next_case`` carry over).

    ``last_run`` holds the cases of the latest run and the seconds its case loop took
    (without finishing queued findings and writing summary.html): its throughput.
    ``signatures`` holds a short hash of each distinct first-wave signature of the findings
    that were localized (:attr:`fuzzer.handling.outcome.Handled.signature`): how many
    buckets the first-wave key would have made of the same findings, beside the root causes
    (``bundles_new``). ``settings`` is the campaign's settings record
    (:meth:`fuzzer.campaign.settings.CampaignSettings.record`); None in a campaign.json
    written before it held one. ``cluster`` is a cluster campaign's record of its case
    ranges and nodes (:mod:`fuzzer.cluster.driver`); empty for a local campaign.
    ``failed_keys`` is the root-cause keys whose handling failed, with their backoff
    (:meth:`fuzzer.handling.outcome.RootCauseMemo.failures`), for the next run.
    ``pending`` is how many findings the latest end left in ``pending/``
    (:mod:`fuzzer.handling.pending`), ``pending_command`` the command that finishes them.
    ``provenance`` holds one record per run, first to latest
    (:func:`fuzzer.campaign.provenance.run_provenance`: start time, command line, host, OS
    and architecture, versions).
    ``bundles_by_symptom`` and ``hits_by_symptom`` count the new bundles and the hits on
    bundles by the bundle's symptom (:func:`bundle_symptom`); documented behaviour is
    counted apart (``documented``), under one name per behaviour (:func:`documented_name`).
    ``last_bundle_at`` is the campaign time (seconds) the newest bundle was written at.
    ``loop_s`` is the seconds of all runs' case loops (:func:`cases_per_second`);
    ``runs`` holds one record per run in campaign seconds: ``start``, ``finish`` (its
    time limit, or the end of its case loop where that came first), ``loop_end`` (its last
    case back), ``end`` (its findings handled and saved) and ``cases``.
    """

    seed: int
    target: str
    elapsed_s: float = 0.0
    next_case: int = 0
    corpus_next: int = 0
    cases: int = 0
    usable: int = 0
    unusable: int = 0
    unusable_reasons: Counter = field(default_factory=Counter)
    unusable_models: dict[str, str] = field(default_factory=dict)
    findings: Counter = field(default_factory=Counter)
    bundles_new: int = 0
    hits: int = 0
    per_pass: Counter = field(default_factory=Counter)
    per_motif: Counter = field(default_factory=Counter)
    findings_per_pass: Counter = field(default_factory=Counter)
    merged: int = 0
    documented: Counter = field(default_factory=Counter)
    guided: dict[str, int] = field(default_factory=dict)
    cluster: dict[str, Any] = field(default_factory=dict)
    dropped: Counter = field(default_factory=Counter)
    signatures: set[str] = field(default_factory=set)
    failed_keys: dict[str, Any] = field(default_factory=dict)
    pending: int = 0
    pending_command: str = ""
    newest: str = ""
    timeline: list[dict[str, Any]] = field(default_factory=list)
    last_run: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] | None = None
    provenance: list[dict[str, Any]] = field(default_factory=list)
    bundles_by_symptom: Counter = field(default_factory=Counter)
    hits_by_symptom: Counter = field(default_factory=Counter)
    last_bundle_at: float | None = None
    loop_s: float = 0.0
    runs: list[dict[str, Any]] = field(default_factory=list)
    avoided: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    _last_point: float = 0.0

    def elapsed(self) -> float:
        """Seconds of campaign time, including earlier runs of a resumed campaign."""
        return self.elapsed_s + time.monotonic() - self.started

    def add(self, case: TestCase, result: CaseResult) -> None:
        """Count one finished case."""
        self.cases += 1
        if result.unusable:
            self.unusable += 1
            reason = reason_key(result.unusable)
            if reason not in self.unusable_reasons and \
                    len(self.unusable_reasons) >= MAX_REASONS:
                reason = OTHER_REASONS
            self.unusable_reasons[reason] += 1
            if case.source.get("kind") == "corpus":
                self.unusable_models.setdefault(case.source.get("model", "?"), result.unusable)
            return
        self.usable += 1
        passes = case.config.get("passes") or []
        self.per_pass.update(passes)
        self.per_motif.update(result.source.get("motifs") or [])
        if result.findings:
            self.findings[result.findings[0].symptom] += 1
            self.findings_per_pass.update(passes)
        if result.documented:  # judged in the worker: counted, never queued
            self.documented[result.documented] += 1

    def handled(self, status: str, bundle_id: str | None, name: str, message: str,
                signature: str = "") -> None:
        """Count what became of a finding (:class:`fuzzer.handling.outcome.Handled`);
        ``signature`` is its first-wave signature ("" where it was not localized)."""
        if status == "pending":  # no outcome yet: counted once its handling ends
            return
        if signature:
            self.signatures.add(hashlib.sha256(signature.encode()).hexdigest()[:12])
        if status == "new":
            self.bundles_new += 1
            self.newest = f"{bundle_id}: {message[:80]}"
            self.bundles_by_symptom[bundle_symptom(bundle_id or "?")] += 1
            self.last_bundle_at = round(self.elapsed(), 1)
        elif status in ("hit", "merged"):
            self.hits += 1
            self.merged += status == "merged"
            self.hits_by_symptom[bundle_symptom(bundle_id or "?")] += 1
        elif status == "documented":
            self.documented[documented_name(name)] += 1
        else:
            self.dropped[status] += 1

    def since_last_bundle(self) -> float | None:
        """Seconds of campaign time since the newest bundle was written; None before the
        first."""
        return None if self.last_bundle_at is None else self.elapsed() - self.last_bundle_at

    def start_run(self) -> None:
        """Open the record of a run (:attr:`runs`) at the campaign time now."""
        self.runs.append({"start": round(self.elapsed(), 1)})

    def end_loop(self, cases: int, seconds: float, limit: float | None) -> None:
        """The run's case loop ended now, after ``seconds`` and ``cases`` cases, under a
        time limit of ``limit`` seconds (None: none): record it in :attr:`last_run`,
        :attr:`loop_s` and the run's record (its ``finish``: the time limit, or now where
        the loop ended first), with a timeline point."""
        now = self.elapsed()
        if not self.runs:
            self.runs.append({"start": round(now - seconds, 1)})
        finish = now - seconds + limit if limit is not None and limit < seconds else now
        self.runs[-1].update(finish=round(finish, 1), loop_end=round(now, 1), cases=cases)
        self.last_run = {"cases": cases, "seconds": round(seconds, 3)}
        self.loop_s += seconds
        self.tick(force=True)

    def end_run(self) -> None:
        """The run's findings are handled: its record's ``end`` is the campaign time now."""
        if self.runs:
            self.runs[-1]["end"] = round(self.elapsed(), 1)

    def tick(self, force: bool = False) -> None:
        """Append a timeline point every TIMELINE_EVERY seconds; past :data:`MAX_TIMELINE`
        points, keep every second one (the newest always)."""
        now = self.elapsed()
        if force or now - self._last_point >= TIMELINE_EVERY:
            self._last_point = now
            point = {"t": round(now, 1), "cases": self.cases,
                     "findings": sum(self.findings.values()), "bundles": self.bundles_new,
                     "signatures": len(self.signatures)}
            if self.timeline and self.timeline[-1] == point:
                return  # a forced point at the moment of the last one
            self.timeline.append(point)
            if len(self.timeline) > MAX_TIMELINE:
                self.timeline = self.timeline[-1::-2][::-1]

    def to_json(self) -> dict[str, Any]:
        """JSON-able state (campaign.json)."""
        return {
            "seed": self.seed, "target": self.target, "elapsed_s": round(self.elapsed(), 3),
            "next_case": self.next_case, "corpus_next": self.corpus_next, "cases": self.cases,
            "usable": self.usable,
            "unusable": self.unusable, "unusable_reasons": dict(self.unusable_reasons),
            "unusable_models": self.unusable_models, "findings": dict(self.findings),
            "bundles_new": self.bundles_new, "hits": self.hits, "merged": self.merged,
            "documented": dict(self.documented), "dropped": dict(self.dropped),
            "signatures": sorted(self.signatures), "per_pass": dict(self.per_pass),
            "per_motif": dict(self.per_motif),
            "findings_per_pass": dict(self.findings_per_pass), "timeline": self.timeline,
            "last_run": self.last_run, **({"settings": self.settings} if self.settings else {}),
            **({"provenance": self.provenance} if self.provenance else {}),
            **({"guided": self.guided} if self.guided else {}),
            **({"cluster": self.cluster} if self.cluster else {}),
            **({"failed_keys": self.failed_keys} if self.failed_keys else {}),
            **({"pending": {"findings": self.pending, "command": self.pending_command}}
               if self.pending else {}),
            "bundles_by_symptom": dict(self.bundles_by_symptom),
            "hits_by_symptom": dict(self.hits_by_symptom),
            "last_bundle_at": self.last_bundle_at, "loop_s": round(self.loop_s, 3),
            "runs": self.runs, **({"avoided": self.avoided} if self.avoided else {}),
        }

    def save(self, folder: Path) -> None:
        """Write campaign.json atomically into ``folder``.

        Raises:
            OSError: it cannot be written (the previous campaign.json stays as it was).
        """
        write_atomic(folder / CAMPAIGN_FILE, dump_json(self.to_json()))

    @classmethod
    def load(cls, folder: Path) -> CampaignStats | None:
        """The saved state of a campaign in ``folder``, or None when there is no campaign.json.

        Raises:
            OSError: it cannot be read.
            ValueError: it is not the JSON of a campaign (the message says what is wrong).
        """
        path = folder / CAMPAIGN_FILE
        if not path.is_file():
            return None
        return cls.from_json(json.loads(path.read_text()))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CampaignStats:
        """The state saved as ``data`` (a parsed campaign.json).

        Raises:
            ValueError: a required field is missing or of the wrong type.
        """
        try:
            return cls._from_json(data)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a campaign record ({type(exc).__name__}: {exc})") from None

    @classmethod
    def _from_json(cls, data: dict[str, Any]) -> CampaignStats:
        stats = cls(seed=data["seed"], target=data["target"], elapsed_s=data["elapsed_s"],
                    next_case=data["next_case"], corpus_next=data.get("corpus_next", 0),
                    cases=data["cases"], usable=data["usable"],
                    unusable=data["unusable"], bundles_new=data["bundles_new"],
                    hits=data["hits"], timeline=data.get("timeline", []),
                    merged=data.get("merged", 0))
        for name, count in (data.get("documented") or {}).items():
            stats.documented[documented_name(name)] += count
        stats.bundles_by_symptom.update(data.get("bundles_by_symptom") or {})
        stats.hits_by_symptom.update(data.get("hits_by_symptom") or {})
        last = data.get("last_bundle_at")
        stats.last_bundle_at = float(last) if isinstance(last, int | float) else None
        stats.loop_s = float(data.get("loop_s") or loop_seconds(data))
        stats.runs = [r for r in data.get("runs") or [] if isinstance(r, dict)]
        stats.avoided = [r for r in data.get("avoided") or [] if isinstance(r, dict)]
        stats.guided = dict(data.get("guided", {}))
        stats.cluster = dict(data.get("cluster", {}))
        stats.failed_keys = dict(data.get("failed_keys", {}))
        pending = data.get("pending") or {}
        stats.pending = int(pending.get("findings", 0))
        stats.pending_command = str(pending.get("command", ""))
        stats.dropped.update(data.get("dropped", {}))
        stats.signatures.update(str(s) for s in data.get("signatures", []))
        stats.unusable_reasons.update(data.get("unusable_reasons", {}))
        stats.unusable_models.update(data.get("unusable_models", {}))
        stats.findings.update(data.get("findings", {}))
        stats.per_pass.update(data.get("per_pass", {}))
        stats.per_motif.update(data.get("per_motif", {}))
        stats.findings_per_pass.update(data.get("findings_per_pass", {}))
        settings = data.get("settings")
        stats.settings = settings if isinstance(settings, dict) else None
        stats.provenance = [r for r in data.get("provenance") or [] if isinstance(r, dict)]
        return stats
