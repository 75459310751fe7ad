"""Pending findings: findings of a new fault that a campaign could not reduce and key before
its end, kept in ``<out>/pending/<id>/`` to be handled later exactly as the campaign would
have (``optfuzz fuzz --resume`` or ``optfuzz triage --pending``).

A pending finding's folder holds the files a bundle has for the same things, written by the
same serializers: ``model.onnx`` (the model as found), ``optimized.onnx`` (where the target
returned one), ``inputs.npz`` (its feeds), ``expected.npz`` and ``actual.npz`` (the outputs,
where the run got that far), ``case.npz`` (only where the case itself carried feeds), and
``finding.json``: the case (target, configuration, provenance and the rest of its fields),
the run's findings (symptom, stage, message, detail; the primary one first) and facts, the
preliminary root-cause key where screening took one, the time it was found, why it is pending,
and the findings of its key that waited for it (message and first-wave signature each).

A folder is written whole into a temporary folder and renamed into place
(:func:`fuzzer.store.folder.write_folder`), so a killed process never leaves half of one;
listings skip the temporary names. Nothing here runs a model.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import shlex
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.execution.case import Artifacts, CaseResult, TestCase
from fuzzer.store.folder import dump_json, write_atomic, write_folder
from fuzzer.store.npz import npz_bytes, read_npz
from oracles.base import Finding

#: the subfolder of a campaign folder that holds its pending findings.
PENDING_DIR = "pending"
#: the record of one pending finding, beside its model and arrays.
FINDING_FILE = "finding.json"
SCHEMA = 1  # of finding.json
#: artifact -> file name (the names a bundle gives the same data).
MODEL, OPTIMIZED, INPUTS, EXPECTED, ACTUAL = (
    "model.onnx", "optimized.onnx", "inputs.npz", "expected.npz", "actual.npz")
CASE_FEEDS = "case.npz"  # the case's own feeds, where it carried them
#: TestCase fields kept as files, not in finding.json.
_CASE_BYTES = ("model_bytes", "feeds")
#: CaseResult fields finding.json keeps (findings and artifacts apart; edges are not kept:
#: no handling reads them).
_RESULT_FIELDS = ("unusable", "stage", "source", "nodes", "changed", "timings", "documented")


def finish_command(folder: str | Path) -> str:
    """The command that finishes the pending findings of campaign folder ``folder``."""
    return f"optfuzz triage --pending {shlex.quote(str(folder))}"


class PendingError(ValueError):
    """A pending finding that cannot be read (a missing or damaged file); the message is
    the reason, without the folder's path."""


@dataclass
class PendingFinding:
    """One finding kept for later handling.

    Attributes:
        case: the case as the campaign ran it.
        result: its run: findings (the primary one first) and artifacts.
        found: when the campaign got the result (ISO 8601 UTC).
        reason: why it was kept instead of handled.
        prelim: its preliminary root-cause key, where screening took one (None: not screened).
        waiting: ``(message, first-wave signature)`` of each later finding with the same
            preliminary key that waited for this one and ends as it does.
        id: its folder name (set by :meth:`PendingStore.add` and :meth:`PendingStore.read`).
    """

    case: TestCase
    result: CaseResult
    found: str
    reason: str = ""
    prelim: str | None = None
    waiting: list[tuple[str, str]] = field(default_factory=list)
    id: str = ""

    @property
    def finding(self) -> Finding:
        """The primary finding."""
        return self.result.findings[0]

    def files(self) -> dict[str, bytes]:
        """Every file of its folder (name -> bytes).

        Raises:
            ValueError: the result has no finding or no artifacts.
        """
        arts = self.result.artifacts
        if arts is None or not self.result.findings:
            raise ValueError("a pending finding needs a finding with artifacts")
        files = {MODEL: arts.model, INPUTS: npz_bytes(arts.feeds)}
        for name, value in ((OPTIMIZED, arts.optimized), (EXPECTED, arts.expected),
                            (ACTUAL, arts.actual), (CASE_FEEDS, self.case.feeds)):
            if value is not None:
                files[name] = value if isinstance(value, bytes) else npz_bytes(value)
        case = {f.name: getattr(self.case, f.name) for f in dataclasses.fields(TestCase)
                if f.name not in _CASE_BYTES}
        case["carries_model"] = self.case.model_bytes is not None
        record = {
            "schema": SCHEMA, "id": self.id, "found": self.found, "reason": self.reason,
            "prelim": self.prelim,
            "waiting": _waiting_json(self.waiting),
            "findings": [f.to_json() for f in self.result.findings],
            "case": case,
            "result": {name: getattr(self.result, name) for name in _RESULT_FIELDS},
        }
        files[FINDING_FILE] = dump_json(record)
        return files


