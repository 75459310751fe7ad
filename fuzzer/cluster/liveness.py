"""Which actors of a group are up: an actor whose call failed (its process or node died, or
Ray reports it unavailable while it restarts) gets no work until it answers a ping
(its ``pid`` method)."""

from __future__ import annotations

from typing import Any


class Liveness:
    """The down actors of ``actors`` (a list of Ray actor handles, by index).

    Attributes:
        deaths: failures seen (each marks an actor down once until it is back).
    """

    def __init__(self, ray: Any, actors: list[Any]) -> None:
        self.ray, self.actors = ray, actors
        self._pings: dict[int, Any] = {}
        self.deaths = 0

    def up(self, index: int) -> bool:
        """Whether actor ``index`` may get work."""
        return index not in self._pings

    def mark_down(self, index: int) -> None:
        """Actor ``index`` failed a call: no work for it until it answers again."""
        if index not in self._pings:
            self.deaths += 1
            self._pings[index] = self.actors[index].pid.remote()

    def refresh(self) -> None:
        """Take back the actors that answer again (without waiting)."""
        for index, ref in list(self._pings.items()):
            ready, _ = self.ray.wait([ref], timeout=0)
            if not ready:
                continue
            try:
                self.ray.get(ref)
                del self._pings[index]
            except self.ray.exceptions.RayError:  # still down: ask again
                self._pings[index] = self.actors[index].pid.remote()
