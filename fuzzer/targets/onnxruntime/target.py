"""Target adapter for onnxruntime's graph optimizer (its graph transformers and rewrite rules,
run on every session start), on the CPU execution provider.

A configuration is ``{"level": "basic"|"extended"|"layout"|"all", "passes": [names] | None}``:
the session's graph optimization level and the transformers left enabled at that level
(None: all of them). Every other transformer of the level goes into the session's
``disabled_optimizers``, so localization's pass subsequences are subsets of enabled
transformers, and a bundle names the breaking transformer the way onnxruntime does
("with DivMulFusion disabled the model loads").

``optimize`` builds a session at the level with ``SessionOptions.optimized_model_filepath``
set and returns the model onnxruntime saved: the pipeline then validates it (onnx's checker
skips the contrib domains it does not know), loads it at ``ORT_DISABLE_ALL`` and compares
its outputs with the original's at ``ORT_DISABLE_ALL``: the same execution provider and
settings on both sides, only the graph optimizer differs. A session that fails to build
only when optimizing is an ``optimizer-error`` at the optimize stage.

The transformers per level are read from the installed build at start-up (its verbose log
lists them: :mod:`fuzzer.targets.onnxruntime.check_names`), the rewrite rules per level
from onnxruntime's sources (``transformers.json`` beside this module, which also says what
each name rewrites and where it is defined); rules the installed build does not run are
dropped with a warning.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import warnings
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from fuzzer.targets.base import DocumentedBehaviour, Target
from oracles import shows

DATA = Path(__file__).with_name("transformers.json")
#: optfuzz level name -> onnxruntime GraphOptimizationLevel member.
LEVEL_ENUM = {"basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
              "layout": "ORT_ENABLE_LAYOUT", "all": "ORT_ENABLE_ALL"}
DEFAULT_LEVEL = "all"


def level_enum(config: Mapping[str, Any]) -> str:
    """The onnxruntime GraphOptimizationLevel member name of ``config``'s level."""
    return LEVEL_ENUM[config.get("level", DEFAULT_LEVEL)]


@lru_cache(maxsize=1)
def transformer_data() -> dict[str, Any]:
    """The parsed ``transformers.json`` (rules per level, per-name notes, pattern donors,
    sources).

    Raises:
        OSError, ValueError: the data file is missing or not JSON.
    """
    return json.loads(DATA.read_text())


def _not_a_size_optimizer(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "bloat")


#: ops onnxruntime registers in the ONNX domain itself, outside the ONNX spec's versions.
OWN_ONNX_DOMAIN_OPS = ("LayerNormalization", "SimplifiedLayerNormalization")
_OWN_OP = re.compile(rf"No Op registered for ({'|'.join(OWN_ONNX_DOMAIN_OPS)}) with "
                     r"domain_version")


def own_onnx_domain_op(finding: Any, config: dict[str, Any]) -> bool:
    """Whether ``finding`` is an invalid model only for an op of
    :data:`OWN_ONNX_DOMAIN_OPS` (onnx's checker: "No Op registered ..."); ``config`` is
    not consulted (any level or fusion that emits them)."""
    return shows(finding, "invalid-model") and bool(_OWN_OP.search(finding.message))


#: transformers that replace QuantizeLinear/DequantizeLinear around an op by onnxruntime's
#: integer kernels (QLinearConv, QLinearAdd ...) or quantize weights and biases.
QUANTIZING = ("QDQSelectorActionTransformer", "WeightBiasQuantization")
#: 8-bit integer output types of quantized graphs.
QUANTIZED_TYPES = ("uint8", "int8")


def quantized_rounding(finding: Any, config: dict[str, Any]) -> bool:
    """A wrong 8-bit output off by at most one step, of a configuration that names a
    quantizing transformer among its passes (a whole level names none: localization decides,
    and the check runs again on the minimal pass list)."""
    detail = finding.detail
    return shows(finding, "output-mismatch") and detail.get("kind") == "values" and \
        detail.get("dtype") in QUANTIZED_TYPES and 0 < detail.get("max_abs_error", 2) <= 1 \
        and any(name in QUANTIZING for name in config.get("passes") or ())


