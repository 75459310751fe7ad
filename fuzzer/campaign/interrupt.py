"""Ctrl-C as a request the case loop reads at a safe point, not an exception raised anywhere.

Python raises KeyboardInterrupt in the main thread between any two bytecodes: in the middle
of a pebble ``schedule`` (a task half-written to its pipe), between a semaphore's acquire
and the ``try`` that releases it. A campaign stopped there can wait forever for a worker that
never got its task. So while the case loop runs, SIGINT only sets a flag
(:attr:`StopRequest.requested`); the loop polls it between two cases and leaves as if
interrupted. Once the loop has ended (findings being finished), a press raises
KeyboardInterrupt as usual: that phase waits in thread joins, where it is safe, and a press
there abandons the queued findings. AFL++ stops its main loop the same way (``stop_soon``).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any


class StopRequest:
    """SIGINT handling for one campaign run, as a context manager.

    Attributes:
        requested: Ctrl-C was pressed while the case loop ran.
        raising: a press raises KeyboardInterrupt at once (set once the loop has ended).

    Installed only from the main thread (signal handlers can only be set there); elsewhere
    it does nothing and Ctrl-C keeps Python's default behaviour.
    """

    def __init__(self) -> None:
        self.requested = False
        self.raising = False
        self._previous: Any = None
        self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.raising:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def check(self) -> None:
        """Raise KeyboardInterrupt here, at a safe point, if Ctrl-C was pressed.

        Raises:
            KeyboardInterrupt: a press is pending.
        """
        if self.requested:
            raise KeyboardInterrupt
