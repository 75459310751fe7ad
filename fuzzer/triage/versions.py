"""The versions a bundle is judged against: the installed target and runtime packages.

A bundle's status ("fixed", "still fails") only holds for a set of versions; this module
names that set, so that triage and replay compare like with like.
"""

from __future__ import annotations

from typing import Any

from fuzzer.store.meta import BundleMeta
from fuzzer.store.versions import environment_versions

#: packages whose version decides whether a recorded replay still applies.
RELEVANT = ("onnx", "onnxruntime")


def installed_versions(target_name: str) -> dict[str, str]:
    """``{"target": "<name> <version>", "onnx": ..., "onnxruntime": ..., "numpy": ...,
    "python": ..., "optfuzz": ...}`` for the target called ``target_name`` as installed now
    (optfuzz's own version too: its oracles decide what counts as fixed).

    Imports the target's package (to ask its version) but never runs the optimizer.

    Raises:
        KeyError: unknown target name.
    """
    from fuzzer import __version__
    from fuzzer.targets import get_target

    target = get_target(target_name)
    return {"target": f"{target.name} {target.version()}", **environment_versions(),
            "optfuzz": __version__}


def found_versions(meta: BundleMeta) -> dict[str, Any]:
    """The versions a bundle was found with, in the same layout as
    :func:`installed_versions`."""
    return meta.found_versions()


def same_versions(a: dict[str, str], b: dict[str, str]) -> bool:
    """Whether two version sets agree on the target and every :data:`RELEVANT` package."""
    return all(a.get(k) == b.get(k) for k in ("target", *RELEVANT))
