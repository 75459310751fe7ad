"""Target adapter for onnxruntime's Python transformer fusions: the graph rewrites of
``onnxruntime.transformers.optimizer.optimize_model`` (Attention, SkipLayerNormalization,
EmbedLayerNormalization, Gelu ... of the ``com.microsoft`` domain) run with ``opt_level=0``,
so no onnxruntime session optimizes the graph first: only the Python fusions run.

A configuration is ``{"model_type": "bert"|"gpt2"|"t5"|"clip"|"bart", "passes": [flags] |
None}``. The model type picks the optimizer class (``optimizer.py:MODEL_TYPES``:
``BertOnnxModel``, ``Gpt2OnnxModel``, ``T5OnnxModel``, ``ClipOnnxModel``, ``BartOnnxModel``,
each with its own attention fusion) and the defaults of ``FusionOptions(model_type)``. The
passes are the FusionOptions flags left enabled, spelled as FusionOptions spells them
(``enable_gelu``, ``enable_attention`` ...); every other flag of :data:`.fusions.FUSIONS` is
set False (None: the model type's own defaults). So localization's subsets are sets of
enabled flags, and a bundle names the breaking fusion in onnxruntime's vocabulary ("with
FusionOptions.enable_gelu = False the model runs"). Flags the installed FusionOptions lacks
are dropped with a warning at start-up.

Settings that are not fusion flags stay fixed:

- ``enable_shape_inference`` stays True (FusionOptions' default): it rewrites nothing by
  itself, it lets the shape-dependent fusions (SkipLayerNormalization, EmbedLayerNormalization,
  attention with an additive bias) check shapes; switched off they refuse, so it would only
  hide what they do. Symbolic shape inference needs sympy, which the target checks at
  start-up.
- ``enable_gelu_approximation`` stays False: it turns Gelu into FastGelu, a different
  function (documented behaviour ``gelu-approximation``).
- The attention mask format is the raw mask (``FusionOptions.use_raw_attention_mask()``, the
  CLI's ``--use_raw_attention_mask``) for every model type: bert's default (mask index, the
  count of ones per row) is exact only for right-padded masks ("It requires right-side
  padding!", fusion_options.py) and vit's default (no mask) drops a mask the graph applies;
  both change results by design on the masks a fuzzer feeds. With the raw mask vit would be
  bert again, so it is not offered; phi is left out because ``PhiOnnxModel`` rewrites the
  interface of one exported model (Phi-2) rather than fusing patterns.
- ``num_heads`` and ``hidden_size`` are 0 (detected from the graph where the fusion can);
  gpt2's attention fusions take the head count from the argument only, so they cannot make
  a working Attention node here.

``optimize`` runs ``optimize_model`` on a copy of the model (it rewrites its input in place)
and returns the model ``OnnxModel.save_model_to_file`` writes: the ``.model`` ModelProto plus
the ``com.microsoft`` opset import the save adds for the fused nodes. What the optimizer
prints and logs is swallowed. The pipeline then validates the result, loads it at
``ORT_DISABLE_ALL`` and compares its outputs with the original's at ``ORT_DISABLE_ALL``.

Documented behaviour (:data:`DOCUMENTED`, counted, never bundled): node growth, graph inputs
that ``prune_graph`` drops once nothing reads them, the normalizations onnxruntime keeps in
the ONNX domain (which onnx's checker rejects), fused ops with GPU kernels only, and the
GELU approximation (kept off here, listed for the record).
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import random
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from fuzzer.targets.base import DocumentedBehaviour, Target
from fuzzer.targets.onnxruntime.target import own_onnx_domain_op
from fuzzer.targets.onnxruntime_transformers.fusions import FUSIONS, NOT_ON_CPU
from oracles import shows

#: model types offered, with their weight in a campaign's draw.
MODEL_TYPES: dict[str, int] = {"bert": 3, "gpt2": 1, "t5": 1, "clip": 1, "bart": 1}
DEFAULT_MODEL_TYPE = "bert"
#: ops whose only kernels are on GPU execution providers (onnxruntime/contrib_ops/rocm and
#: contrib_ops/cuda): a model with them cannot load on the CPU execution provider.
GPU_ONLY_OPS = ("GemmFastGelu", "QOrderedMatMul", "QOrderedGelu", "QOrderedLayerNormalization",
                "QOrderedAttention", "RelativePositionBias")


#: model types whose optimizer class replaces BERT's FusionAttention by its own attention
#: fusion (``Gpt2OnnxModel``, ``T5OnnxModel``, ``BartOnnxModel``, ``ClipOnnxModel``).
OWN_ATTENTION = frozenset({"gpt2", "t5", "bart", "clip"})
#: the motif hint of the steps ``optimize_model`` runs whatever the flags (Identity and
#: useless Cast removal, Transpose constant folding, the Shape fusion, useless Reshapes).
ALWAYS_HINT = "optimize_model"


def model_hint(model_type: str, flag: str) -> str:
    """The motif hint of ``flag`` under ``model_type`` (``"gpt2:enable_attention"``): the
    name a motif of that model class's own form lists in ``Motif.passes``."""
    return f"{model_type}:{flag}"


