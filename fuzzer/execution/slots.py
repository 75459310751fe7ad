"""The stage slots a sandbox shares with its workers (a ``multiprocessing`` array of signed
bytes, one slot per case handed to a worker): a worker writes into a case's slot the index in
:data:`oracles.base.STAGES` of each stage the case enters, so that the sandbox knows where a
case was when its worker died or outlived its timeout. Two values beyond the stages mark a
case of a batch that is not running. :class:`StageSlots` hands the slots out.
"""

from __future__ import annotations

import threading
from typing import Any

from oracles.base import STAGES

#: the slot of a batch's case that has not started, and of one that has ended (its result
#: travels with the batch's); a case running holds its index in STAGES.
PENDING, ENDED = -1, -2


class StageSlots:
    """The free and taken slots of a shared stage array (``stages``: a ``multiprocessing``
    array of signed bytes, one slot per case handed to a worker). Thread-safe."""

    def __init__(self, stages: Any) -> None:
        self.stages = stages
        self._free = list(range(len(stages)))
        self._lock = threading.Lock()
        self._available = threading.Semaphore(len(stages))

    def take(self, count: int, stage: int) -> list[int]:
        """``count`` free slots, each set to ``stage`` (an index in :data:`STAGES`, or
        :data:`PENDING`); blocks while none is free."""
        for _ in range(count):
            self._available.acquire()
        with self._lock:
            slots = [self._free.pop() for _ in range(count)]
        for slot in slots:
            self.stages[slot] = stage
        return slots

    def release(self, slots: list[int]) -> None:
        """Give back ``slots`` (taken by :meth:`take`)."""
        with self._lock:
            self._free.extend(slots)
        for _ in slots:
            self._available.release()

    def stage(self, slot: int) -> int:
        """The code in ``slot`` now: an index in :data:`STAGES`, :data:`PENDING` or
        :data:`ENDED`."""
        return self.stages[slot]

    def busy(self) -> list[str]:
        """The stages (:data:`STAGES` names) of the taken slots whose case is running."""
        with self._lock:
            taken = [slot for slot in range(len(self.stages)) if slot not in self._free]
        codes = [self.stages[slot] for slot in taken]
        return [STAGES[code] for code in codes if 0 <= code < len(STAGES)]
