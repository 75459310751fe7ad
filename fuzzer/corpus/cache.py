"""Where fetched corpus models live: ``corpus/<source>`` in the optfuzz cache folder
(:func:`fuzzer.cache.cache_root`; ``$OPTFUZZ_CACHE_DIR`` moves it)."""

from __future__ import annotations

from pathlib import Path

from fuzzer.cache import cache_root


def corpus_dir(source: str) -> Path:
    """Cache folder of one corpus source, e.g. ``<cache>/corpus/pypi``."""
    return cache_root() / "corpus" / source
