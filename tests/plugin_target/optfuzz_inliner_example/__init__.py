"""An optfuzz target defined outside optfuzz: onnx's own function inliner
(``onnx.inliner.inline_local_functions``), registered through the ``optfuzz.targets``
entry-point group, and its motif family (``motifs/``), registered through the ``optfuzz.motifs``
group (see pyproject.toml). docs/targets/writing.md shows this class."""

from __future__ import annotations

import random
from typing import Any

from fuzzer.targets.base import Target


class InlinerTarget(Target):
    """onnx's function inliner: one pass, ``inline_local_functions``."""

    name = "onnx-inliner"

    def version(self) -> str:
        import onnx

        return onnx.__version__

    def available_passes(self) -> list[str]:
        return ["inline_local_functions"]

    def default_passes(self) -> list[str]:
        return ["inline_local_functions"]

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        return {"passes": list(passes or self.default_passes()), "fixed_point": False}

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        import onnx.inliner

        if "inline_local_functions" not in self.passes_of(config):
            return model
        return onnx.inliner.inline_local_functions(model)

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        # this package's own family (motifs/), then the generator's model-local functions
        return ["inline_local_functions", "InlinePass"]

    def repro_snippet(self, config: dict[str, Any]) -> str:
        if "inline_local_functions" not in self.passes_of(config):
            return "optimized = model\n"
        return ("import onnx.inliner\n"
                "optimized = onnx.inliner.inline_local_functions(model)\n")
