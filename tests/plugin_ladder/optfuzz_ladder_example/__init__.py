"""An optfuzz target defined outside optfuzz whose one pass, ``ladder``, is a plain Python
rewrite (:mod:`optfuzz_ladder_example.rewrite`) with a planted deep branch: it raises only on
a run of six Neg nodes, and each shorter run takes arcs of its own. Its code coverage is
coverage.py's arcs of that module (``code_coverage = "python"``), as for the Python
rewriters optfuzz ships (onnxslim, onnxscript, onnxruntime-transformers), so a guided
campaign on it shows that guidance climbs through coverage.py's arcs of a plugin's own code
(tests/test_guided_python.py)."""

from __future__ import annotations

import random
from typing import Any

from fuzzer.targets.base import Target

# imported with the target, before a coverage worker traces its first case: the module's
# own body is no case's edges
from optfuzz_ladder_example.rewrite import ladder


class LadderTarget(Target):
    """One pass, ``ladder`` (:func:`optfuzz_ladder_example.rewrite.ladder`).

    Its motif hints are its pass list (the default), as the ``fake`` target's are; here they
    draw this package's ``neg-run`` family (:mod:`optfuzz_ladder_example.motifs`): every
    generated model holds a short run of Neg nodes among a handful of random ops, and a
    guided campaign's mutations of a kept seed lengthen it.
    """

    name = "python-ladder"
    code_coverage = "python"
    coverage_modules = ("optfuzz_ladder_example.rewrite",)

    def version(self) -> str:
        return "0.1.0"

    def available_passes(self) -> list[str]:
        return ["ladder"]

    def default_passes(self) -> list[str]:
        return ["ladder"]

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        return {"passes": list(passes or self.default_passes()), "fixed_point": False}

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        return ladder(model) if "ladder" in self.passes_of(config) else model

    def repro_snippet(self, config: dict[str, Any]) -> str:
        if "ladder" not in self.passes_of(config):
            return "optimized = model\n"
        return ("from optfuzz_ladder_example.rewrite import ladder\n"
                "optimized = ladder(model)\n")
