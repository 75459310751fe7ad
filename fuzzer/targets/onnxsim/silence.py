"""Silencing a rewriter that prints: onnxsim's C++ core writes to ``std::cout`` and its Python
side prints through ``rich``; onnxslim logs and onnx-graphsurgeon prints warnings. None of it
belongs in a campaign's live display."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Send what the block writes to file descriptors 1 and 2 (Python prints and a native
    library's own output alike) to ``os.devnull`` and disable ``logging``; everything is
    restored afterwards, also when the block raises. Python's buffers are flushed on both
    sides of the switch, so nothing written before leaks into the void or after."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])
        logging.disable(previous)
