"""``<DIR>/.triage.json``: what the previous ``optfuzz triage`` showed, so that the next one
can say what is new since.

Layout (schema 1)::

    {"schema": 1, "last_triage": "2026-11-21T10:00:00Z",
     "seen": {"<bundle id>": {"hits": 17, "triaged": "2026-11-21T10:00:00Z"}}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fuzzer.store.folder import BundleStore, dump_json, write_atomic
from fuzzer.store.versions import utc_now

STATE_FILE = ".triage.json"
SCHEMA = 1


def load_state(root: Path) -> dict[str, Any]:
    """The saved triage state of folder ``root``; an empty state when there is none or it
    is unreadable (a damaged state only makes every bundle look new)."""
    path = root / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return {"schema": SCHEMA, "last_triage": None, "seen": {}}
    data.setdefault("seen", {})
    data.setdefault("last_triage", None)
    return data


def mark_seen(store: BundleStore, hits: dict[str, int]) -> dict[str, Any]:
    """Record that the bundles in ``hits`` (id -> hit count) were shown now; other entries
    are kept. Read-modify-write under the store's lock; returns the new state."""
    now = utc_now()
    with store.locked():
        state = load_state(store.root)
        for bid, count in hits.items():
            state["seen"][bid] = {"hits": int(count), "triaged": now}
        state["schema"], state["last_triage"] = SCHEMA, now
        write_atomic(store.root / STATE_FILE, dump_json(state))
    return state
