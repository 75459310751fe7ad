"""What the checks against other builds write into a bundle's meta.json.

``upstream`` (``optfuzz replay --against``) keeps one record per SPEC, the newest replacing
the older one::

    "upstream": [{"spec": "onnxslim==0.1.80", "version": "0.1.80", "status": "fixed",
                  "time": "2026-11-21T10:00:00Z", "message": null, "observed": null}]

``regression`` (``optfuzz bisect``) is the latest search's
:meth:`fuzzer.upstream.bisect.Regression.to_json`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fuzzer.store.folder import BundleStore
from fuzzer.store.meta import BundleMeta
from fuzzer.store.versions import utc_now
from fuzzer.upstream.bisect import Regression
from fuzzer.upstream.verdict import Verdict


def upstream_record(spec: str, verdict: Verdict, time: str | None = None) -> dict[str, Any]:
    """The ``upstream`` record of ``verdict`` against ``spec`` at ``time`` (now)."""
    return {"spec": spec, "version": verdict.version, "status": verdict.status,
            "time": time or utc_now(), "message": verdict.message,
            "observed": verdict.observed}


def record_upstream(store: BundleStore, bundle_id: str, spec: str, verdict: Verdict) -> None:
    """Put ``verdict`` against ``spec`` into the bundle's ``upstream`` list in place of the
    spec's older record; a bundle whose meta.json became unreadable is left alone."""
    record = upstream_record(spec, verdict)

    def change(meta: BundleMeta) -> None:
        meta.upstream = [r for r in meta.upstream or [] if r.get("spec") != spec] + [record]

    with contextlib.suppress(OSError, ValueError):
        store.update(bundle_id, change)


def record_regression(store: BundleStore, bundle_id: str, regression: Regression) -> None:
    """Write ``regression`` as the bundle's ``regression``; a bundle whose meta.json became
    unreadable is left alone."""
    data = regression.to_json(utc_now())

    def change(meta: BundleMeta) -> None:
        meta.regression = data

    with contextlib.suppress(OSError, ValueError):
        store.update(bundle_id, change)
