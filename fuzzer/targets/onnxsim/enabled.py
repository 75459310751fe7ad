"""The configuration space of a rewriter with a fixed pipeline and an option to switch off
each rewrite (onnx-simplifier's ``skipped_optimizers`` and ``skip_*``, onnxslim's
``skip_fusion_patterns``, ``skip_optimizations`` and ``no_shape_infer``): a configuration is
``{"passes": [names] | None}``, the rewrites left enabled, None for all of them (what a user
gets without options). Localization's pass subsets are then sets of enabled rewrites; the
order of a list is the adapter's (enabling stages first), never the pipeline's, which the
rewriter fixes itself. Neither rewriter has a ``fixed_point`` switch: both iterate to their
own fixed point.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from fuzzer.targets.base import Target

#: What a campaign's configuration of each kind draws, with its weight.
KINDS: dict[str, int] = {"default": 2, "single": 3, "subset": 3, "without-one": 2}


class EnabledRewrites(Target):
    """A :class:`Target` configured by the rewrites it leaves enabled (module docstring).

    Subclasses implement :meth:`available_passes` (in the order pass lists keep),
    :meth:`droppable` and the target-specific rest, and set :attr:`enabler` and
    :attr:`donors`.
    """

    #: the stage most rewrites need before them (shape inference); a single-rewrite draw
    #: adds it half the time.
    enabler: str = ""
    #: rewrite -> names (any target's) whose motifs build what it rewrites.
    donors: Mapping[str, Sequence[str]] = {}

    def droppable(self) -> list[str]:
        """Rewrites a "without-one" configuration may leave out of the default run (the
        stages and steps a user switches off by name)."""
        raise NotImplementedError

    def default_passes(self) -> list[str]:
        return self.available_passes()

    def default_config(self) -> dict[str, Any]:
        return {"passes": None}

    def with_passes(self, config: dict[str, Any], passes: Sequence[str]) -> dict[str, Any]:
        """``config`` with exactly ``passes`` enabled, in :meth:`available_passes` order."""
        wanted = set(passes)
        return dict(config, passes=[p for p in self.available_passes() if p in wanted])

    def relaxations(self, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {}

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        """The default run, one rewrite (with :attr:`enabler` half the time), a random
        subset, or the default without one of :meth:`droppable`, drawn by :data:`KINDS`;
        ``passes`` narrows the pool."""
        pool = [p for p in self.available_passes() if passes is None or p in passes]
        kind = rng.choices(list(KINDS), list(KINDS.values()))[0]
        if kind == "default" or len(pool) == 1:
            return self.with_passes({}, pool) if passes else {"passes": None}
        if kind == "single":
            chosen = [rng.choice(pool), *([self.enabler] if rng.random() < 0.5 else [])]
        elif kind == "subset":
            chosen = rng.sample(pool, rng.randint(2, max(2, len(pool) // 2)))
        else:
            dropped = rng.choice(self.droppable())
            chosen = [p for p in pool if p != dropped]
        return self.with_passes({}, [p for p in chosen if p in pool])

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        """The enabled rewrites' own names (the motif families name them), then the names
        whose motifs build what they rewrite (:attr:`donors`); no name twice."""
        enabled = self.passes_of(config)
        hints = [*enabled, *(d for name in enabled for d in self.donors.get(name, ()))]
        return list(dict.fromkeys(hints))