#: what onnxruntime documents about its graph optimizer.
DOCUMENTED = (
    DocumentedBehaviour(
        "optimizes-for-speed-not-size",
        "onnxruntime docs, 'Graph Optimizations in ONNX Runtime': the levels' rewrites "
        "(fusions, layout transformations that insert reorder nodes) aim at execution speed "
        "on the execution provider; nothing there promises fewer nodes",
        _not_a_size_optimizer),
    DocumentedBehaviour(
        "fused-op-in-onnx-domain",
        "onnxruntime/contrib_ops/cpu/layer_norm.cc: \"original LayerNormalization contrib op "
        "(incorrectly using onnx domain though)\", registered for opsets 1-16 beside "
        "SimplifiedLayerNormalization; the layer-norm fusions emit them, so the saved model "
        "holds ONNX-domain ops that the ONNX spec lacks at its opset (onnx's checker: "
        "\"No Op registered\") and that onnxruntime itself runs",
        own_onnx_domain_op),
    DocumentedBehaviour(
        "quantized-rounding",
        "onnxruntime/test/optimizer/qdq_transformer_test.cc: the QDQ selector-action tests "
        "accept the fused integer kernels (QLinearConv, QLinearAdd, ...) within a per-sample "
        "tolerance of the QDQ model they replace (TransformerTester(..., 0.01 "
        "/*per_sample_tolerance*/, 0.01 /*relative_per_sample_tolerance*/)): a kernel that "
        "requantizes once rounds where the QDQ form rounds twice, one step of an 8-bit output",
        quantized_rounding),
)


