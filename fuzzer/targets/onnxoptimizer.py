"""Target adapter for onnxoptimizer (https://github.com/onnx/optimizer)."""

from __future__ import annotations

import random
from typing import Any

#: Passes that need a special model layout or change the model's interface on purpose;
#: drawn by random subsets only when a user names them with --passes.
INTERFACE_PASSES = frozenset({
    "split_init", "split_predict", "rename_input_output", "set_unique_name_for_nodes",
    "rewrite_input_dtype", "adjust_add", "adjust_slice_and_matmul", "lift_lexical_references",
})


class OnnxOptimizerTarget:
    """onnxoptimizer: ``onnxoptimizer.optimize(model, passes, fixed_point)``.

    Configuration: ``{"passes": [pass names] , "fixed_point": bool}``. The campaign cycles
    through: the default list (``get_fuse_and_elimination_passes()``), each single pass, all
    available passes, and random subsets in random order; each with and without fixed_point.
    """

    name = "onnxoptimizer"

    def __init__(self) -> None:
        import onnxoptimizer

        self._mod = onnxoptimizer
        self._cycle: list[str] = []

    def version(self) -> str:
        return getattr(self._mod, "__version__", "unknown")

    def available_passes(self) -> list[str]:
        return list(self._mod.get_available_passes())

    def default_passes(self) -> list[str]:
        return list(self._mod.get_fuse_and_elimination_passes())

    def default_config(self) -> dict[str, Any]:
        return {"passes": self.default_passes(), "fixed_point": False}

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        passes = config.get("passes")
        if passes is None:
            passes = self.default_passes()
        return self._mod.optimize(model, list(passes), bool(config.get("fixed_point", False)))

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        pool = list(passes) if passes else [
            p for p in self.available_passes() if p not in INTERFACE_PASSES]
        default = [p for p in self.default_passes() if p in pool] if passes is None else pool
        if not self._cycle:
            self._cycle = ["default", "single", "single", "single", "all", "subset", "subset"]
            rng.shuffle(self._cycle)
        kind = self._cycle.pop()
        if kind == "default":
            chosen = default
        elif kind == "single":
            chosen = [rng.choice(pool)]
        elif kind == "all":
            chosen = list(pool)
        else:
            chosen = rng.sample(pool, rng.randint(2, max(2, min(len(pool), 8))))
        return {"passes": chosen, "fixed_point": rng.random() < 0.5}

    def repro_snippet(self, config: dict[str, Any]) -> str:
        return (
            "import onnxoptimizer\n"
            f"PASSES = {list(config.get('passes') or self.default_passes())!r}\n"
            f"optimized = onnxoptimizer.optimize(model, PASSES, "
            f"fixed_point={bool(config.get('fixed_point', False))})\n"
        )
