"""Target adapter for onnxslim (``onnxslim.slim``, https://github.com/inisis/OnnxSlim).

A configuration is ``{"passes": [names] | None}``: the rewrites left enabled (None: all of
them, what ``onnxslim.slim(model)`` does). The names are onnxslim's own
(:mod:`fuzzer.targets.onnxslim.passes`): ``shape_infer``, the ``skip_optimizations`` keys
(``constant_folding``, ``dead_node_elimination``, ``subexpression_elimination``,
``weight_tying``) and every registered fusion pattern by its registered name
(``FusionConvBN``, ``EliminationSlice`` ...). ``optimize`` turns them into ``slim``'s own
options: the patterns not enabled go into ``skip_fusion_patterns``, the steps not enabled
into ``skip_optimizations`` (never ``graph_fusion``: with every pattern skipped it is
onnxslim's own onnx-graphsurgeon round trip, the empty pass list), ``no_shape_infer`` where
shape inference is not; ``model_check`` stays off (optfuzz compares
in onnxruntime at ``ORT_DISABLE_ALL`` as for every target); ``size_threshold`` is 1 MiB
(its default folds every constant: the onnx wheel's "light" models rebuild their weights with
ConstantOfShape, and folding hundreds of megabytes takes longer than a case's timeout; a
generated model's tensors stay far below it). So localization's subsets are
sets of enabled rewrites and a bundle names the breaking one in onnxslim's words ("with
``FusionGemm`` in ``skip_fusion_patterns`` the model runs"). ``slim`` loops to its own fixed
point; there is no ``fixed_point`` switch.

A configuration may also name ``"interface"``: ``slim``'s ``inputs``, ``input_shapes`` and
``outputs`` options restating what the model declares (:mod:`fuzzer.targets.onnxslim.interface`),
which rebuild the graph's interface before the rounds and leave what the model computes as
it was; a share of a campaign's configurations draws some of them. A smaller share sets
``"dtype": "fp32"``: ``slim(dtype="fp32")`` for a model without any float16 (a conversion
to float32 that must leave such a model as it was).

``slim`` removes the initializers from the graph inputs of the model it is given (``freeze``)
in place, so ``optimize`` hands it a copy; what it logs and prints is silenced.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Mapping
from typing import Any

from fuzzer.targets.base import DocumentedBehaviour
from fuzzer.targets.growth import Expansion, documented_growth
from fuzzer.targets.onnxsim.enabled import EnabledRewrites
from fuzzer.targets.onnxsim.silence import silenced
from fuzzer.targets.onnxsim.snippet import python_list
from fuzzer.targets.onnxslim import interface
from fuzzer.targets.onnxslim.passes import (
    ANCHORS,
    DONORS,
    ENABLING_STEPS,
    FOLDED_TENSOR_LIMIT,
    GRAPH_FUSION,
    SHAPE_INFER,
    UNREACHABLE,
)
from oracles import shows


def _inputs_only_removed(finding: Any, config: dict[str, Any]) -> bool:
    """A changed graph input list that is the original's with some inputs left out (the
    rest in their order, names and types kept)."""
    if not shows(finding, "metadata-change") or finding.message != "graph inputs changed":
        return False
    remaining = iter(tuple(v) for v in finding.detail.get("before", ()))
    return all(tuple(v) in remaining for v in finding.detail.get("after", ()))


#: Patterns whose source adds nodes in place of what they rewrite.
EXPANSIONS: dict[str, Expansion] = {
    # core/pattern/fusion/gemm.py, MatMulAddPatternMatcher.rewrite: for an input of rank > 2
    # it emits "<matmul>_pre_reshape" (to [-1, K]), the Gemm and "<matmul>_post_reshape".
    "FusionGemm": Expansion("MatMul", frozenset({"Reshape", "Gemm"})),
}


def _documented_expansion(finding: Any, config: dict[str, Any]) -> bool:
    return documented_growth(finding, config.get("passes") or (), EXPANSIONS)


#: what onnxslim documents about its own behaviour.
DOCUMENTED = (
    DocumentedBehaviour(
        "unused-graph-inputs-removed",
        "onnxslim/core/optimization/__init__.py, optimize_model: "
        "'graph.cleanup(remove_unused_graph_inputs=True)' after graph_fusion, "
        "dead_node_elimination and subexpression_elimination (onnx-graphsurgeon's "
        "Graph.cleanup: 'remove_unused_graph_inputs (bool): Whether to remove unused graph "
        "inputs'), so a graph input no node reads leaves the slimmed model",
        _inputs_only_removed),
    DocumentedBehaviour(
        "gemm-reshape-scaffolding",
        "onnxslim/core/pattern/fusion/gemm.py, MatMulAddPatternMatcher.rewrite: a MatMul + Add "
        "on an input of rank > 2 becomes '<name>_pre_reshape' (Reshape to [-1, K]), Gemm and "
        "'<name>_post_reshape' (Reshape back): one node more than it replaces",
        _documented_expansion),
)


#: onnxslim's copy of onnx-graphsurgeon's exporter, as a traceback's path ends.
EXPORTER_MODULE = "onnx_graphsurgeon/exporters/onnx_exporter.py"
#: a frame line of a Python traceback: ``File "<path>", line <n>, in <function>``.
_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')
#: the exporter's own defects: ``(exception class, start of its text) -> cause``, each a
#: failure to write content that is valid ONNX, so no pass that made the content is at
#: fault. Not here: ``ValueError: Could not infer attribute ... from empty iterator``, which
#: the exporter also raises for an empty ints attribute that a pass wrote wrongly (an empty
#: ``perm`` or ``pads``): there the pass's output is already wrong.
EXPORTER_DEFECTS: dict[tuple[str, str], str] = {
    ("TypeError", "Can not use raw_data to store string type"):
        "exporter stores a string tensor in raw_data",
    ("UnboundLocalError", ""): "exporter {function}: UnboundLocalError",
}


def exporter_defect(traceback: str, message: str) -> str | None:
    """The cause :data:`EXPORTER_DEFECTS` names for ``message`` (``"TypeError: ..."``)
    where the innermost frame of onnxslim's own code in ``traceback`` (a Python traceback's
    text) is a function of its exporter (:data:`EXPORTER_MODULE`); None otherwise (no
    traceback, the innermost onnxslim frame elsewhere, say the logger through which the
    exporter refuses a graph on purpose, or an exception not listed)."""
    frames = [(path.replace("\\", "/"), function) for path, function in _FRAME.findall(traceback)]
    own = [(path, function) for path, function in frames if "/onnxslim/" in path]
    if not own or not own[-1][0].endswith(EXPORTER_MODULE):
        return None
    kind, _, text = message.partition(": ")
    cause = next((c for (k, start), c in EXPORTER_DEFECTS.items()
                  if k == kind.strip() and text.startswith(start)), None)
    return cause.format(function=own[-1][1].strip("<>")) if cause is not None else None


class OnnxSlimTarget(EnabledRewrites):
    """onnxslim's ``slim`` (see the module docstring).

    Raises (at construction):
        ImportError: onnxslim is not installed.
    """

    name = "onnxslim"
    takes_sparse_constants = True
    repository = "inisis/OnnxSlim"
    package = "onnxslim"
    code_coverage = "python"
    #: its rewrites: the slim pipeline, the optimization steps, the fusion and elimination
    #: patterns and its symbolic shape inference (the ``shape_infer`` step)
    coverage_modules = ("onnxslim.core",)
    enabler = SHAPE_INFER
    donors = DONORS

    def __init__(self) -> None:
        import onnxslim
        from onnxslim.core.optimization import OptimizationSettings
        from onnxslim.core.pattern.registry import DEFAULT_FUSION_PATTERNS

        self._mod = onnxslim
        self._patterns = list(DEFAULT_FUSION_PATTERNS)
        self._steps = [k for k in OptimizationSettings.keys() if k != GRAPH_FUSION]

    def version(self) -> str:
        return getattr(self._mod, "__version__", "unknown")

    def fusion_patterns(self) -> list[str]:
        """The registered fusion patterns' names, in registration (matching) order."""
        return list(self._patterns)

    def available_passes(self) -> list[str]:
        first = [s for s in ENABLING_STEPS if s == SHAPE_INFER or s in self._steps]
        rest = [s for s in self._steps if s not in first]
        return [*first, *self._patterns, *rest]

    def slim_options(self, config: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of ``onnxslim.slim`` that run ``config``. ``graph_fusion``
        is never skipped: with every pattern in ``skip_fusion_patterns`` it is onnxslim's
        own round trip (onnx-graphsurgeon import, ``cleanup``, ``toposort``, export), which
        every other step also runs, so the empty pass list is that round trip alone."""
        enabled = set(self.passes_of(config))
        skipped = [k for k in self._steps if k not in enabled]
        return {"skip_fusion_patterns": [p for p in self._patterns if p not in enabled],
                "skip_optimizations": skipped,
                "no_shape_infer": SHAPE_INFER not in enabled,
                "size_threshold": FOLDED_TENSOR_LIMIT}

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        """:meth:`EnabledRewrites.configurations`, and in a share
        (:data:`~fuzzer.targets.onnxslim.interface.RESTATE_SHARE`) of them one to three of
        ``slim``'s interface options restated (``"interface"``)."""
        config = super().configurations(rng, passes)
        if rng.random() < interface.RESTATE_SHARE:
            parts = rng.sample(interface.OPTIONS, rng.randint(1, len(interface.OPTIONS)))
            config[interface.INTERFACE] = [p for p in interface.OPTIONS if p in parts]
        if rng.random() < interface.DTYPE_SHARE:
            config[interface.DTYPE] = "fp32"
        return config

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """Run ``onnxslim.slim`` on a copy of ``model`` with :meth:`slim_options`, the
        interface options ``config`` restates (:func:`interface.restated`) and, where it sets
        ``"dtype"`` and the model holds no float16, ``dtype="fp32"``.

        Raises:
            Exception: whatever ``slim`` raises.
        """
        options = {**self.slim_options(config),
                   **interface.restated(model, config.get(interface.INTERFACE) or [])}
        if config.get(interface.DTYPE) == "fp32" and not interface.holds_float16(model):
            options["dtype"] = "fp32"
        with silenced():
            return self._mod.slim(copy.deepcopy(model), **options)

    def config_phrase(self, config: dict[str, Any]) -> str:
        """``"with `inputs`, `outputs` restated"`` for a configuration that restates interface
        options, ``"with `dtype="fp32"`"`` for one that converts to float32, else ""."""
        parts = config.get(interface.INTERFACE) or []
        words = [f"with {', '.join(f'`{p}`' for p in parts)} restated"] if parts else []
        if config.get(interface.DTYPE):
            words.append(f'with `dtype="{config[interface.DTYPE]}"`')
        return " and ".join(words)

    def droppable(self) -> list[str]:
        """Shape inference and the ``skip_optimizations`` steps."""
        return [SHAPE_INFER, *self._steps]

    def anchors(self) -> Mapping[str, frozenset[str]]:
        return ANCHORS

    def unreachable(self) -> Mapping[str, str]:
        return dict(UNREACHABLE)

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def shared_cause(self, finding: Any) -> str | None:
        """``freeze-ir3-initializers`` for the checker's IR <= 3 rule that every initializer
        be a graph input: ``slim`` starts with ``freeze`` ("removing the initializers from
        the input graph", onnxslim/core/__init__.py) and keeps the IR version, so every IR 3
        model leaves invalid whatever rewrite ran.

        An exporter defect (:func:`exporter_defect`) for an exception that onnx-graphsurgeon's
        exporter raises on content that is valid ONNX: every round of ``slim`` ends in
        ``gs.export_onnx`` (core/optimization/__init__.py), so it fails alike whichever pass
        made the content (constant_folding folding a Cast to string, dead_node_elimination
        keeping a string initializer: both reach ``constant_to_onnx_tensor``, which stores
        strings in ``raw_data``): one fault, not one per pass."""
        if shows(finding, "invalid-model") and \
                "in initializer but not in graph input" in finding.message:
            return "freeze-ir3-initializers"
        if shows(finding, "optimizer-error"):
            return exporter_defect(str(finding.detail.get("traceback") or ""),
                                   finding.message)
        return None

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        """A slimmer: every run ends its rounds in onnx-graphsurgeon's ``cleanup`` (the
        fusion step, patterns or none), so dead nodes and unused initializers are gone by
        its design; constant-only work counts as left undone where constant folding ran."""
        return {"unused_initializers_are_bloat": True, "interface_may_change": False,
                "cleanup_ran": True,
                "constants_folded": "constant_folding" in self.passes_of(config)}

    def ablation_line(self, config: dict[str, Any], breaking: str, symptom: str) -> str:
        if breaking == SHAPE_INFER:
            switch = "`no_shape_infer=True`"
        elif breaking in self._patterns:
            switch = f"`{breaking}` also in `skip_fusion_patterns`"
        else:
            switch = f"`{breaking}` also in `skip_optimizations`"
        return f"With {switch} (every other option kept) the model shows no {symptom}."

    def repro_snippet(self, config: dict[str, Any]) -> str:
        options = self.slim_options(config)
        parts = config.get(interface.INTERFACE) or []
        return (
            "import copy\n"
            "import onnxslim\n"
            + python_list("SKIP_FUSION_PATTERNS", options["skip_fusion_patterns"])
            + python_list("SKIP_OPTIMIZATIONS", options["skip_optimizations"])
            + (interface.snippet(parts) if parts else "")
            + (interface.dtype_snippet() if config.get(interface.DTYPE) else "")
            + "optimized = onnxslim.slim(copy.deepcopy(model),  # slim edits its input\n"
            "                          skip_fusion_patterns=SKIP_FUSION_PATTERNS,\n"
            "                          skip_optimizations=SKIP_OPTIMIZATIONS,\n"
            f"                          no_shape_infer={options['no_shape_infer']!r},\n"
            f"                          size_threshold={options['size_threshold']!r}"
            + (",\n                          **INTERFACE_OPTIONS" if parts else "")
            + (",\n                          **DTYPE_OPTIONS" if config.get(interface.DTYPE)
               else "")
            + ")\n"
        )
