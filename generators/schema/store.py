"""Pairwise plans kept on disk: building one motif's plan (all-pairs generation and the
checks of every candidate row) takes about half a second, and every worker process of a
campaign would build the plans of the motifs it draws again, each time a worker is replaced.

A plan is a pure function of the generator's own source, onnx's operator schemas,
onnxruntime's kernel registry and allpairspy, so the folder of stored plans is named by a
digest of all of those (``<cache>/schema-plans/<digest>/<motif>.pickle``, the cache being
``$OPTFUZZ_CACHE_DIR`` or the user cache folder as for the rest of optfuzz): any change
makes a new folder. A plan is written to a temporary file and renamed into place, so two
workers building the same plan at once never leave half a file; a file that cannot be read
is built again.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import platformdirs

#: the variable that moves optfuzz's cache folder.
CACHE_ENV = "OPTFUZZ_CACHE_DIR"
#: distributions whose versions decide a plan.
DEPENDENCIES = ("onnx", "onnxruntime", "allpairspy")


@cache
def plans_folder() -> Path:
    """This build's folder of stored plans (see the module docstring)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    for name in DEPENDENCIES:
        try:
            digest.update(f"{name}=={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} missing".encode())
    override = os.environ.get(CACHE_ENV)
    if override:
        base = Path(override).expanduser()
    else:
        base = Path(platformdirs.user_cache_dir("optfuzz"))
    return base / "schema-plans" / digest.hexdigest()[:20]


def load_plan(motif: str) -> Any | None:
    """The stored plan of ``motif``, or None (not stored yet, or unreadable)."""
    try:
        return pickle.loads((plans_folder() / f"{motif}.pickle").read_bytes())
    except Exception:  # missing, half-written by an older version, or unpicklable: rebuild
        return None


def store_plan(motif: str, plan: Any) -> None:
    """Keep ``plan`` for ``motif``; a folder that cannot be written keeps nothing."""
    folder = plans_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{motif}.", delete=False) as out:
            out.write(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(out.name, folder / f"{motif}.pickle")
    except OSError:
        return