class OnnxRuntimeTarget(Target):
    """onnxruntime's graph transformers on the CPU execution provider (see module docstring).

    The campaign draws the level (``all`` most often) and, for a third of the cases, a
    random subset of the level's transformers to leave enabled, so interactions between
    rewrites get exercised too.
    """

    name = "onnxruntime"
    repository = "microsoft/onnxruntime"
    package = "onnxruntime"
    saves_its_own_form = True
    takes_sparse_constants = True

    def __init__(self) -> None:
        import onnxruntime

        self._ort = onnxruntime
        data = transformer_data()
        self._rules: dict[str, list[str]] = data.get("rules", {})
        self._notes: dict[str, dict[str, Any]] = data.get("transformers", {})
        self._levels = [lv for lv in LEVEL_ENUM
                        if hasattr(onnxruntime.GraphOptimizationLevel, LEVEL_ENUM[lv])]
        self._by_level: dict[str, list[str]] | None = None

    def version(self) -> str:
        return self._ort.__version__

    def levels(self) -> list[str]:
        """The optimization levels this build offers, lowest first."""
        return list(self._levels)

    def by_level(self) -> dict[str, list[str]]:
        """The names each level adds: the transformers the installed build registers
        (:func:`fuzzer.targets.onnxruntime.check_names.registered_transformers`, without
        the rule runners) and the rewrite rules of ``transformers.json`` at that level.
        Rules the installed build does not run are dropped with a warning; the probe runs
        once per process.

        Raises:
            RuntimeError: onnxruntime's transformers cannot be listed.
        """
        if self._by_level is None:
            from fuzzer.targets.onnxruntime.check_names import (
                RULE_RUNNER,
                accepted_names,
                registered_transformers,
            )

            registered = registered_transformers()
            listed = [n for names in self._rules.values() for n in names]
            _, rejected = accepted_names(listed, self._rules)
            if rejected:
                warnings.warn(f"onnxruntime {self.version()} runs no rewrite rule named "
                              f"{', '.join(sorted(set(rejected)))}; left out", stacklevel=2)
            by_level: dict[str, list[str]] = {}
            seen: set[str] = set()
            for level in self._levels:
                names = [n for n in self._rules.get(level, []) if n not in rejected]
                names += [n for n in registered.get(level, []) if not RULE_RUNNER.fullmatch(n)]
                by_level[level] = [n for n in dict.fromkeys(names) if n not in seen]
                seen.update(by_level[level])
            self._by_level = by_level
        return self._by_level

    def names_up_to(self, level: str) -> list[str]:
        """Transformer and rule names that run at ``level`` (lower levels' included).

        Raises:
            KeyError: an unknown level.
        """
        if level not in self._levels:
            raise KeyError(f"unknown level {level!r}; known: {', '.join(self._levels)}")
        by_level = self.by_level()
        return [n for lv in self._levels[: self._levels.index(level) + 1]
                for n in by_level.get(lv, [])]

    def available_passes(self) -> list[str]:
        return self.names_up_to(self._levels[-1])

    def default_passes(self) -> list[str]:
        return self.names_up_to(DEFAULT_LEVEL)

    def default_config(self) -> dict[str, Any]:
        return {"level": DEFAULT_LEVEL, "passes": None}

    def stages(self, config: dict[str, Any]) -> bool:
        """False: onnxruntime applies the enabled transformers in its own order, level by level, so
        a prefix of the enabled list is no intermediate of the run: not staged."""
        return False

    def unnamed_passes(self, config: dict[str, Any]) -> list[str]:
        return self.names_up_to(config.get("level", DEFAULT_LEVEL))

    def relaxations(self, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {}

    def disabled(self, config: dict[str, Any]) -> list[str]:
        """The ``disabled_optimizers`` of ``config``: the level's names not enabled."""
        enabled = set(self.passes_of(config))
        return [n for n in self.names_up_to(config.get("level", DEFAULT_LEVEL))
                if n not in enabled]

    def session_options(self, config: dict[str, Any]) -> Any:
        """SessionOptions of an optimizing session for ``config`` (one thread, quiet)."""
        options = self._ort.SessionOptions()
        options.graph_optimization_level = getattr(
            self._ort.GraphOptimizationLevel, level_enum(config))
        options.log_severity_level = 4
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        return options

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """Build the session for ``config`` and return the model onnxruntime saved.

        Raises:
            Exception: whatever onnxruntime raises while building the optimizing session.
        """
        import onnx

        options = self.session_options(config)
        with tempfile.TemporaryDirectory(prefix="optfuzz-ort-") as folder:
            path = str(Path(folder) / "optimized.onnx")
            options.optimized_model_filepath = path
            self._ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"],
                                       disabled_optimizers=self.disabled(config))
            return onnx.load(path)

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        weights = {"basic": 1, "extended": 1, "layout": 1, "all": 3}
        level = rng.choices(self._levels, [weights.get(lv, 1) for lv in self._levels])[0]
        names = self.names_up_to(level)
        if passes:
            return {"level": level, "passes": [n for n in names if n in passes]}
        if rng.random() < 1 / 3 and len(names) > 1:
            keep = rng.sample(names, rng.randint(1, max(1, len(names) // 2)))
            return {"level": level, "passes": [n for n in names if n in keep]}
        return {"level": level, "passes": None}

    def shared_cause(self, finding: Any) -> str | None:
        """``saved-ir3-initializers`` for the checker's IR <= 3 rule that every initializer
        be a graph input: the model onnxruntime saves keeps the input's IR version 3 but
        stores the initializers its transformers create (folded constants, fused weights)
        without listing them as inputs, so every transformer that creates one shows the
        same invalid model (seen with 1.32 on every such bundle: all had an IR 3 input)."""
        if shows(finding, "invalid-model") and \
                "in initializer but not in graph input" in finding.message:
            return "saved-ir3-initializers"
        return None

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        """The enabled transformers' own names (the onnxruntime motif families name them in
        ``Motif.passes``), then the onnxoptimizer passes whose motifs build what they rewrite
        (``donors`` in ``transformers.json``: pattern donors across tools, as MirrorFuzz,
        arXiv 2510.15690, replays a trigger against analogous passes); no name twice."""
        donors = transformer_data().get("donors", {})
        enabled = self.passes_of(config)
        hints = [*enabled, *(p for name in enabled for p in donors.get(name, ()))]
        return list(dict.fromkeys(hints))

    def anchors(self) -> Mapping[str, frozenset[str]]:
        return {name: frozenset(note["anchors"]) for name, note in self._notes.items()
                if note.get("anchors")}

    def unreachable(self) -> Mapping[str, str]:
        """``not_on_cpu`` of ``transformers.json``: transformers that the CPU execution
        provider, the session options a campaign uses or a standard-ONNX input never let
        change a graph, each with the reason read in onnxruntime's sources."""
        return dict(transformer_data().get("not_on_cpu", {}))

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        return {"unused_initializers_are_bloat": False, "interface_may_change": False,
                "cleanup_ran": False}

    def describe(self, name: str) -> str:
        """What transformer ``name`` rewrites and where onnxruntime defines it ("" if
        unknown)."""
        note = self._notes.get(name, {})
        return f"{note.get('what', '')} ({note.get('source', '')})".strip(" ()")

    def config_phrase(self, config: dict[str, Any]) -> str:
        return f"at {level_enum(config)}"

    def ablation_line(self, config: dict[str, Any], breaking: str, symptom: str) -> str:
        return (f"With `{breaking}` also in `disabled_optimizers` (same level "
                f"{level_enum(config)}, same session options) the model shows no {symptom}.")

    def repro_snippet(self, config: dict[str, Any]) -> str:
        level = level_enum(config)
        return (
            "import tempfile\n"
            "import onnxruntime as ort\n"
            f"LEVEL = ort.GraphOptimizationLevel.{level}\n"
            f"ENABLED = {self.passes_of(config)!r}\n"
            f"DISABLED = {self.disabled(config)!r}  # disabled_optimizers\n"
            "with tempfile.TemporaryDirectory() as folder:\n"
            "    options = ort.SessionOptions()\n"
            "    options.graph_optimization_level = LEVEL\n"
            "    options.optimized_model_filepath = folder + '/optimized.onnx'\n"
            "    ort.InferenceSession(model.SerializeToString(), options,\n"
            "                         providers=['CPUExecutionProvider'],\n"
            "                         disabled_optimizers=DISABLED)\n"
            "    optimized = onnx.load(folder + '/optimized.onnx')\n"
        )
