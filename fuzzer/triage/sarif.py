"""SARIF 2.1.0 of a triage (``optfuzz triage FOLDER --sarif FILE``), for code-scanning
dashboards and CI annotations.

One rule per target and symptom (``optfuzz/<target>/<symptom>``: stable across campaigns),
one result per bundle: its message the title of the bundle's report.md (else the symptom and
the first line of the finding's message), its location the bundle's model.onnx (a relative
URI where FOLDER was given relative, i.e. relative to the directory optfuzz ran in; a
``file://`` URI where it was absolute), ``partialFingerprints`` its root-cause key (the bundle
id for a bundle written before root-cause keys), its level from the symptom's severity class.
Bundles marked duplicate or invalid carry an accepted external suppression with the state's
words. Written as plain JSON; tests check it against the OASIS schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fuzzer.store.bundle_state import DISMISSED
from fuzzer.triage.rows import TriageRow

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                "sarif-schema-2.1.0.json")
#: severity class -> SARIF level (unlisted: ``error``).
LEVELS = {"size": "warning", "interface": "warning", "unknown": "warning"}
#: partialFingerprints key of the root-cause key, and of the bundle id where there is none.
ROOT_CAUSE_FINGERPRINT = "optfuzzRootCause/v1"
BUNDLE_FINGERPRINT = "optfuzzBundle/v1"
REPORT_FILE = "report.md"


def rule_id(row: TriageRow) -> str:
    """``optfuzz/<target>/<symptom>``: the rule of ``row``'s bundle."""
    return f"optfuzz/{row.target}/{row.symptom}"


def _rule(row: TriageRow) -> dict[str, Any]:
    """The reportingDescriptor of ``row``'s rule: what the symptom means, from its oracle
    record (its name alone for a symptom no oracle registers)."""
    from oracles import symptom as symptom_record

    try:
        record = symptom_record(row.symptom)
        short, full = f"{row.target}: a pass {record.title}", record.expected
    except KeyError:
        short, full = f"{row.target}: {row.symptom}", f"{row.symptom} (no oracle registers it)"
    return {"id": rule_id(row), "name": row.symptom,
            "shortDescription": {"text": short}, "fullDescription": {"text": full},
            "defaultConfiguration": {"level": LEVELS.get(row.severity_class, "error")},
            "properties": {"target": row.target, "symptom": row.symptom,
                           "severityClass": row.severity_class}}


def result_message(folder: Path, row: TriageRow) -> str:
    """The title of the bundle's report.md (its first line, without the heading mark);
    where there is none, ``<symptom>: <first line of the finding's message>``."""
    try:
        with open(folder / REPORT_FILE, encoding="utf-8", errors="replace") as handle:
            title = handle.readline().lstrip("#").strip()
    except OSError:
        title = ""
    return title or f"{row.symptom}: {(row.message.strip().splitlines() or [''])[0]}"


def artifact_uri(path: Path) -> str:
    """``path`` as a SARIF artifact URI: ``file://`` for an absolute path, else the
    percent-encoded relative path."""
    return path.as_uri() if path.is_absolute() else quote(path.as_posix())


def _result(root: Path, row: TriageRow, index: int) -> dict[str, Any]:
    """The result of one bundle; ``index`` is its rule's place in the rules list."""
    folder = root / row.id
    fingerprint = ({ROOT_CAUSE_FINGERPRINT: row.root_cause} if row.root_cause
                   else {BUNDLE_FINGERPRINT: row.id})
    result: dict[str, Any] = {
        "ruleId": rule_id(row), "ruleIndex": index,
        "level": LEVELS.get(row.severity_class, "error"),
        "message": {"text": result_message(folder, row)},
        "locations": [{"physicalLocation": {"artifactLocation": {
            "uri": artifact_uri(folder / "model.onnx")}}}],
        "partialFingerprints": fingerprint,
        "properties": {"bundle": row.id, "state": row.state, "stateText": row.state_text,
                       "status": row.status, "hits": row.hits, "passes": row.passes,
                       "breakingPass": row.breaking_pass, "firstSeen": row.first_seen,
                       "lastSeen": row.last_seen},
    }
    if row.state in DISMISSED:
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": row.state_text}]
    return result


def sarif_log(root: Path, rows: list[TriageRow]) -> dict[str, Any]:
    """The SARIF 2.1.0 log of the bundles ``rows`` of folder ``root``: one run of optfuzz,
    its rules in order of first use, one result per row in the rows' order."""
    from fuzzer import __version__

    rules: dict[str, dict[str, Any]] = {}
    for row in rows:
        rules.setdefault(rule_id(row), _rule(row))
    order = list(rules)
    results = [_result(root, row, order.index(rule_id(row))) for row in rows]
    driver = {"name": "optfuzz", "version": __version__, "rules": list(rules.values())}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION,
            "runs": [{"tool": {"driver": driver}, "results": results}]}


def write_sarif(path: Path, root: Path, rows: list[TriageRow]) -> None:
    """Write :func:`sarif_log` of ``rows`` to ``path``.

    Raises:
        OSError: the file cannot be written.
    """
    path.write_text(json.dumps(sarif_log(root, rows), indent=2) + "\n", encoding="utf-8")