def _passes(config: dict[str, Any]) -> list[str]:
    return list(config.get("passes") or ())


def _speed_not_size(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "bloat")


def _gelu_approximation(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "output-mismatch") and \
        "enable_gelu_approximation" in _passes(config)


def _inputs_pruned(finding: Any, config: dict[str, Any]) -> bool:
    """Graph inputs only removed: what is left is the original's inputs in their order."""
    if not shows(finding, "metadata-change") or finding.message != "graph inputs changed":
        return False
    before = [tuple(v) for v in finding.detail.get("before", ())]
    after = iter(tuple(v) for v in finding.detail.get("after", ()))
    remaining = next(after, None)
    for value in before:
        if value == remaining:
            remaining = next(after, None)
    return remaining is None


def _heads_not_given(finding: Any, config: dict[str, Any]) -> bool:
    """For a model type whose fusions do not detect the head count (every type but bert's
    own FusionAttention): a fused Attention without one that does not load, or a fusion
    that asserts it was given (``assert self.num_heads > 0``)."""
    if config.get("model_type", DEFAULT_MODEL_TYPE) == "bert":
        return False
    if shows(finding, "load-failure"):
        return "num_heads > 0 was false" in finding.message
    return shows(finding, "optimizer-error") and \
        "assert self.num_heads > 0" in str(finding.detail.get("traceback", ""))


def _gpu_only_op(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "load-failure") and \
        any(f"{op}(" in finding.message for op in GPU_ONLY_OPS)


#: what onnxruntime documents about its transformer optimizer.
DOCUMENTED = (
    DocumentedBehaviour(
        "optimizes-for-speed-not-size",
        "onnxruntime/transformers/optimizer.py: its header comment ('to optimize performance "
        "on NVidia GPU and CPU') and its command line ('It transforms ONNX graph to use "
        "optimized operators for Transformer models'); nothing promises fewer nodes (a "
        "raw-mask Attention adds a Cast, EmbedLayerNormalization casts its ids to int32)",
        _speed_not_size),
    DocumentedBehaviour(
        "gelu-approximation",
        "onnxruntime/transformers/fusion_options.py, --enable_gelu_approximation: 'enable "
        "Gelu/BiasGelu to FastGelu conversion' (fusion_gelu_approximation.py), a tanh "
        "approximation of an erf function; off in FusionOptions and never enabled here",
        _gelu_approximation),
    DocumentedBehaviour(
        "unused-graph-inputs-pruned",
        "onnxruntime/transformers/onnx_model.py, OnnxModel.prune_graph(allow_remove_graph_"
        "inputs=True), run by every model class's postprocess: 'There is also an option to "
        "remove graph inputs that are not used to generate any required output'",
        _inputs_pruned),
    DocumentedBehaviour(
        "fused-op-in-onnx-domain",
        "onnxruntime/contrib_ops/cpu/layer_norm.cc registers its LayerNormalization "
        "(versions 1-16, 'original LayerNormalization contrib op (incorrectly using onnx "
        "domain though)') and SimplifiedLayerNormalization in the ONNX domain; "
        "fusion_layernorm.py and fusion_simplified_layernorm.py emit them there, so the "
        "fused model loads in onnxruntime while onnx's checker knows neither op at that "
        "opset",
        own_onnx_domain_op),
    DocumentedBehaviour(
        "fused-op-without-cpu-kernel",
        "onnxruntime/transformers/fusion_gemmfastgelu.py makes GemmFastGelu, whose only "
        "kernel is onnxruntime/contrib_ops/rocm/bert/gemm_fast_gelu.cc; fusion_qordered_*.py "
        "make QOrdered ops, kernels under onnxruntime/contrib_ops/cuda/quantization/ only; "
        "onnx_model_t5.py makes RelativePositionBias, a CUDA kernel only "
        "(onnxruntime docs, ContribOperators.md lists them for those providers)",
        _gpu_only_op),
    DocumentedBehaviour(
        "num-heads-required-beyond-bert",
        "onnxruntime/transformers/optimizer.py, optimize_model's docstring: 'For BERT model, "
        "num_heads and hidden_size are optional. For other model types, you need to specify "
        "these parameters' (and --num_heads: 'For other model type, this parameter need "
        "specify correctly'); the target passes 0, so an Attention the gpt2, t5, bart or clip "
        "fusions make without detecting the head count does not load, and the rotary "
        "attention fusion of the gpt2 class stops at its assertion that it was given",
        _heads_not_given),
)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Swallow what the optimizer prints and logs (it warns on stdout, stderr and through
    ``logging``); logging's previous disable level comes back afterwards."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logging.disable(previous)


