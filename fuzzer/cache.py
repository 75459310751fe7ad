"""The optfuzz cache folder, a per-user folder (platformdirs) that holds what optfuzz fetches
or builds once and reuses: corpus models (``corpus/``), instrumented builds (``builds/``) and
environments of other target versions (``envs/``).

``$OPTFUZZ_CACHE_DIR`` overrides the location (e.g. a shared disk, or a test's tmp folder).
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable that overrides :func:`cache_root`.
CACHE_ENV = "OPTFUZZ_CACHE_DIR"


def cache_root() -> Path:
    """The optfuzz cache folder: ``$OPTFUZZ_CACHE_DIR`` or platformdirs' user cache dir."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("optfuzz"))
