"""Where, when and with what a campaign ran: one record per run (the first, then each
``--resume``), kept in campaign.json under ``provenance`` and shown in summary.html, so a
bundle's reader can tell which optfuzz, target and runtime versions found it, on which
machine, from which command line.
"""

from __future__ import annotations

import platform
import socket
import sys
from typing import Any

from fuzzer.store.versions import software_versions, utc_now

#: run records campaign.json keeps: the first run and the latest ones.
MAX_RUNS = 50


def run_provenance(target: str, target_version: str,
                   argv: list[str] | None = None) -> dict[str, Any]:
    """The record of a run starting now: ``started`` (UTC, ISO 8601), ``command`` (the
    command line, ``sys.argv`` by default), ``host``, ``os``, ``machine`` (the
    architecture), ``target`` and ``versions``
    (:func:`fuzzer.store.versions.software_versions`: optfuzz, the target, onnx,
    onnxruntime, numpy, Python)."""
    return {
        "started": utc_now(), "command": list(sys.argv if argv is None else argv),
        "host": socket.gethostname(), "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(), "target": target,
        "versions": software_versions(target_version),
    }


def add_run(runs: list[dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """``runs`` with ``record`` appended, the first and the latest :data:`MAX_RUNS` - 1 kept
    (a campaign resumed without end keeps a bounded campaign.json)."""
    runs = [*runs, record]
    return runs if len(runs) <= MAX_RUNS else [runs[0], *runs[-(MAX_RUNS - 1):]]