class OnnxRuntimeTransformersTarget(Target):
    """onnxruntime's Python transformer fusions (see the module docstring).

    A campaign draws the model type (bert most often) and, for a third of the cases, a
    random subset of the flags; otherwise every flag but those in
    :data:`.fusions.NOT_ON_CPU` (whose fused op cannot run on the CPU execution provider;
    they run only when named with ``--passes``).

    Raises (at construction):
        ImportError: onnxruntime's transformers package or sympy (which its symbolic shape
            inference imports) is not installed.
    """

    name = "onnxruntime-transformers"
    repository = "microsoft/onnxruntime"
    package = "onnxruntime"
    saves_its_own_form = True
    takes_sparse_constants = True
    code_coverage = "python"
    #: the fusions, ``optimize_model`` and the optimizer class of each model type drawn
    coverage_modules = ("onnxruntime.transformers.fusion_*",
                        "onnxruntime.transformers.optimizer",
                        "onnxruntime.transformers.onnx_model",
                        *(f"onnxruntime.transformers.onnx_model_{t}" for t in MODEL_TYPES))

    def __init__(self) -> None:
        import onnxruntime
        import sympy  # noqa: F401 - symbolic shape inference needs it; fail early here
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        self._ort = onnxruntime
        self._options = FusionOptions
        self._optimize_model = optimize_model
        probe = FusionOptions(DEFAULT_MODEL_TYPE)
        missing = [flag for flag in FUSIONS if not hasattr(probe, flag)]
        if missing:
            warnings.warn(f"onnxruntime {onnxruntime.__version__} FusionOptions has no "
                          f"{', '.join(missing)}; left out", stacklevel=2)
        self._flags = [flag for flag in FUSIONS if flag not in missing]

    def version(self) -> str:
        return self._ort.__version__

    def model_types(self) -> list[str]:
        """The model types a configuration may name."""
        return list(MODEL_TYPES)

    def available_passes(self) -> list[str]:
        return list(self._flags)

    def defaults_for(self, model_type: str) -> list[str]:
        """The flags ``FusionOptions(model_type)`` leaves enabled (among the offered ones)."""
        options = self._options(model_type)
        return [flag for flag in self._flags if getattr(options, flag)]

    def default_passes(self) -> list[str]:
        return self.defaults_for(DEFAULT_MODEL_TYPE)

    def default_config(self) -> dict[str, Any]:
        return {"model_type": DEFAULT_MODEL_TYPE, "passes": None}

    def stages(self, config: dict[str, Any]) -> bool:
        """False: the fusions run in ``optimize_model``'s own order whatever the list says, so a
        prefix of the enabled list is no intermediate of the run: not staged."""
        return False

    def unnamed_passes(self, config: dict[str, Any]) -> list[str]:
        return self.defaults_for(config.get("model_type", DEFAULT_MODEL_TYPE))

    def relaxations(self, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {}

    def fusion_options(self, config: dict[str, Any]) -> Any:
        """The FusionOptions of ``config``: the model type's, raw attention mask, every
        offered flag set to whether ``config`` enables it."""
        options = self._options(config.get("model_type", DEFAULT_MODEL_TYPE))
        options.use_raw_attention_mask(True)
        enabled = set(self.passes_of(config))
        for flag in self._flags:
            setattr(options, flag, flag in enabled)
        return options

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """Run ``optimize_model`` at ``opt_level=0`` on a copy of ``model`` and return the
        model its ``save_model_to_file`` writes.

        Raises:
            Exception: whatever the fusions raise.
        """
        import onnx

        options = self.fusion_options(config)
        with _quiet(), tempfile.TemporaryDirectory(prefix="optfuzz-ortt-") as folder:
            fused = self._optimize_model(
                copy.deepcopy(model), model_type=config.get("model_type", DEFAULT_MODEL_TYPE),
                num_heads=0, hidden_size=0, optimization_options=options, opt_level=0)
            path = str(Path(folder) / "optimized.onnx")
            fused.save_model_to_file(path)
            return onnx.load(path)

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        model_type = rng.choices(list(MODEL_TYPES), list(MODEL_TYPES.values()))[0]
        if passes:
            return {"model_type": model_type, "passes": [f for f in self._flags if f in passes]}
        pool = [f for f in self._flags if f not in NOT_ON_CPU]
        if rng.random() < 1 / 3 and len(pool) > 1:
            keep = set(rng.sample(pool, rng.randint(1, len(pool) - 1)))
            return {"model_type": model_type, "passes": [f for f in pool if f in keep]}
        return {"model_type": model_type, "passes": pool}

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        """The enabled flags (the ``onnxruntime_transformers`` motifs name them in
        ``Motif.passes``), then the onnxruntime graph transformers whose motifs build what
        they fuse (:attr:`.fusions.Fusion.motifs`), then each enabled flag qualified by the
        model type (``gpt2:enable_attention``): the motifs of one model class's own forms
        (GPT-2's past state, T5's relative bias, BART's cross attention) name that, so they
        are drawn only where the optimizer class that fuses them runs; last
        :data:`ALWAYS_HINT`, the steps every configuration runs; no name twice. Under a
        model type of :data:`OWN_ATTENTION` ``enable_attention`` is hinted only so
        qualified: its bare name stands for BERT's attention forms, which that class's
        attention fusion does not look for; and the onnxruntime transformers' names are
        left out there (their motifs build the BERT-layout forms of onnxruntime's own
        fusions, which the bert configurations draw), so that the class's own forms take a
        larger share of its draws; for the same reason :data:`ALWAYS_HINT` (steps that do
        not depend on the class either) is given under bert only."""
        enabled = self.passes_of(config)
        model_type = config.get("model_type", DEFAULT_MODEL_TYPE)
        own = model_type in OWN_ATTENTION
        plain = [flag for flag in enabled if not (own and flag == "enable_attention")]
        hints = [*plain, *(m for flag in ([] if own else plain) for m in FUSIONS[flag].motifs),
                 *(model_hint(model_type, flag) for flag in enabled),
                 *([] if own else [ALWAYS_HINT])]
        return list(dict.fromkeys(hints))

    def anchors(self) -> Mapping[str, frozenset[str]]:
        return {flag: FUSIONS[flag].anchors for flag in self._flags}

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        """Not a size optimizer, and the fusions leave what they replace to ``prune_graph``,
        which may drop initializers and unused graph inputs (the latter is documented
        behaviour, judged per finding); outputs, IR version and opset must stay."""
        return {"unused_initializers_are_bloat": False, "interface_may_change": False,
                "cleanup_ran": False}

    def describe(self, name: str) -> str:
        """What flag ``name`` fuses and in which modules of ``onnxruntime/transformers`` (""
        if unknown)."""
        fusion = FUSIONS.get(name, None)
        return f"{fusion.what} ({fusion.source})" if fusion else ""

    def repro_snippet(self, config: dict[str, Any]) -> str:
        model_type = config.get("model_type", DEFAULT_MODEL_TYPE)
        return (
            "import copy\n"
            "import tempfile\n"
            "from onnxruntime.transformers.fusion_options import FusionOptions\n"
            "from onnxruntime.transformers.optimizer import optimize_model\n"
            f"ENABLED = {self.passes_of(config)!r}\n"
            f"options = FusionOptions({model_type!r})\n"
            "options.use_raw_attention_mask(True)\n"
            f"for flag in {self._flags!r}:\n"
            "    setattr(options, flag, flag in ENABLED)\n"
            f"fused = optimize_model(copy.deepcopy(model), model_type={model_type!r}, "
            "num_heads=0, hidden_size=0,\n"
            "                       optimization_options=options, opt_level=0)\n"
            "with tempfile.TemporaryDirectory() as folder:\n"
            "    fused.save_model_to_file(folder + '/optimized.onnx')\n"
            "    optimized = onnx.load(folder + '/optimized.onnx')\n"
        )