class PendingStore:
    """The pending findings of the campaign folder ``root`` (``root/pending/``, made on the
    first :meth:`add`)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.folder = self.root / PENDING_DIR

    def ids(self) -> list[str]:
        """Ids of the pending findings, oldest first (temporary folders of a write under
        way or killed are skipped)."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir()
                      if p.is_dir() and not p.name.startswith("."))

    def symptom(self, pending_id: str) -> str:
        """The symptom of pending finding ``pending_id``'s primary finding, as its id names
        it (``<found>-<symptom>-<token>``, :meth:`add`); ``""`` for an id not of that form."""
        parts = pending_id.split("-", 1)
        return parts[1].rsplit("-", 1)[0] if len(parts) == 2 and "-" in parts[1] else ""

    def count(self) -> int:
        """How many pending findings there are."""
        return len(self.ids())

    def path(self, pending_id: str) -> Path:
        """The folder of a pending finding."""
        return self.folder / pending_id

    def add(self, pending: PendingFinding) -> str:
        """Write ``pending`` as a new folder, atomically, and return its id
        (``<found time>-<symptom>-<8 random hex digits>``, so ids sort by the time found);
        sets ``pending.id``.

        Raises:
            OSError: a file cannot be written (e.g. the disk is full): nothing is left.
            ValueError: the result has no finding or no artifacts.
        """
        stamp = pending.found.replace("-", "").replace(":", "")
        symptom = pending.result.findings[0].symptom if pending.result.findings else "none"
        pending.id = f"{stamp}-{symptom}-{secrets.token_hex(4)}"
        files = pending.files()
        self.folder.mkdir(parents=True, exist_ok=True)
        write_folder(self.path(pending.id), files)
        return pending.id

    def read(self, pending_id: str) -> PendingFinding:
        """The pending finding of folder ``pending_id``.

        Raises:
            PendingError: a file is missing, unreadable or damaged (the message says which
                and why, in one line).
        """
        folder = self.path(pending_id)
        try:
            record = json.loads((folder / FINDING_FILE).read_bytes())
            return _parse(record, folder, pending_id)
        except FileNotFoundError as exc:
            raise PendingError(f"missing {Path(str(exc.filename)).name}") from None
        except OSError as exc:
            raise PendingError(f"unreadable ({exc.strerror or exc})") from None
        except (ValueError, KeyError, TypeError, AttributeError, IndexError,
                zipfile.BadZipFile) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise PendingError(f"damaged ({reason})") from None

    def add_waiting(self, pending_id: str, waiting: list[tuple[str, str]]) -> None:
        """Add findings that wait for the pending finding ``pending_id`` (``(message,
        first-wave signature)`` each; they will end as it does): its finding.json is
        rewritten atomically.

        Raises:
            PendingError: its finding.json cannot be read.
            OSError: it cannot be written.
        """
        path = self.path(pending_id) / FINDING_FILE
        try:
            record = json.loads(path.read_bytes())
            record["waiting"] = [*record["waiting"], *_waiting_json(waiting)]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PendingError(f"{FINDING_FILE} unreadable ({exc})") from None
        write_atomic(path, dump_json(record))

    def remove(self, pending_id: str) -> None:
        """Delete a pending finding's folder (its outcome is stored); nothing where it is
        gone already.

        Raises:
            OSError: it cannot be deleted.
        """
        if self.path(pending_id).is_dir():
            shutil.rmtree(self.path(pending_id))


def _waiting_json(waiting: list[tuple[str, str]]) -> list[dict[str, str]]:
    """finding.json's ``waiting``: ``{"message", "signature"}`` per waiting finding."""
    return [{"message": message, "signature": signature} for message, signature in waiting]


def _parse(record: Any, folder: Path, pending_id: str) -> PendingFinding:
    """The :class:`PendingFinding` of a parsed finding.json in ``folder``.

    Raises:
        ValueError, KeyError, TypeError: the record or an npz file is damaged.
        OSError: a file is missing or unreadable.
    """
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise ValueError(f"{FINDING_FILE}: not a pending finding of schema {SCHEMA}")
    findings = [Finding.from_json(f) for f in record["findings"]]
    if not findings:
        raise ValueError(f"{FINDING_FILE}: no finding")
    case_fields = dict(record["case"])
    carries_model = bool(case_fields.pop("carries_model", False))
    model = (folder / MODEL).read_bytes()
    feeds_path = folder / CASE_FEEDS
    case = TestCase(**case_fields, model_bytes=model if carries_model else None,
                    feeds=read_npz(feeds_path) if feeds_path.is_file() else None)
    if not isinstance(case.target, str) or not isinstance(case.config, dict):
        raise ValueError(f"{FINDING_FILE}: case without a target and configuration")
    arrays = {name: read_npz(folder / name) if (folder / name).is_file() else None
              for name in (EXPECTED, ACTUAL)}
    optimized = folder / OPTIMIZED
    artifacts = Artifacts(model, optimized.read_bytes() if optimized.is_file() else None,
                          read_npz(folder / INPUTS), arrays[EXPECTED], arrays[ACTUAL])
    facts = dict(record["result"])
    facts["nodes"] = tuple(facts.get("nodes") or (None, None))
    result = CaseResult(findings, **facts, artifacts=artifacts)
    waiting = [(str(w["message"]), str(w["signature"])) for w in record.get("waiting", [])]
    prelim = record.get("prelim")
    return PendingFinding(case, result, str(record["found"]), str(record.get("reason", "")),
                          prelim if isinstance(prelim, str) else None, waiting, pending_id)
